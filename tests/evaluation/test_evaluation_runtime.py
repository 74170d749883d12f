"""Relative runtime and memory of passing programs: per problem, per method, paired (corecode.evaluation.runtime)."""

import math

import pytest

from corecode.data.schema import Problem
from corecode.evaluation.runtime import compare, per_problem, summarize
from corecode.sandbox.types import SampleResult, Verdict


def _problem(i: int, family: bool) -> Problem:
    return Problem(task_id=f"t{i}", source="composite", prompt="def f(x):\n", tags=["efficiency"] if family else [])


def _result(i: int, passed: bool, cpu: float, mem: float = 10.0) -> SampleResult:
    """A result whose wall time is its CPU time plus a wait that differs by problem and sample, as on a loaded
    machine: a ratio taken from wall time would not be the one asserted."""
    verdict = Verdict.passed if passed else Verdict.wrong_answer
    wall = cpu + 0.05 * (i + 1) + cpu * 3
    return SampleResult(
        task_id=f"t{i}", verdict=verdict, passed=passed, cpu_time_s=cpu, wall_time_s=wall, peak_memory_mb=mem
    )


def test_per_problem_uses_passing_samples_and_passing_references_only():
    problems = [_problem(0, True), _problem(1, False), _problem(2, False), _problem(3, True)]
    results = {
        "t0": [_result(0, True, 0.4, 30.0), _result(0, True, 0.2, 10.0), _result(0, False, 9.0)],
        "t1": [_result(1, False, 0.1)],  # nothing passes: no row
        "t2": [_result(2, True, 0.1)],  # its reference fails: no row
        "t3": [_result(3, True, 0.05)],
    }
    refs = {"t0": _result(0, True, 0.1), "t2": _result(2, False, 0.1), "t3": _result(3, True, 0.1)}
    rows = per_problem(problems, results, refs)
    assert set(rows) == {"t0", "t3"}
    assert rows["t0"] == {"family": True, "n_passed": 2, "runtime_ratio": pytest.approx(3.0), "memory_ratio": 2.0}
    assert rows["t3"]["runtime_ratio"] == pytest.approx(0.5)


def test_memory_ratio_floors_programs_that_add_almost_nothing():
    """Added memory under MEMORY_FLOOR_MB is page-fault noise: two such programs compare as alike, not as a ratio of
    two noise figures (or a division by 0)."""
    problems = [_problem(0, True)]
    refs = {"t0": _result(0, True, 0.1, mem=0.0)}
    assert per_problem(problems, {"t0": [_result(0, True, 0.1, mem=0.3)]}, refs)["t0"]["memory_ratio"] == 1.0
    assert per_problem(problems, {"t0": [_result(0, True, 0.1, mem=4.0)]}, refs)["t0"]["memory_ratio"] == 4.0


def _rows(ratios: dict[str, float], family: set[str]) -> dict[str, dict]:
    return {
        t: {"family": t in family, "n_passed": 1, "runtime_ratio": r, "memory_ratio": 1.0} for t, r in ratios.items()
    }


def test_summary_over_all_and_over_the_family():
    rows = _rows({"a": 1.0, "b": 1.2, "c": 8.0, "d": 12.0, "e": 0.9}, family={"c", "d", "e"})
    s = summarize(rows)
    assert s["all"]["n_problems"] == 5 and s["all"]["median_runtime_ratio"] == 1.2
    assert s["efficiency"]["median_runtime_ratio"] == 8.0 and s["efficiency"]["share_slower_than_2x"] == 2 / 3
    assert summarize({})["efficiency"] == {
        "n_problems": 0,
        "median_runtime_ratio": None,
        "median_memory_ratio": None,
        "share_slower_than_2x": None,
    }


def test_paired_comparison_on_shared_problems():
    family = {f"t{i}" for i in range(40)}
    slow = _rows({f"t{i}": 8.0 + i % 3 for i in range(40)}, family)
    fast = _rows({f"t{i}": 1.0 + (i % 5) / 10 for i in range(30)}, family)  # passes 30 of them
    c = compare(fast, slow, n_resamples=1000)["efficiency"]
    assert c["n_problems"] == 30 and c["p_value"] < 0.01 and c["ci_low"] > 2
    assert c["delta_log2"] == pytest.approx(
        sum(math.log2(slow[t]["runtime_ratio"] / fast[t]["runtime_ratio"]) for t in fast) / 30
    )
    back = compare(slow, fast, n_resamples=1000)["all"]
    assert back["delta_log2"] == pytest.approx(-c["delta_log2"]) and back["p_value"] > 0.9
    assert compare(fast, _rows({"x": 1.0}, set()))["all"]["p_value"] is None  # nothing shared
