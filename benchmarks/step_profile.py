"""Where a team-GRPO step's time goes: per phase, the host's time, the kernels it launched and how long the GPU ran
them, from ``torch.profiler`` over a few steps of a timing run (benchmarks/team_timing.py's, same params and --set).

    python benchmarks/step_profile.py --params data/params.scaling-full1.5b.yaml --wait 4 --active 2 --out /tmp/prof
    accelerate launch --config_file configs/accelerate/ddp.yaml benchmarks/step_profile.py --params P --out /tmp/prof

A phase (``corecode.training.timing``: each role's generation, backward, all-reduce, optimizer, ...) is also a
``record_function`` range; a kernel belongs to the phase whose host range holds its launch (the CUDA runtime call
with the kernel's correlation id; kernels replayed from a CUDA graph belong to the graph's launch). Per phase and
step it prints: host ms (the range), launches (host calls that put work on the GPU; a graph replay is one), GPU ops,
GPU busy ms (the union of their intervals) and that as a share of the phase's GPU span (first op start to last end).
A phase whose GPU is busy for a small share of its span is launch-bound: the GPU waits for the host, and more
processes on the host (several GPUs) make it slower; one near 100% is the GPU's own work. Each rank writes
``rank<R>.md`` and its gzipped chrome trace under --out.

Written by hand because the profiler's tables (``key_averages``) group by operator, not by a region of the step, and
no tool here reads GPU busy time per region; it reads the exported chrome trace (Kineto's documented format).
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import os
import shutil
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def busy_ms(intervals: list[tuple[float, float]]) -> float:
    """Milliseconds covered by the union of (start, end) intervals given in microseconds."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total, end = total + (e - s), e
        elif e > end:
            total, end = total + (e - end), e
    return total / 1000.0


def phase_table(trace: dict, steps: int) -> str:
    """The per-phase table (means over the profiled steps) of one exported chrome trace."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    phases = sorted(
        (e["ts"], e["ts"] + e["dur"], e["name"][len("phase/") :])
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("phase/")
    )
    starts = [p[0] for p in phases]
    launch_at = {}  # correlation id -> launch time on the host
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch_at[e["args"]["correlation"]] = e["ts"]

    def occurrence_of(t: float) -> int | None:
        """Index of the latest-starting phase range holding host time ``t`` (phases do not nest)."""
        i = bisect.bisect_right(starts, t) - 1
        for j in range(i, max(i - 50, -1), -1):
            if phases[j][0] <= t <= phases[j][1]:
                return j
        return None

    ops = defaultdict(list)  # phase occurrence (None: launched outside every phase) -> [(start, end, correlation)]
    for e in events:
        if e.get("cat") in GPU_CATS:
            corr = e.get("args", {}).get("correlation")
            t = launch_at.get(corr)
            ops[occurrence_of(t) if t is not None else None].append((e["ts"], e["ts"] + e["dur"], corr))
    # per phase name: host ms, launches, GPU ops, busy ms, span ms (summed over its occurrences)
    totals = defaultdict(lambda: [0.0, 0, 0, 0.0, 0.0])
    for s, end, name in phases:
        totals[name][0] += (end - s) / 1000.0
    for j, iv in ops.items():
        row = totals[phases[j][2] if j is not None else "(outside phases)"]
        row[1] += len({c for _, _, c in iv})
        row[2] += len(iv)
        row[3] += busy_ms([(a, b) for a, b, _ in iv])
        row[4] += (max(b for _, b, _ in iv) - min(a for a, _, _ in iv)) / 1000.0
    rows = [
        "| phase | host ms | launches | GPU ops | GPU busy ms | GPU span ms | busy / span |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (host, launches, n_ops, busy, span) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        share = f"{busy / span:.0%}" if span else "-"
        rows.append(
            f"| {name} | {host / steps:.1f} | {launches / steps:.0f} | {n_ops / steps:.0f} | {busy / steps:.1f} | "
            f"{span / steps:.1f} | {share} |"
        )
    every = [(a, b) for iv in ops.values() for a, b, _ in iv]
    if not every:
        return "\n".join(rows) + f"\n\nProfiled steps: {steps}; no GPU ops recorded."
    window = (max(b for _, b in every) - min(a for a, _ in every)) / 1000.0
    busy = busy_ms(every)
    return "\n".join(rows) + (
        f"\n\nProfiled steps: {steps}; GPU busy {busy / steps:.1f} ms of {window / steps:.1f} ms a step between its "
        f"first and last GPU op ({busy / window:.0%})."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", required=True, help="params file (corecode profile apply ... -o P)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE (as corecode --set)")
    ap.add_argument("--wait", type=int, default=4, help="steps before the profiled ones (warm-up, graph capture)")
    ap.add_argument("--active", type=int, default=2, help="profiled steps")
    ap.add_argument("--out", required=True, help="directory for rank<R>.md and rank<R>.trace.json.gz")
    args = ap.parse_args()

    import torch

    from corecode.config import load_params
    from corecode.training import timing
    from corecode.training.team_grpo import run_team_grpo

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rank = int(os.environ.get("RANK", "0"))
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    trace = out / f"rank{rank}.trace.json"

    def on_ready(prof) -> None:
        prof.export_chrome_trace(str(trace))

    prof = torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(wait=args.wait, warmup=1, active=args.active, repeat=1),
        on_trace_ready=on_ready,
    )
    # The trainer has no step callback: a step begins with PhaseTimer.start, so the profiler steps there.
    start = timing.PhaseTimer.start

    def start_and_step(self) -> None:
        prof.step()
        start(self)

    timing.PhaseTimer.start = start_and_step
    steps = args.wait + 1 + args.active + 1  # the last start closes the active window
    with prof:
        run_team_grpo(
            load_params(args.params, [*args.overrides, f"grpo.team.max_steps={steps}"]), progress=False, save=False
        )
    table = phase_table(json.loads(trace.read_text()), args.active)
    (out / f"rank{rank}.md").write_text(table + "\n")
    with trace.open("rb") as src, gzip.open(f"{trace}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    trace.unlink()
    print(f"rank {rank}\n{table}")


if __name__ == "__main__":
    main()
