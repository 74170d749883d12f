"""The static decode path on a GPU at Qwen2.5's vocabulary: prints OK, or fails.

The condition that once broke ``generation.fast_path: static`` for the Qwen2.5-Coder profiles: corecode's
``_StaticDecoder`` with its decode step compiled (``torch.compile(mode="reduce-overhead")``, CUDA graphs), 128 rows,
vocabulary 151,936, temperature 1, top_p 0.95. The model is Qwen2.5-Coder-1.5B's layout (heads, hidden size, tied
head) cut to ``--layers`` layers, random bf16 weights built on the GPU; no tokenizer or checkpoint is needed.

    python benchmarks/static_decode_check.py                # about a minute on an H100 (two compiles)
    python benchmarks/static_decode_check.py --layers 28    # the whole 1.5B shape

Two checks: (1) the sampling function of the compiled step (``hf.pick_tokens``), compiled by Inductor on [rows,
vocab] logits and drawing its uniforms from the eager generator (``fallback_random``), picks inside the eager nucleus
and (but for near-ties) the eager tokens; (2) the compiled decoder runs ``--new-tokens`` steps twice (compile, then
timed) and produces in-vocabulary tokens. Prints a JSON line (device, torch, decode tokens/s of the second run, the
picker's counts) and OK.
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
from corecode.generation.hf import _round_up, _StaticDecoder, _top_p_filter, pick_tokens  # noqa: E402
from corecode.models.testing import QWEN25_CODER_SHAPES  # noqa: E402

QWEN_EOS = {151643, 151645}  # <|endoftext|>, <|im_end|>


def check_picker(rows: int, vocab: int, temperature: float, top_p: float) -> dict:
    """Compiled vs eager ``pick_tokens`` on the same logits and uniforms, three seeds, sharp and flat rows: picks
    outside the eager nucleus (must be 0) and picks that differ from the eager ones (Inductor computes the Gumbel
    noise's logs with its own kernels, so a near-tie may fall the other way; a different rule or stream would change
    most picks of the flat rows)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    scale = torch.tensor([0.05, 1.0, 4.0, 12.0], device="cuda").repeat(-(-rows // 4))[:rows, None]
    logits = torch.randn(rows, vocab, device="cuda", generator=gen) * scale
    is_eos = torch.zeros(vocab, dtype=torch.bool, device="cuda")
    is_eos[[i for i in QWEN_EOS if i < vocab]] = True
    nucleus = ~_top_p_filter(logits / temperature, top_p).isinf()
    outside = differ = 0
    with torch._inductor.config.patch(fallback_random=True):
        compiled = torch.compile(pick_tokens)
        for seed in range(3):
            torch.manual_seed(seed)
            eager = pick_tokens(logits, temperature, top_p, is_eos, False)
            torch.manual_seed(seed)
            picked = compiled(logits, temperature, top_p, is_eos, False)
            outside += int((~nucleus.gather(1, picked[:, None])).sum())
            differ += int((picked != eager).sum())
    return {"picks": 3 * rows, "outside_nucleus": outside, "differ_from_eager": differ}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1.5b", choices=sorted(QWEN25_CODER_SHAPES))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rows", type=int, default=128)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-p", type=float, default=0.95)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error: static_decode_check.py needs a CUDA GPU (the static path compiles with CUDA graphs there)")

    shape = QWEN25_CODER_SHAPES[a.shape] | {"num_hidden_layers": a.layers}
    cfg = Qwen2Config(**shape, max_position_embeddings=4096, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    vocab = cfg.vocab_size

    picker = check_picker(a.rows, vocab, a.temperature, a.top_p)
    if picker["outside_nucleus"] or picker["differ_from_eager"] > picker["picks"] // 100:
        sys.exit(f"error: the compiled picker does not sample the eager nucleus: {picker}")

    decoder = _StaticDecoder(model, compile=True)
    ids = torch.randint(0, vocab, (a.rows, a.prompt_tokens), device="cuda")
    mask = torch.ones_like(ids)
    mask[::2, : a.prompt_tokens // 4] = 0  # left padding on every other row
    cache_len = _round_up(a.prompt_tokens + a.new_tokens, 64)
    times = []
    for _ in range(2):  # the first run compiles and records the CUDA graphs
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.no_grad():
            out = decoder.run(
                ids, mask, a.rows, a.new_tokens, cache_len, 0, QWEN_EOS, a.temperature, a.top_p, True, lambda *_: False
            )
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if out.shape != (a.rows, a.new_tokens) or int(out.min()) < 0 or int(out.max()) >= vocab:
        sys.exit(f"error: decoded ids of shape {tuple(out.shape)} in [{int(out.min())}, {int(out.max())}]")
    summary = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "layers": a.layers,
        "rows": a.rows,
        "vocab": vocab,
        "top_p": a.top_p,
        "first_run_s": round(times[0], 1),
        "decode_tok_per_s": round(a.rows * a.new_tokens / times[1]),
        "distinct_tokens": len(set(out.flatten().tolist())),
        "picker": picker,
    }
    print(json.dumps(summary))
    print("OK")


if __name__ == "__main__":
    main()
