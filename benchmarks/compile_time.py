"""Compile time and step time of a training forward/backward: eager, each decoder layer compiled (what
``grpo.team.compile_model`` does, ``corecode.models.factory.compile_decoder_layers``) and the whole model's forward
compiled, side by side in one command; prints a table and the ratios.

Each mode runs in its own process with its own empty Inductor and Triton caches, so the first step's time is a cold
compile. A step is one forward and backward of ``--rows`` random sequences (a loss over the logits); the lengths cycle
through ``--lengths``, so the first steps also meet new sizes (the compile is dynamic). On a GPU the step runs under
bf16 autocast over fp32 weights, as team GRPO's full fine-tuning does.

    python benchmarks/compile_time.py                         # CPU: a 28-layer, 128-wide Qwen2
    python benchmarks/compile_time.py --shape 1.5b --device cuda --rows 16 --modes eager layers
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODES = ("eager", "layers", "whole")
NARROW = dict(
    hidden_size=128, intermediate_size=256, num_hidden_layers=28, num_attention_heads=4, num_key_value_heads=2
)


def run_mode(args: argparse.Namespace) -> dict:
    """One mode in this process: the seconds of every step."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from corecode.models.factory import compile_decoder_layers
    from corecode.models.testing import QWEN25_CODER_SHAPES

    torch.manual_seed(0)
    shape = NARROW | {"vocab_size": 1024} if args.shape == "narrow" else QWEN25_CODER_SHAPES[args.shape]
    cfg = Qwen2Config(**shape, max_position_embeddings=4096, attn_implementation="sdpa")
    model = Qwen2ForCausalLM(cfg).to(args.device).train()
    if args.mode == "layers":
        compile_decoder_layers(model)
    elif args.mode == "whole":
        model.forward = torch.compile(model.forward, dynamic=True)
    cuda = args.device.startswith("cuda")
    times = []
    for i in range(args.steps):
        length = args.lengths[i % len(args.lengths)]
        ids = torch.randint(0, cfg.vocab_size, (args.rows, length), device=args.device)
        t0 = time.perf_counter()
        with torch.autocast("cuda", torch.bfloat16, enabled=cuda):
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
        logits.float().logsumexp(-1).mean().backward()
        model.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return {"mode": args.mode, "times": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="narrow", help="narrow (28 layers, 128 wide) or a Qwen2.5-Coder shape (1.5b)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--lengths", type=int, nargs="+", default=[40, 57, 73, 64])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument(
        "--modes", nargs="+", choices=MODES, default=list(MODES), help="modes to run, each in its own process"
    )
    ap.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one mode, in the child process
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(run_mode(args)))
        return
    results = {}
    for mode in args.modes:
        with tempfile.TemporaryDirectory() as cache:
            env = os.environ | {"TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
            out = subprocess.run(
                [sys.executable, __file__, *sys.argv[1:], "--mode", mode], env=env, capture_output=True, text=True
            )
        if out.returncode != 0:
            sys.exit(f"{mode}: exit {out.returncode}\n{out.stderr[-3000:]}")
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])["times"]
    later = len(args.lengths)  # steps after every length was met once
    print(f"| mode | first step s | steps 2-{later} s | median s / step after step {later} |")
    print("|---|---:|---:|---:|")
    for mode, times in results.items():
        print(f"| {mode} | {times[0]:.2f} | {sum(times[1:later]):.2f} | {statistics.median(times[later:]):.4f} |")
    cold = {m: t[0] + sum(t[1:later]) for m, t in results.items()}
    steady = {m: statistics.median(t[later:]) for m, t in results.items()}
    ratios = []
    if {"whole", "layers"} <= cold.keys():
        ratios.append(f"first {later} steps, whole model / layers: {cold['whole'] / cold['layers']:.1f}x")
    if "eager" in steady:
        ratios += [f"steady step, {m} / eager: {steady[m] / steady['eager']:.2f}" for m in steady if m != "eager"]
    if ratios:
        print("\n" + "; ".join(ratios))


if __name__ == "__main__":
    main()
