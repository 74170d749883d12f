"""evaluate_samples and `corecode eval-samples` end to end, on the real sandbox."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from corecode.data.loaders.humaneval import load_humaneval
from corecode.evaluation.benchmarks import BenchmarkError, get_benchmark
from corecode.evaluation.cli import register
from corecode.evaluation.eval_samples import evaluate_samples

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def humaneval():
    return {p.task_id: p for p in load_humaneval()}


@pytest.fixture(scope="module")
def sandbox():
    from corecode.sandbox import Sandbox, SandboxParams

    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sb:
        yield sb


@pytest.fixture
def app():
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    return app


def completion(p):
    return p.reference_solution[len(p.prompt) :]


def test_benchmark_registry(tmp_path, humaneval):
    assert len(get_benchmark("humaneval")) == 164
    path = tmp_path / "mine.jsonl"
    path.write_text(humaneval["HumanEval/0"].model_dump_json() + "\n\n" + humaneval["HumanEval/2"].model_dump_json())
    assert [p.task_id for p in get_benchmark(str(path))] == ["HumanEval/0", "HumanEval/2"]
    path.write_text(humaneval["HumanEval/0"].model_dump_json() + '\n{"task_id": "x"}\n')
    with pytest.raises(BenchmarkError, match=rf"{path}:2: invalid problem: source"):
        get_benchmark(str(path))
    with pytest.raises(BenchmarkError, match="not found"):
        get_benchmark(str(tmp_path / "nope.jsonl"))


def test_evaluate_samples_api(humaneval, sandbox):
    ids = ["HumanEval/0", "HumanEval/4", "HumanEval/12"]
    problems = [humaneval[t] for t in ids]
    samples = {
        p.task_id: [p.reference_solution, p.prompt + "    return None\n", p.prompt + "    return (\n"] for p in problems
    }
    samples["HumanEval/12"] = [humaneval["HumanEval/12"].reference_solution] * 2  # n may differ per problem
    results, summary = evaluate_samples(problems, samples, sandbox, ks=[1, 2, 3], progress=False)
    assert list(results) == ids and [len(r) for r in results.values()] == [3, 3, 2]
    assert [r.passed for r in results["HumanEval/0"]] == [True, False, False]
    assert results["HumanEval/0"][2].verdict.value == "syntax_error"
    assert summary["n_problems"] == 3 and summary["n_samples"] == 8
    assert summary["pass_at_1"] == pytest.approx((1 / 3 + 1 / 3 + 1) / 3)
    assert set(summary["pass_at_k"]) == {"pass_at_1", "pass_at_2"}  # k=3 > n=2 for HumanEval/12
    assert summary["failures"]["counts"]["passed"] == 4 and summary["failures"]["counts"]["syntax_error"] == 2
    assert summary["reference"] == {"n_run": 3, "n_failed": 0, "failed_task_ids": []}
    ci = summary["pass_at_1_ci"]
    assert ci["low"] <= summary["pass_at_1"] <= ci["high"] and ci["low"] < ci["high"]
    eff = summary["efficiency"]
    assert eff["n_passed"] == 4 and eff["n_with_reference"] == 4
    assert eff["median_wall_time_s"] > 0 and eff["median_wall_time_ratio"] > 0
    json.dumps(summary)
    with pytest.raises(ValueError, match="not in the benchmark"):
        evaluate_samples(problems, {"HumanEval/99": ["x"]}, sandbox, progress=False)


def test_cli_keeps_order_and_fields(app, tmp_path, humaneval, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the sandbox's test cache (data/cache/sandbox) is relative to the working directory
    p0, p1 = humaneval["HumanEval/0"], humaneval["HumanEval/1"]
    lines = [
        {"task_id": p0.task_id, "completion": completion(p0), "my_field": 1},
        {"task_id": p1.task_id, "solution": p1.reference_solution, "completion": "ignored: solution wins"},
        {"task_id": p0.task_id, "completion": "    return 1 // 0\n", "my_field": 3},
        {"task_id": p1.task_id, "completion": "    return []\n"},
    ]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = CliRunner().invoke(app, ["eval-samples", str(samples), "--k", "1,2,10", "--workers", "2", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"pass@1": 0.5, "pass@2": 1.0}  # pass@10 skipped (n=2)
    out = [json.loads(x) for x in Path(f"{samples}_results.jsonl").read_text().splitlines()]
    assert [o["passed"] for o in out] == [True, True, False, False]
    assert [o["verdict"] for o in out] == ["passed", "passed", "runtime_error", "wrong_answer"]
    assert out[0]["my_field"] == 1 and out[2]["my_field"] == 3 and out[1]["completion"] == "ignored: solution wins"
    assert out[0]["result"] == "passed" and out[2]["result"].startswith("failed: ")
    assert "ZeroDivisionError" in out[2]["detail"]
    for o in out:
        assert {"task_id", "passed", "verdict", "result", "wall_time_s", "cpu_time_s", "peak_memory_mb"} <= set(o)
    assert out[0]["wall_time_s"] > 0 and out[0]["peak_memory_mb"] > 0


def test_composite_benchmark_plugs_in(tmp_path, sandbox, monkeypatch):
    """The data package's load_benchmark serves names beyond humaneval; its gold solutions pass, a constant fails."""
    monkeypatch.chdir(tmp_path)  # no params.yaml / data/processed here: composite_test is generated from defaults
    problems = get_benchmark("composite_test")[:12]
    assert problems and all(p.source == "composite" and p.tests for p in problems)
    samples = {p.task_id: [p.reference_solution, p.prompt + "    return None\n"] for p in problems}
    results, summary = evaluate_samples(problems, samples, sandbox, ks=[1, 2], progress=False)
    assert [[r.passed for r in rs] for rs in results.values()] == [[True, False]] * len(problems)
    assert summary["pass_at_k"] == {"pass_at_1": 0.5, "pass_at_2": 1.0}
    assert set(summary["by_difficulty"]) == {str(p.difficulty) for p in problems}


@pytest.mark.slow
def test_all_164_canonical_solutions_pass_through_the_cli(tmp_path, humaneval):
    samples = tmp_path / "canonical.jsonl"
    lines = [json.dumps({"task_id": t, "completion": completion(p)}) for t, p in humaneval.items()]
    samples.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    exe = Path(sys.executable).with_name("corecode")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "corecode.cli"]
    args = ["eval-samples", str(samples), "--benchmark", "humaneval", "--out", str(out), "--k", "1", "--workers", "2"]
    proc = subprocess.run(
        [*cmd, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(x) for x in out.read_text().splitlines()]
    failed = [(r["task_id"], r["verdict"], r["detail"][:100]) for r in results if not r["passed"]]
    assert len(results) == 164 and not failed, failed
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"pass@1": 1.0}
    assert "samples" in proc.stderr  # the progress bar / summary goes to stderr, not stdout
