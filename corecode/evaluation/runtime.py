"""Runtime and peak memory of passing programs relative to the reference solution: per problem, per method, and paired
between two methods.

Per problem (:func:`per_problem`): the median over a problem's passing samples of ``sample / reference`` CPU time
(user + system of the sample's process) and peak memory (what the process added over its start size, at least
``MEMORY_FLOOR_MB``: corecode.sandbox.types), both run through the same sandbox (1.0 = as fast / as small
as the reference, 5.0 = five times slower). CPU time, not wall time: a process that waits for a core (a loaded
machine, the sandbox's other workers) adds wall time but no CPU time, and on the same programs scored three times the
CPU-time ratio moved 2-5 times less from run to run than the wall-time one (``benchmarks/runtime_ratio_spread.py``;
docs/benchmarks.md). Problems whose reference fails, or with no passing sample, have no row. Each row says whether
the problem belongs to composite's efficiency family (tag ``efficiency``: a naive and an efficient solution that
differ measurably), the subset where a method's choice of algorithm shows; on the rest a passing program costs about
what the reference does and the ratio is mostly sandbox overhead and noise.

Per method (:func:`summarize`): medians of those per-problem ratios, over all problems and over the family, and the
share of problems whose program is over twice the reference's time. Paired (:func:`compare`): on the problems both
methods pass, the mean of ``log2(ratio_b / ratio_a)`` (doublings by which a is faster than b; 0 = alike) with the
paired bootstrap of ``corecode.evaluation.stats`` (the same resampling over problems as pass@1's comparisons).

Timings still vary from run to run, so these numbers are not reproducible bit for bit as pass@1 is.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from corecode.data.schema import Problem
from corecode.sandbox.types import SampleResult, comparable_memory_mb

FAMILY_TAG = "efficiency"
SUBSETS = ("all", FAMILY_TAG)
SLOW_FACTOR = 2.0  # "slower than the reference": over this many times its CPU time


def per_problem(
    problems: Sequence[Problem],
    results: Mapping[str, Sequence[SampleResult]],
    references: Mapping[str, SampleResult],
) -> dict[str, dict]:
    """``task_id -> {family, n_passed, runtime_ratio, memory_ratio}`` for problems with a passing reference and at
    least one passing sample (ratios: medians over the passing samples; None where the reference measured 0)."""
    out: dict[str, dict] = {}
    for p in problems:
        ref = references.get(p.task_id)
        passed = [r for r in results.get(p.task_id, ()) if r.passed]
        if ref is None or not ref.passed or not passed:
            continue
        out[p.task_id] = {
            "family": FAMILY_TAG in p.tags,
            "n_passed": len(passed),
            "runtime_ratio": _median_ratio([r.cpu_time_s for r in passed], ref.cpu_time_s),
            "memory_ratio": _median_ratio(
                [comparable_memory_mb(r.peak_memory_mb) for r in passed], comparable_memory_mb(ref.peak_memory_mb)
            ),
        }
    return out


def _median_ratio(values: Sequence[float], ref: float) -> float | None:
    return statistics.median(v / ref for v in values) if ref > 0 else None


def _subset(rows: Mapping[str, dict], subset: str) -> dict[str, dict]:
    return dict(rows) if subset == "all" else {t: r for t, r in rows.items() if r["family"]}


def summarize(rows: Mapping[str, dict]) -> dict[str, dict]:
    """Per subset (``all``, ``efficiency``): problems with a passing program, the median relative runtime and peak
    memory over them, and the share over ``SLOW_FACTOR`` times the reference's time (None where there is none)."""
    out = {}
    for subset in SUBSETS:
        sub = _subset(rows, subset)
        runtime = [r["runtime_ratio"] for r in sub.values() if r["runtime_ratio"] is not None]
        memory = [r["memory_ratio"] for r in sub.values() if r["memory_ratio"] is not None]
        out[subset] = {
            "n_problems": len(sub),
            "median_runtime_ratio": statistics.median(runtime) if runtime else None,
            "median_memory_ratio": statistics.median(memory) if memory else None,
            "share_slower_than_2x": sum(x > SLOW_FACTOR for x in runtime) / len(runtime) if runtime else None,
        }
    return out


def compare(
    rows_a: Mapping[str, dict],
    rows_b: Mapping[str, dict],
    key: str = "runtime_ratio",
    n_resamples: int = 2000,
    seed: int = 0,
    alternative: str = "greater",
    confidence: float = 0.95,
) -> dict[str, dict]:
    """Per subset, a paired comparison of ``key`` (runtime_ratio or memory_ratio) on the problems both pass:
    ``delta`` = mean over them of log2(b / a) (> 0: a is faster / smaller), its bootstrap CI and p-value (H1 of
    ``alternative``: a better), the two medians; ``n_problems`` 0 and None values where fewer than 2 are shared."""
    from corecode.evaluation.stats import paired_bootstrap

    out = {}
    for subset in SUBSETS:
        a, b = _subset(rows_a, subset), _subset(rows_b, subset)
        shared = sorted(t for t in a.keys() & b.keys() if a[t][key] and b[t][key])
        row: dict = {"n_problems": len(shared), "delta_log2": None, "ci_low": None, "ci_high": None, "p_value": None}
        row["median_a"] = statistics.median(a[t][key] for t in shared) if shared else None
        row["median_b"] = statistics.median(b[t][key] for t in shared) if shared else None
        if len(shared) >= 2:
            res = paired_bootstrap(
                {t: -math.log2(a[t][key]) for t in shared},
                {t: -math.log2(b[t][key]) for t in shared},
                n_resamples=n_resamples,
                seed=seed,
                alternative=alternative,
                confidence=confidence,
            )
            row.update(delta_log2=res.delta, ci_low=res.ci_low, ci_high=res.ci_high, p_value=res.p_value)
        out[subset] = row
    return out
