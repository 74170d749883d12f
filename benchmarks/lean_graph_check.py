"""The lean decode loop on a GPU, eager against CUDA-graphed, side by side in one command: prints both, their ratio
and OK, or fails.

``LeanDecoder`` on a GPU records its fixed-shape step as a CUDA graph (corecode/generation/lean_decode.py); the 1.5B
rollouts of ``grpo.team.lean_decode`` take that path. The model is Qwen2.5-Coder's layout at ``--shape`` with random
bf16 weights built on the GPU (``--lora``: wrapped in the qwen2.5-coder profiles' LoRA, r 16 on every projection,
its B matrices made non-zero so the adapters matter); no tokenizer or checkpoint is needed.

    python benchmarks/lean_graph_check.py                 # 1.5B shape, 16 rows, 64 prompt + 64 new tokens
    python benchmarks/lean_graph_check.py --lora --rows 64
    python benchmarks/lean_graph_check.py --lora --device cuda:1   # a model on the second GPU (the roles split)

Checks: (1) teacher-forced, the graphed step's logits equal the eager step's for ``--new-tokens`` steps (bf16:
largest difference at most 2% of the largest logit); (2) both loops decode ``--new-tokens`` tokens a row, EOS blocked
(the timing runs' fixed length), twice each; the second run is timed. Prints a JSON line with tokens/s of each, the
ratio, and the bound a step of this shape has from reading its weights and KV cache at the card's bandwidth, and where
a graphed run's time goes (``phases_ms``: the prefill, recording the graph, one replay, one token's sampling, one
look at the finished flags; each synchronised on its own, so their sum may exceed a run's per-token time).

With ``--device`` other than the current GPU, a graph is first recorded on the current one, as the Planner's decode
does before the Coder's when the roles sit on two GPUs in one process (``grpo.team.planner_device`` /
``coder_device``): torch's default capture stream is then on the other GPU, and check (1) shows whether the model's
own graph still records its step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corecode.generation.lean_decode import LeanDecoder, _GraphedStep  # noqa: E402
from corecode.models.testing import QWEN25_CODER_SHAPES  # noqa: E402

QWEN_EOS = {151643, 151645}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build(shape: str, lora: bool, device: torch.device):
    cfg = Qwen2Config(**QWEN25_CODER_SHAPES[shape], max_position_embeddings=4096, attn_implementation="sdpa")
    torch.manual_seed(0)
    with device:
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=LORA_TARGETS))
        for name, weight in model.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(weight, std=0.02)
    return model.eval()


def teacher_forced_gap(model, ids, mask, steps: int) -> float:
    """Largest |graphed - eager| logit over ``steps`` teacher-forced steps, relative to the largest eager logit."""
    dec = LeanDecoder(model, graphs=False)
    eager = dec.prefill(ids, mask, steps)
    graphed = dec.prefill(ids, mask, steps)
    graph = _GraphedStep(dec, graphed[1], graphed[2], graphed[3])
    tok = eager[0].argmax(-1)
    worst = 0.0
    for t in range(steps - 1):
        slot = ids.shape[1] + t
        eager[3][:, slot] = True
        graphed[3][:, slot] = True
        a = dec.step(tok, eager[4] + t, slot, eager[1], eager[2], eager[3])
        b = graph(tok, graphed[4] + t, slot)
        worst = max(worst, float((a - b).abs().max() / a.abs().max()))
        tok = a.argmax(-1)
    return worst


def _ms(fn, repeats: int = 1) -> float:
    """Milliseconds of one call of ``fn`` (mean of ``repeats``), the GPUs synchronised before and after."""
    _sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    _sync()
    return 1000 * (time.perf_counter() - start) / repeats


def graphed_phases(model, ids, mask, new: int, top_p: float) -> dict[str, float]:
    """Milliseconds of each part of a graphed run, measured apart (a second decoder's buffers, as ``run`` makes)."""
    from corecode.generation.hf import pick_tokens

    dec = LeanDecoder(model, graphs=True)
    dec.prefill(ids, mask, new)  # warm
    out: dict[str, float] = {}
    parts: list = []
    out["prefill"] = _ms(lambda: parts.append(dec.prefill(ids, mask, new)))
    logits, keys, values, keep, positions = parts[-1]
    graph = _GraphedStep(dec, keys, values, keep)
    tok = logits.argmax(-1)
    slot = ids.shape[1]
    keep[:, slot] = True
    out["record_graph"] = _ms(lambda: graph(tok, positions, slot))
    out["replay"] = _ms(lambda: graph(tok, positions, slot), repeats=20)
    is_eos = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
    is_eos[list(QWEN_EOS)] = True
    step_logits = graph(tok, positions, slot)
    out["sample"] = _ms(lambda: pick_tokens(step_logits, 1.0, top_p, is_eos, True, None, eager=True), repeats=20)
    finished = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    out["finished_check"] = _ms(lambda: bool(finished.all()), repeats=20)
    return {k: round(v, 3) for k, v in out.items()}


def _sync() -> None:
    for i in range(torch.cuda.device_count()):
        torch.cuda.synchronize(i)


def record_on_current_device() -> None:
    """One small graph recorded on the current GPU with torch's default capture stream (see the module doc)."""
    x = torch.zeros(1, device=torch.device("cuda", torch.cuda.current_device()))
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        x.add_(1)


def timed(model, graphs: bool, ids, mask, new: int, top_p: float) -> tuple[float, torch.Tensor]:
    dec = LeanDecoder(model, graphs=graphs)
    for _ in range(2):  # the second run is timed (the first warms the allocator and cuBLAS)
        _sync()
        start = time.perf_counter()
        out = dec.run(ids, mask, new, 0, QWEN_EOS, 1.0, top_p, block_eos=True)
        _sync()
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1.5b", choices=sorted(QWEN25_CODER_SHAPES))
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--device", default="cuda", help="the model's GPU (default: the current one), e.g. cuda:1")
    ap.add_argument("--bandwidth-gbs", type=float, default=None, help="card bandwidth (default: H100 3350, H200 4800)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error: lean_graph_check.py needs a CUDA GPU (CUDA graphs)")
    device = torch.device(a.device)
    if device.index is not None and device.index >= torch.cuda.device_count():
        sys.exit(f"error: --device {a.device}: {torch.cuda.device_count()} GPU(s) visible")
    if device.index not in (None, torch.cuda.current_device()):
        record_on_current_device()
    model = build(a.shape, a.lora, device)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (a.rows, a.prompt_tokens), device=device)
    mask = torch.ones_like(ids)
    mask[::2, : a.prompt_tokens // 4] = 0
    with torch.no_grad():
        gap = teacher_forced_gap(model, ids, mask, a.new_tokens)
        eager_s, eager_out = timed(model, False, ids, mask, a.new_tokens, a.top_p)
        graph_s, graph_out = timed(model, True, ids, mask, a.new_tokens, a.top_p)
        phases = graphed_phases(model, ids, mask, a.new_tokens, a.top_p)
    tokens = a.rows * a.new_tokens
    name = torch.cuda.get_device_name(device)
    bandwidth = a.bandwidth_gbs or (4800.0 if "H200" in name else 3350.0)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 2  # K and V, bf16
    kv = a.rows * (a.prompt_tokens + a.new_tokens) * kv_per_token  # the graphed step reads the whole buffer
    bound_step_s = (weights + kv) / (bandwidth * 1e9)
    summary = {
        "device": name,
        "device_index": str(device),
        "torch": torch.__version__,
        "shape": a.shape,
        "lora": a.lora,
        "rows": a.rows,
        "new_tokens": a.new_tokens,
        "eager_tok_per_s": round(tokens / eager_s),
        "graphed_tok_per_s": round(tokens / graph_s),
        "graphed_vs_eager": round(eager_s / graph_s, 2),
        "graphed_step_ms": round(1000 * graph_s / a.new_tokens, 2),
        "bandwidth_bound_step_ms": round(1000 * bound_step_s, 3),
        "fraction_of_bound": round(bound_step_s / (graph_s / a.new_tokens), 3),
        "teacher_forced_logit_gap": round(gap, 5),
        "phases_ms": phases,
    }
    print(json.dumps(summary))
    for out in (eager_out, graph_out):
        if out.shape != (a.rows, a.new_tokens) or int(out.min()) < 0 or int(out.max()) >= vocab:
            sys.exit(f"error: decoded ids of shape {tuple(out.shape)} in [{int(out.min())}, {int(out.max())}]")
    if gap > 0.02:
        sys.exit(f"error: graphed step logits differ from the eager step's by {gap:.3%} of the largest logit")
    print("OK")


if __name__ == "__main__":
    main()
