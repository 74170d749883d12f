"""Aggregates from hand-built sandbox results: pass@k, breakdowns, efficiency, groups, MLflow flattening."""

import json

import pytest

from corecode.data.schema import Problem
from corecode.evaluation.aggregate import flat_metrics, pass_at_1_by_problem, per_problem, summarize
from corecode.sandbox.types import SampleResult, Verdict


def res(tid, verdict, wall=0.0, mem=0.0, frac=None):
    passed = verdict == Verdict.passed
    return SampleResult(
        task_id=tid,
        verdict=verdict,
        passed=passed,
        pass_fraction=1.0 if passed else (frac or 0.0),
        wall_time_s=wall,
        cpu_time_s=wall / 2,
        peak_memory_mb=mem,
    )


def prob(tid, difficulty=None, source="toy"):
    return Problem(task_id=tid, source=source, prompt="def f():\n", entry_point="f", difficulty=difficulty)


P, W, R, S = Verdict.passed, Verdict.wrong_answer, Verdict.runtime_error, Verdict.syntax_error


@pytest.fixture
def data():
    problems = [prob("a", "1"), prob("b", "2"), prob("c", "2", source="other"), prob("unused", "1")]
    results = {
        "a": [res("a", P, 0.2, 10), res("a", P, 0.4, 30), res("a", W, frac=0.5)],
        "b": [res("b", W, frac=0.25), res("b", R), res("b", S)],
        "c": [res("c", P, 1.0, 20), res("c", W), res("c", W)],
    }
    refs = {"a": res("a", P, 0.2, 10), "c": res("c", P, 0.5, 40), "b": res("b", W)}  # b's reference is broken
    return problems, results, refs


def test_summary_numbers(data):
    problems, results, refs = data
    s = summarize(problems, results, ks=[1, 2, 5], references=refs)
    assert s["n_problems"] == 3 and s["n_samples"] == 9
    assert s["pass_at_1"] == pytest.approx((2 / 3 + 0 + 1 / 3) / 3)
    # pass@2 per problem: a: 1 - C(1,2)/C(3,2) = 1; b: 0; c: 1 - C(2,2)/C(3,2) = 2/3. pass@5 skipped (n=3 < 5).
    assert s["pass_at_k"] == {"pass_at_1": pytest.approx(1 / 3), "pass_at_2": pytest.approx((1 + 0 + 2 / 3) / 3)}
    assert s["test_pass_rate"] == pytest.approx(((1 + 1 + 0.5) / 3 + 0.25 / 3 + 1 / 3) / 3)
    assert s["failures"]["counts"] == {
        "passed": 3,
        "wrong_answer": 4,
        "runtime_error": 1,
        "syntax_error": 1,
        "timeout": 0,
        "memory_exceeded": 0,
        "sandbox_error": 0,
    }
    assert s["failures"]["fractions"]["wrong_answer"] == pytest.approx(4 / 9)
    eff = s["efficiency"]
    assert eff["n_passed"] == 3
    assert eff["median_wall_time_s"] == pytest.approx(0.4)
    assert eff["median_peak_memory_mb"] == pytest.approx(20)
    # ratios: a: 0.2/0.2=1, 0.4/0.2=2; c: 1.0/0.5=2 -> median 2. memory: 1, 3, 0.5 -> 1.
    assert eff["n_with_reference"] == 3
    assert eff["median_wall_time_ratio"] == pytest.approx(2.0)
    assert eff["median_peak_memory_ratio"] == pytest.approx(1.0)
    json.dumps(s)  # plain data, ready for metrics.json


def test_groups(data):
    problems, results, refs = data
    s = summarize(problems, results, ks=[1])
    assert set(s["by_difficulty"]) == {"1", "2"}  # "unused" was not attempted
    assert s["by_difficulty"]["1"]["pass_at_1"] == pytest.approx(2 / 3)
    assert s["by_difficulty"]["2"]["n_problems"] == 2
    assert s["by_source"]["other"]["pass_at_1"] == pytest.approx(1 / 3)
    assert s["efficiency"]["median_wall_time_ratio"] is None  # no references given


def test_per_problem_and_bootstrap_input(data):
    _, results, _ = data
    rows = per_problem(results)
    assert rows[0] == {
        "task_id": "a",
        "n": 3,
        "c": 2,
        "pass_at_1": pytest.approx(2 / 3),
        "pass_fraction": pytest.approx(2.5 / 3),
        "verdicts": ["passed", "passed", "wrong_answer"],
    }
    assert pass_at_1_by_problem(results) == {"a": pytest.approx(2 / 3), "b": 0.0, "c": pytest.approx(1 / 3)}


def test_flat_metrics_are_mlflow_names(data):
    problems, results, refs = data
    flat = flat_metrics(summarize(problems, results, ks=[1, 2], references=refs), prefix="humaneval")
    assert flat["humaneval.pass_at_k.pass_at_2"] == pytest.approx(5 / 9)
    assert flat["humaneval.failures.counts.wrong_answer"] == 4.0
    assert all("@" not in k for k in flat) and all(isinstance(v, float) for v in flat.values())


def test_errors(data):
    problems, results, _ = data
    with pytest.raises(ValueError, match="not in the benchmark"):
        summarize(problems, {**results, "zzz": [res("zzz", P)]})
    with pytest.raises(ValueError, match="no samples"):
        summarize(problems, {"a": []})
