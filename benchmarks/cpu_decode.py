"""CPU decoding: plain ``model.generate`` vs corecode's ``LeanDecoder`` (``generation.fast_path: lean``, the CPU
default), side by side in one process, on a trained checkpoint and real prompts.

Both paths sample the same distribution (``hf.pick_tokens``) from the same model; the lean one skips ``generate``'s
per-token Python machinery and drops finished rows. Each measurement alternates the two paths ``--repeats`` times
after one warm-up call each and keeps the best time of each; the ratio is generate / lean (above 1: lean is faster).
``--ignore-eos`` makes every row run to ``--new-tokens`` (no finished rows to drop: the pure per-token cost).

    python benchmarks/cpu_decode.py            # data/checkpoints/sft_coder (after make run), B=32 and 64
    python benchmarks/cpu_decode.py --model data/checkpoints/sft_planner --batch-sizes 16 --new-tokens 96
    python benchmarks/cpu_decode.py --ignore-eos
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator


def timed(gen: TransformersGenerator, prompts: list[str], sp: SamplingParams) -> tuple[float, int]:
    t = time.perf_counter()
    out = gen.generate(prompts, sp)
    return time.perf_counter() - t, sum(c.num_tokens for cs in out for c in cs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="data/checkpoints/sft_coder")
    ap.add_argument("--problems", default="data/processed/composite_val.jsonl")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--ignore-eos", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = [json.loads(line) for line in open(args.problems)]
    paths = {
        mode: TransformersGenerator(args.model, fast_path=mode, max_batch_size=max(args.batch_sizes))
        for mode in ("off", "lean")
    }
    assert paths["lean"].mode == "lean", "this checkpoint is not Llama/Qwen2-shaped: the lean path does not apply"
    summary = []
    for batch in args.batch_sizes:
        prompts = [r["prompt"] for r in rows[:batch]]
        sp = SamplingParams(max_new_tokens=args.new_tokens, temperature=args.temperature, ignore_eos=args.ignore_eos)
        best: dict[str, tuple[float, int]] = {}
        for mode in paths:  # warm-up
            timed(paths[mode], prompts[:2], sp)
        for _ in range(args.repeats):
            for mode, gen in paths.items():
                torch.manual_seed(0)
                t, n = timed(gen, prompts, sp)
                if mode not in best or t < best[mode][0]:
                    best[mode] = (t, n)
        ratio = best["off"][0] / best["lean"][0]
        for mode, (t, n) in best.items():
            print(f"B={batch:3d} {mode:4s} {t:6.3f} s  {n:6d} tokens  {n / t:7.0f} tokens/s")
        print(f"B={batch:3d} generate / lean time ratio: {ratio:.2f}")
        summary.append(
            {
                "batch": batch,
                "generate_s": best["off"][0],
                "lean_s": best["lean"][0],
                "ratio": ratio,
                "threads": torch.get_num_threads(),
                "ignore_eos": args.ignore_eos,
            }
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
