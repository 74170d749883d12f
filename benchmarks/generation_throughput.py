"""Generation throughput: plain ``model.generate`` vs corecode's TransformersGenerator, side by side in one process.

The model is the anchor's random-init 0.39B Qwen2 body (hidden 896, 24 layers, 14 heads, 2 KV heads, 32k vocab,
bf16) and prompts are the anchor's (/work/shared/anchors/hf_generate.py): B prompts, 256 new tokens each, sampling at
temperature 1 (top-p off unless ``--top-p``), EOS suppressed so every row makes exactly 256 tokens. Each measurement
is one warm-up call (compiles on the static path) and then the best of ``--repeats`` timed calls; tokens/s counts
generated tokens only.

    python benchmarks/generation_throughput.py                      # GPU: B=64, plain vs static vs continuous
    python benchmarks/generation_throughput.py --batch-sizes 64 256
    python benchmarks/generation_throughput.py --tiny               # CPU smoke run (tiny model, few tokens)
    python benchmarks/generation_throughput.py --model data/checkpoints/base --batch-sizes 64 --new-tokens 128
                                                                    # any checkpoint instead of the anchor body

Each figure is also given as a fraction of the memory-bandwidth bound of decoding: every decode step reads the weights
once (the LM head included, the input embedding's B rows not) and each row's KV cache (at its mean length over the
run, prompt + new_tokens / 2), so B rows can make at most B x bandwidth / bytes-per-step tokens a second. The card's
bandwidth is its datasheet figure (H100 SXM 3.35 TB/s, H200 4.8 TB/s; --bandwidth-gbs for another card).

Prints one line per measurement and a JSON summary last (also written to --json-out when given).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_CANDIDATES = [ROOT / "shared/anchors/tok32k.json", Path("/work/shared/anchors/tok32k.json")]
ANCHOR_SHAPE = dict(
    vocab_size=32768,
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    max_position_embeddings=4096,
)
TINY_SHAPE = dict(
    vocab_size=32768,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
)


def load_tokenizer(path: str | None) -> PreTrainedTokenizerFast:
    """The anchor's 32k byte-level BPE (same special tokens as the anchor script)."""
    candidates = [Path(path)] if path else TOKENIZER_CANDIDATES
    for p in candidates:
        if p.is_file():
            tok = PreTrainedTokenizerFast(
                tokenizer_file=str(p), unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
            )
            tok.padding_side = "left"
            return tok
    raise FileNotFoundError(f"anchor tokenizer not found in {[str(p) for p in candidates]}; pass --tokenizer")


def build_model(tok, tiny: bool, device: torch.device) -> Qwen2ForCausalLM:
    cfg = Qwen2Config(
        **(TINY_SHAPE if tiny else ANCHOR_SHAPE),
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    return Qwen2ForCausalLM(cfg).to(dtype).to(device).eval()


def prompts_for(batch: int) -> list[str]:
    doc = '    """Return the sum of the even numbers in nums."""\n'
    return [f"def solve_{i}(nums):\n{doc}" for i in range(batch)]


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_plain(model, tok, batch: int, new_tokens: int, repeats: int, top_p: float = 1.0) -> float:
    """The anchor's call: dynamic cache, no compile. Returns generated tokens/s."""
    enc = tok(prompts_for(batch), return_tensors="pt", padding=True).to(model.device)
    kw = dict(
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=True,
        temperature=1.0,
        top_p=top_p,
        pad_token_id=tok.pad_token_id,
    )
    best = float("inf")
    with torch.no_grad():
        model.generate(**enc, **kw)
        for _ in range(repeats):
            _sync(model.device)
            t = time.perf_counter()
            out = model.generate(**enc, **kw)
            _sync(model.device)
            best = min(best, time.perf_counter() - t)
    produced = (out.shape[1] - enc["input_ids"].shape[1]) * batch
    return produced / best


def time_corecode(model, tok, batch: int, new_tokens: int, repeats: int, mode: str, top_p: float = 1.0) -> float:
    """corecode's backend end to end (tokenize, generate, decode). Returns generated tokens/s."""
    if model.device.type == "cuda":
        torch._dynamo.reset()  # each measurement compiles afresh (no dynamic-shape graphs left over from another B)
    grouped = mode != "static-nogroup"  # static with transformers' sdpa attention (KV repeated per query head)
    gen = TransformersGenerator(model, tok, max_batch_size=batch, fast_path=mode.split("-")[0], use_chat_template=False)
    gen.grouped_decode_attention = grouped
    sp = SamplingParams(n=1, max_new_tokens=new_tokens, temperature=1.0, top_p=top_p, ignore_eos=True, seed=0)
    prompts = prompts_for(batch)
    gen.generate(prompts, sp)  # warm-up: compiles the decode step on the static path
    best, produced = float("inf"), 0
    for _ in range(repeats):
        _sync(model.device)
        t = time.perf_counter()
        out = gen.generate(prompts, sp)
        _sync(model.device)
        best = min(best, time.perf_counter() - t)
        produced = sum(c.num_tokens for cs in out for c in cs)
    return produced / best


DATASHEET_BANDWIDTH_GBS = {"H100": 3350, "H200": 4800}


def decode_bound_tokens_per_s(model, batch: int, prompt_len: float, new_tokens: int, bandwidth_gbs: float) -> float:
    """Tokens/s if every decode step only had to read the weights and the KV cache at the card's bandwidth."""
    cfg = model.config
    params = {id(w): w for w in model.parameters()}.values()
    weight_bytes = sum(w.numel() * w.element_size() for w in params)
    embed = model.get_input_embeddings().weight
    if not cfg.tie_word_embeddings:  # the input table is gathered (B rows), not read whole
        weight_bytes -= embed.numel() * embed.element_size()
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_per_token = cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * embed.element_size()
    step_bytes = weight_bytes + batch * kv_per_token * (prompt_len + new_tokens / 2)
    return batch * bandwidth_gbs * 1e9 / step_bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="CPU smoke run: tiny model, B=4, 16 new tokens.")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=None)
    ap.add_argument("--new-tokens", type=int, default=None)
    ap.add_argument(
        "--modes",
        nargs="+",
        default=["static", "continuous"],
        help="corecode fast_path modes to measure (static, static-nogroup, continuous, off).",
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling for every path (default: off)")
    ap.add_argument("--tokenizer", default=None, help="Path to tok32k.json (default: shared/anchors/).")
    ap.add_argument("--model", default=None, help="Measure this checkpoint (save_pretrained dir) instead.")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--bandwidth-gbs", type=float, default=None, help="card's memory bandwidth (default: datasheet)")
    args = ap.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch_sizes = args.batch_sizes or ([4] if args.tiny else [64])
    new_tokens = args.new_tokens or (16 if args.tiny else 256)
    if args.model:
        from corecode.models.factory import load_model
        from corecode.models.factory import load_tokenizer as load_checkpoint_tokenizer

        tok, model = load_checkpoint_tokenizer(args.model), load_model(args.model, device=str(device)).eval()
    else:
        tok = load_tokenizer(args.tokenizer)
        model = build_model(tok, args.tiny, device)
    res: dict = {
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "model": args.model or ("tiny" if args.tiny else "anchor 0.39B Qwen2 body"),
        "params_M": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
        "new_tokens": new_tokens,
        "top_p": args.top_p,
        "torch": torch.__version__,
    }
    bandwidth = args.bandwidth_gbs or next((v for k, v in DATASHEET_BANDWIDTH_GBS.items() if k in res["device"]), None)
    res["bandwidth_GBs"] = bandwidth

    def bound_fraction(key: str, tps: float, batch: int) -> str:
        if not bandwidth:
            return ""
        prompt_len = sum(len(ids) for ids in tok(prompts_for(batch))["input_ids"]) / batch
        frac = tps / decode_bound_tokens_per_s(model, batch, prompt_len, new_tokens, bandwidth)
        res[f"{key}_bw_bound_frac"] = round(frac, 3)
        return f" ({frac:.0%} of the bandwidth bound)"

    for batch in batch_sizes:
        plain = time_plain(model, tok, batch, new_tokens, args.repeats, args.top_p)
        res[f"plain_generate_B{batch}_tok_per_s"] = round(plain)
        print(f"B={batch} plain generate: {plain:,.0f} tok/s{bound_fraction(f'plain_generate_B{batch}', plain, batch)}")
        for mode in args.modes:
            key = f"corecode_{mode}_B{batch}"
            try:
                tps = time_corecode(model, tok, batch, new_tokens, args.repeats, mode, args.top_p)
            except Exception as e:  # one failing mode must not hide the others' numbers
                res[key] = f"error: {type(e).__name__}: {str(e)[:300]}"
                print(f"B={batch} corecode {mode}: {res[key]}", flush=True)
                continue
            res[f"{key}_tok_per_s"] = round(tps)
            res[f"{key}_vs_plain"] = round(tps / plain, 2)
            bound = bound_fraction(key, tps, batch)
            print(f"B={batch} corecode {mode}: {tps:,.0f} tok/s = {tps / plain:.2f}x plain{bound}", flush=True)
    print(json.dumps(res, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
