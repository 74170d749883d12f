"""How reproducible is a program's runtime relative to its reference? The same programs and references scored
``--repeats`` times in one sandbox pool, and each problem's ratio (program / reference, as
``corecode.evaluation.runtime`` computes it) taken two ways side by side: from wall time (what ``runtime.json`` and
the ``rewards.time`` term use) and from CPU time (user + system of the test process, also in every result); and
the peak-memory ratio's spread the same way (``rewards.memory``: what the process added over its start size).

    python benchmarks/runtime_ratio_spread.py --problems data/processed/composite_test.jsonl \
        --samples data/reports/eval/planner_coder_grpo/composite_test.jsonl --repeats 3 [--load 2]

``--samples``: an evaluate stage's per-problem rows (their ``code`` field) or any JSONL of ``{task_id, code}``.
``--load N`` keeps N busy processes running meanwhile (a shared machine). Prints, per measure and subset (all problems
with a passing program and reference; composite's efficiency family), each repeat's median ratio and the run-to-run
spread: the median over problems of |log2(ratio in repeat a / ratio in repeat b)| over every pair of repeats
(0.5 = the same program measured 1.41x slower or faster from one repeat to the next), and the spread's ratio CPU /
wall. The machine's 1-minute load average is printed before and after.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import statistics
from pathlib import Path

from corecode.data.io import read_problems
from corecode.evaluation.eval_samples import evaluate_samples
from corecode.evaluation.runtime import FAMILY_TAG
from corecode.sandbox import Sandbox, SandboxParams
from corecode.sandbox.types import comparable_memory_mb

MEASURES = {  # a result's seconds by each measure: the whole sample's process, or its tests' calls summed
    "wall": lambda r: r.wall_time_s,
    "cpu": lambda r: r.cpu_time_s,
    "tests_wall": lambda r: sum(t.wall_time_s for t in r.tests),
    "tests_cpu": lambda r: sum(t.cpu_time_s for t in r.tests),
    "memory": lambda r: comparable_memory_mb(r.peak_memory_mb),  # MiB, not seconds: the memory ratio's spread
}


def busy() -> None:
    while True:
        pass


def read_programs(path: Path) -> dict[str, str]:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["task_id"]: r["code"] for r in rows if r.get("code")}


def score_once(problems, programs: dict[str, str], sandbox) -> dict[str, dict[str, float]]:
    """``task_id -> {measure: program / reference}`` for the problems whose program and reference both pass."""
    by_id = {p.task_id: p for p in problems}
    ids = [t for t in programs if by_id[t].reference_solution]
    runs, _ = evaluate_samples(problems, {t: [programs[t]] for t in ids}, sandbox, with_reference=False, progress=False)
    refs, _ = evaluate_samples(
        problems, {t: [by_id[t].reference_solution] for t in ids}, sandbox, with_reference=False, progress=False
    )
    out = {}
    for t in ids:
        run, ref = runs[t][0], refs[t][0]
        if run.passed and ref.passed:
            out[t] = {m: seconds(run) / seconds(ref) for m, seconds in MEASURES.items() if seconds(ref) > 0}
    return out


def spread(repeats: list[dict[str, dict[str, float]]], measure: str, ids: list[str]) -> float | None:
    """Median over problems and pairs of repeats of |log2(ratio_a / ratio_b)|."""
    gaps = [
        abs(math.log2(a[t][measure] / b[t][measure]))
        for a, b in itertools.combinations(repeats, 2)
        for t in ids
        if measure in a[t] and measure in b[t]
    ]
    return statistics.median(gaps) if gaps else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=Path, required=True, help="the benchmark's Problem JSONL")
    ap.add_argument("--samples", type=Path, required=True, help="JSONL rows with task_id and code")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="busy processes kept running meanwhile")
    ap.add_argument("--workers", type=int, default=2, help="sandbox workers")
    a = ap.parse_args()
    problems = read_problems(a.problems)
    family = {p.task_id for p in problems if FAMILY_TAG in p.tags}
    programs = read_programs(a.samples)
    hogs = [multiprocessing.Process(target=busy, daemon=True) for _ in range(a.load)]
    for h in hogs:
        h.start()
    print(f"load average before: {os.getloadavg()[0]:.2f}; busy processes: {a.load}")
    with Sandbox(SandboxParams(workers=a.workers)) as sb:
        repeats = [score_once(problems, programs, sb) for _ in range(a.repeats)]
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for h in hogs:
        h.terminate()
    ids = sorted(set.intersection(*(set(r) for r in repeats)))
    print(
        f"{len(programs)} programs; {len(ids)} pass with their reference in every repeat ({len(family & set(ids))} "
        f"of the efficiency family)\n"
    )
    print("| subset | measure | median ratio per repeat | spread, median abs log2 between repeats |")
    print("|---|---|---|---:|")
    for subset, sub in (("all", ids), (FAMILY_TAG, [t for t in ids if t in family])):
        got = {}
        for m in MEASURES:
            medians = [statistics.median(r[t][m] for t in sub if m in r[t]) for r in repeats if sub]
            got[m] = spread(repeats, m, sub)
            per = ", ".join(f"{x:.2f}" for x in medians)
            print(f"| {subset} | {m} | {per} | {got[m]:.3f} |" if got[m] is not None else f"| {subset} | {m} | - | - |")
        for m in ("cpu", "tests_wall", "tests_cpu"):
            if got["wall"] and got[m] is not None:
                print(f"| {subset} | {m} / wall spread | | **{got[m] / got['wall']:.2f}** |")


if __name__ == "__main__":
    main()
