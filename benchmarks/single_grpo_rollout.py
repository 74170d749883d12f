"""grpo-single's step with TRL's own ``generate`` against the lean rollout (``grpo.single.lean_decode``), side by side.

Both sides are `corecode grpo-single` as the pipeline runs it (a finished `make run`'s params.yaml, sft_single, the rl
split, the sandbox) for ``--steps`` steps, differing only in ``grpo.single.lean_decode``: false samples with TRL's
``generate``, true with ``LeanDecoder`` handed to TRL as its ``rollout_func``. Each run is its own process, the two
sides alternating for ``--rounds`` rounds; the script prints each run's median step time (TRL's logged ``step_time``)
over steps ``--skip``..N and its mean completion length, then the ratio of the sides' medians (generate / lean).
This checkout's code runs on the root's data; the checkpoints it writes go to a temporary directory.

    python benchmarks/single_grpo_rollout.py --root /path/to/make-run --steps 20 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDES = {"generate": "false", "lean": "true"}


def child(root: Path, side: str, steps: int, out: Path) -> None:
    """One grpo-single run in this process; its history goes to ``out``."""
    os.chdir(root)
    sys.path.insert(0, str(ROOT))  # this checkout's corecode, the root's data
    from corecode.config import load_params
    from corecode.training.single_grpo import train_grpo_single

    params = load_params(
        "params.yaml",
        [f"grpo.single.max_steps={steps}", f"grpo.single.lean_decode={SIDES[side]}", f"grpo.single.work_dir={out}"],
    )
    res = train_grpo_single(params, output_dir=out / "ckpt", log_path=out / "history.json")
    print(f"{side}: {res.global_step} steps in {res.wall_time_s:.1f} s")


def summary(history: list[dict], skip: int) -> tuple[float, float]:
    """(median step time over steps skip..N, mean completion length) of one run's history."""
    times = [h["step_time"] for h in history if "step_time" in h][skip:]
    lengths = [h["completions/mean_length"] for h in history if "completions/mean_length" in h]
    return statistics.median(times), statistics.fmean(lengths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="A finished make run's directory (data/, params).")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--skip", type=int, default=2, help="Steps left out of the median (warm-up).")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", choices=sorted(SIDES), help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = args.root.resolve()
    if args.child:
        child(root, args.child, args.steps, args.out)
        return
    if args.skip >= args.steps:
        raise SystemExit(f"--skip ({args.skip}) must be below --steps ({args.steps})")
    medians: dict[str, list[float]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for side in SIDES if r % 2 == 0 else reversed(SIDES):
                out = Path(tmp) / f"{side}_{r}"
                cmd = [sys.executable, __file__, "--root", str(root), "--steps", str(args.steps)]
                run = subprocess.run([*cmd, "--child", side, "--out", str(out)], capture_output=True, text=True)
                if run.returncode:
                    raise SystemExit(f"{side} run failed:\n{run.stdout[-2000:]}{run.stderr[-4000:]}")
                step, length = summary(json.loads((out / "history.json").read_text()), args.skip)
                medians[side].append(step)
                print(f"round {r} {side}: median step {step:.3f} s, mean completion {length:.1f} tokens", flush=True)
    gen, lean = (statistics.median(medians[side]) for side in SIDES)
    print(f"median step: generate {gen:.3f} s, lean {lean:.3f} s; ratio generate/lean: {gen / lean:.2f}")


if __name__ == "__main__":
    main()
