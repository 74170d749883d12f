"""The table of benchmarks/gpu_scaling.sh: per run (shape, arrangement, GPUs) the median step time over steps
FIRST.. (default 3: step 1 compiles, step 2 still warms caches) with its spread, programs per second, throughput
against the same shape's 1-GPU run, and every rank's per-phase medians (corecode.training.timing).

    python benchmarks/scaling_summary.py RUNS_TSV [--first 3] [--json OUT.json] > scaling.md

RUNS_TSV: one line per run, tab-separated: shape, arrangement, GPUs, programs per step (all processes), per-step log
(grpo.team.log_path), exit code (or ``stopped``: ended by the script's deadline), wall seconds, and the round
(gpu_scaling.sh's REPEATS; 1 where absent). A run's ratio is against the 1-GPU run of its own round (of round 1 where
its round has none); with several rounds a second table gives each arrangement's ratios over the rounds: their median
and range, the run-to-run spread that one run's step spread does not show. A run that failed or logged no step past
FIRST is listed as such.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

_TIME = re.compile(r"^time/rank(\d+)/(.+)_s$")
# A measured step this many times the run's median is listed as slow: a handful of them moves a 20-step median, and
# with it every ratio against that run (docs/benchmarks.md: one-GPU full-1.5B runs with three such steps)
SLOW = 2.0


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def logged_steps(path: Path) -> list[dict]:
    """The per-step rows of a training log (none where the run wrote no log)."""
    return [r for r in json.loads(path.read_text()) if "step_time_s" in r] if path.exists() else []


def phase_medians(rows: list[dict]) -> dict[int, dict[str, float]]:
    """Per rank, the median seconds of each phase over ``rows`` (``other``: the step's time outside every phase)."""
    phases: dict[int, dict[str, list[float]]] = {}
    for row in rows:
        for key, value in row.items():
            m = _TIME.match(key)
            if m:
                phases.setdefault(int(m[1]), {}).setdefault(m[2], []).append(value)
    out = {}
    for rank, by_phase in sorted(phases.items()):
        med = {name: statistics.median(values) for name, values in by_phase.items()}
        inside = [
            sum(by_phase[n][i] for n in by_phase if n not in ("step", "log_checkpoint"))
            for i in range(len(by_phase["step"]))
        ]
        med["other"] = statistics.median(s - x for s, x in zip(by_phase["step"], inside))
        out[rank] = med
    return out


def read_run(line: str, first: int) -> dict:
    """One run of RUNS_TSV with its figures. A ``pair`` (or ``pair_pin``) run's second process (GPU 1, its log beside
    GPU 0's as ``<log>.gpu1.json``) counts in its throughput, and its phases are listed as rank 1: the two GPUs' speeds
    side by side with no collective between them."""
    shape, arrangement, gpus, programs, log, rc, wall, rnd = (line.rstrip("\n").split("\t") + [""] * 8)[:8]
    run = {"shape": shape, "arrangement": arrangement, "gpus": int(gpus), "programs": int(programs), "log": log}
    run["round"] = int(rnd) if rnd.strip() else 1
    run.update(rc=int(rc) if rc.strip().isdigit() else rc.strip() or None, wall_s=float(wall) if wall.strip() else None)
    path = Path(log)
    rows = logged_steps(path)
    later = [r for r in rows if r["step"] >= first]
    run["steps"] = len(rows)
    if not later:
        return run
    times = [r["step_time_s"] for r in later]
    q1, q3 = quartiles(times)
    run.update(
        median_s=statistics.median(times), min_s=min(times), max_s=max(times), q1_s=q1, q3_s=q3, measured=len(later)
    )
    run["programs_per_s"] = run["programs"] / run["median_s"]
    run["slow_steps"] = [r["step"] for r in later if r["step_time_s"] > SLOW * run["median_s"]]
    run["first_step_s"] = rows[0]["step_time_s"]
    run["phases"] = phase_medians(later)
    if not arrangement.startswith("pair"):  # pair, pair_pin
        return run
    second = [r for r in logged_steps(path.with_name(path.stem + ".gpu1.json")) if r["step"] >= first]
    if second:
        run["gpu1_median_s"] = statistics.median(r["step_time_s"] for r in second)
        run["programs_per_s"] = run["programs"] / 2 * (1 / run["median_s"] + 1 / run["gpu1_median_s"])
        run["phases"][1] = phase_medians(second)[0]
    return run


def add_ratios(runs: list[dict]) -> None:
    """Throughput against the same shape's 1-GPU run of the same round (else of round 1), and (roles on two GPUs)
    against DDP on as many GPUs in the same round."""
    for run in runs:
        ones = [r for r in runs if r["shape"] == run["shape"] and r["gpus"] == 1 and "median_s" in r]
        base = next((r for r in ones if r["round"] == run["round"]), None) or next(
            (r for r in ones if r["round"] == 1), None
        )
        if base is not None and "median_s" in run:
            run["vs_1gpu"] = run["programs_per_s"] / base["programs_per_s"]
        if run["arrangement"] == "split" and "median_s" in run:
            ddp = next(
                (
                    r
                    for r in runs
                    if r["shape"] == run["shape"]
                    and r["arrangement"] == "ddp"
                    and r["gpus"] == run["gpus"]
                    and r["round"] == run["round"]
                ),
                None,
            )
            if ddp is not None and "median_s" in ddp:
                run["vs_ddp"] = run["programs_per_s"] / ddp["programs_per_s"]


def label(run: dict) -> str:
    """The run's arrangement, with its round where it is not the first."""
    return run["arrangement"] + (f" (round {run['round']})" if run["round"] > 1 else "")


def table(runs: list[dict], first: int) -> str:
    out = [
        f"| shape | arrangement | GPUs | programs / step | steps | median s / step (steps {first}..) | min - max "
        f"| IQR | programs / s | vs 1 GPU | steps over {SLOW:g}x the median | first step s | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in runs:
        wall = f"{r['wall_s']:.0f}" if r.get("wall_s") is not None else "-"
        r = {**r, "arrangement": label(r)}
        if "median_s" not in r:
            why = f"failed (exit {r['rc']})" if r.get("rc") else f"{r['steps']} steps logged"
            why = "stopped at the command's deadline" if r.get("rc") == "stopped" else why
            out.append(f"| {r['shape']} | {r['arrangement']} | {r['gpus']} | {r['programs']} | {why} ||||||||{wall} |")
            continue
        ratio = f"{r['vs_1gpu']:.2f}x" if "vs_1gpu" in r else "-"
        if "vs_ddp" in r:
            ratio += f" ({r['vs_ddp']:.2f}x DDP)"
        median = f"{r['median_s']:.3f}" + (f" (GPU 1: {r['gpu1_median_s']:.3f})" if "gpu1_median_s" in r else "")
        out.append(
            f"| {r['shape']} | {r['arrangement']} | {r['gpus']} | {r['programs']} | {r['steps']} "
            f"| {median} | {r['min_s']:.3f} - {r['max_s']:.3f} | {r['q1_s']:.3f} - {r['q3_s']:.3f} "
            f"| {r['programs_per_s']:.1f} | {ratio} | {', '.join(map(str, r['slow_steps'])) or '-'} "
            f"| {r['first_step_s']:.1f} | {wall} |"
        )
    return "\n".join(out)


def rounds_table(runs: list[dict]) -> str:
    """Per shape, arrangement and GPUs run in several rounds: the ratio against 1 GPU over the rounds (median and
    range); empty where every run ran once."""
    groups: dict[tuple, list[float]] = {}
    for r in runs:
        if r["gpus"] > 1 and "vs_1gpu" in r:
            groups.setdefault((r["shape"], r["arrangement"], r["gpus"]), []).append(r["vs_1gpu"])
    rows = [(key, ratios) for key, ratios in groups.items() if len(ratios) > 1]
    if not rows:
        return ""
    out = ["| shape | arrangement | GPUs | rounds | vs 1 GPU, median | range |", "|---|---|---:|---:|---:|---:|"]
    for (shape, arrangement, gpus), ratios in rows:
        out.append(
            f"| {shape} | {arrangement} | {gpus} | {len(ratios)} | {statistics.median(ratios):.2f}x "
            f"| {min(ratios):.2f}x - {max(ratios):.2f}x |"
        )
    return "\n".join(out)


def phase_table(runs: list[dict]) -> str:
    """Per run and rank, the median seconds of each phase (``other``: the step's time outside every phase)."""
    names: list[str] = []
    for r in runs:
        for med in r.get("phases", {}).values():
            names += [n for n in med if n not in names and n not in ("step", "other", "log_checkpoint")]
    cols = [*names, "other", "step", "log_checkpoint"]
    out = [
        "| shape | arrangement | GPUs | rank | " + " | ".join(cols) + " |",
        "|---|---|---:|---:|" + "---:|" * len(cols),
    ]
    for r in runs:
        for rank, med in r.get("phases", {}).items():
            cells = " | ".join(f"{med[c]:.3f}" if c in med else "-" for c in cols)
            out.append(f"| {r['shape']} | {label(r)} | {r['gpus']} | {rank} | {cells} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", help="runs.tsv written by benchmarks/gpu_scaling.sh")
    ap.add_argument("--first", type=int, default=3, help="first step of the medians")
    ap.add_argument("--json", help="also write every figure here")
    a = ap.parse_args()
    lines = [x for x in Path(a.runs).read_text().splitlines() if x.strip()]
    runs = [read_run(x, a.first) for x in lines]
    add_ratios(runs)
    print(table(runs, a.first))
    print()
    over_rounds = rounds_table(runs)
    if over_rounds:
        print("Throughput against 1 GPU over the rounds (each run against its own round's 1-GPU run):")
        print()
        print(over_rounds)
        print()
    print(f"Per-phase medians (seconds, steps {a.first}..; time/rank<R>/<phase>_s of the training log):")
    print()
    print(phase_table(runs))
    if a.json:
        Path(a.json).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
