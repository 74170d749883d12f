"""CPU continuous batching (``generation.fast_path: continuous``): transformers' paged cache sized from free memory
against the cache corecode sizes to the call (``TransformersGenerator._paged_cache_for``), side by side.

Each sizing runs in its own child process, so each has its own peak resident memory (``ru_maxrss``). A child loads
the checkpoint, makes one warm-up call and then ``--repeats`` timed calls of the same greedy prompts, and keeps the
best; the two children run one after the other. The ratio is memory-sized / call-sized (above 1: the call-sized
cache is faster or smaller). Both must return the same text: the cache's size must not change what is generated.

    python benchmarks/continuous_cache.py                                  # a tiny trained checkpoint, 2 and 32 rows
    python benchmarks/continuous_cache.py --model data/checkpoints/sft_coder --rows 32 --new-tokens 64
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]


def one(model: str, rows: int, new_tokens: int, repeats: int, sizing: str) -> dict:
    """One child's measurement: best seconds per call, peak RSS in MiB, and the texts of the last call."""
    import torch

    from corecode.generation.base import SamplingParams
    from corecode.generation.hf import TransformersGenerator

    torch.set_num_threads(1)
    if sizing == "memory":  # transformers' own sizing: no continuous_batching_config
        TransformersGenerator._paged_cache_for = lambda self, ids, max_new: {}
    gen = TransformersGenerator(model, fast_path="continuous")
    prompts = [("def f(x):\n", "def g(y):\n")[i % 2] for i in range(rows)]
    params = SamplingParams(max_new_tokens=new_tokens, temperature=0)
    gen.generate(prompts, params)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        out = gen.generate(prompts, params)
        best = min(best, time.perf_counter() - t)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": best, "peak_rss_mib": peak_mib, "texts": [c.text for cs in out for c in cs]}


def run_child(args: argparse.Namespace, model: str, rows: int, sizing: str) -> dict:
    cmd = [sys.executable, __file__, "--child", sizing, "--model", model, "--rows", str(rows)]
    cmd += ["--new-tokens", str(args.new_tokens), "--repeats", str(args.repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the {sizing}-sized child failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a save_pretrained directory (default: a tiny trained checkpoint)")
    ap.add_argument("--rows", type=int, nargs="+", default=[2, 32])
    ap.add_argument("--new-tokens", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--child", choices=["memory", "call"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.model, args.rows[0], args.new_tokens, args.repeats, args.child)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from corecode.models.testing import make_tiny_checkpoint

            model = str(make_tiny_checkpoint(Path(tmp) / "tiny", TEXTS, train_steps=60))
        print("| rows | memory-sized: s, peak RSS | call-sized: s, peak RSS | time ratio | RSS ratio | same text |")
        print("|---:|---:|---:|---:|---:|:---:|")
        for rows in args.rows:
            mem, call = (run_child(args, model, rows, s) for s in ("memory", "call"))
            print(
                f"| {rows} | {mem['seconds']:.2f} s, {mem['peak_rss_mib']:.0f} MiB "
                f"| {call['seconds']:.2f} s, {call['peak_rss_mib']:.0f} MiB "
                f"| {mem['seconds'] / call['seconds']:.1f}x | {mem['peak_rss_mib'] / call['peak_rss_mib']:.1f}x "
                f"| {'yes' if mem['texts'] == call['texts'] else 'NO'} |"
            )


if __name__ == "__main__":
    main()
