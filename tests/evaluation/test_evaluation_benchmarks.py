"""evaluate.benchmarks names every real benchmark (MBPP, MBPP+, HumanEval+, LiveCodeBench, LiveBench,
CodeContests, Codeforces): each loads from a fixture in its hub schema configured in data.sources, and the sandbox
judges its problems (the reference solution, or a known right program, passes; a wrong one fails)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from corecode.data.config import DataParams, SourceSpec
from corecode.evaluation.benchmarks import BenchmarkError, get_benchmark
from corecode.evaluation.eval_samples import evaluate_samples

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"
SOURCES = {
    "mbpp": SourceSpec(loader="mbpp", path=str(FIX / "mbpp.jsonl"), split="test", role="eval"),
    "mbpp_plus": SourceSpec(loader="evalplus", path=str(FIX / "mbppplus.jsonl"), role="eval"),
    "humaneval_plus": SourceSpec(loader="evalplus", path=str(FIX / "humanevalplus.jsonl"), role="eval"),
    "livecodebench": SourceSpec(loader="livecodebench", path=str(FIX / "livecodebench.jsonl"), role="eval"),
    "livebench": SourceSpec(loader="livebench", path=str(FIX / "livebench.parquet"), role="eval"),
    "code_contests": SourceSpec(loader="code_contests", path=str(FIX / "code_contests.jsonl"), role="eval"),
    "codeforces": SourceSpec(loader="codeforces", path=str(FIX / "codeforces.jsonl"), role="eval"),
}
DATA = DataParams(sources=SOURCES)

# (benchmark, task id, a right program or None for the reference solution, a wrong program)
CASES = [
    ("mbpp", "mbpp/17", None, "def square_perimeter(a):\n    return 0\n"),
    ("mbpp_plus", "mbpp_plus/17", None, "def square_perimeter(a):\n    return 4 * a if a != 123 else 0\n"),
    ("humaneval_plus", "HumanEval/53", None, "def add(x, y):\n    return x - y\n"),
    ("livecodebench", "livecodebench/abc999_a", "a, b = map(int, input().split())\nprint(a + b)\n", "print(0)\n"),
    (
        "livebench",
        "livebench/c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4",
        None,
        "class Solution:\n    def longest(self, words):\n        return 0\n",
    ),
    (
        "livebench",
        "livebench/a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2",
        "print(sum(map(int, input().split())))\n",
        "print(6)\n",
    ),
    ("code_contests", "code_contests/1_A. Double It", None, "print(input())\n"),
    ("codeforces", "codeforces/2063/A", "print(int(input()) + 1)\n", "print(2)\n"),
]


@pytest.fixture(scope="module")
def sandbox():
    from corecode.sandbox import Sandbox, SandboxParams

    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sb:
        yield sb


def test_every_real_benchmark_loads_by_name():
    sizes = {name: len(get_benchmark(name, DATA)) for name in SOURCES}
    assert sizes == {
        "mbpp": 4,
        "mbpp_plus": 2,
        "humaneval_plus": 3,
        "livecodebench": 3,
        "livebench": 4,
        "code_contests": 3,
        "codeforces": 4,
    }
    assert {p.source for p in get_benchmark("livebench", DATA)} == {"livebench"}
    assert {p.split for p in get_benchmark("mbpp", DATA)} == {"test"}


def test_unknown_benchmark_names_the_known_ones():
    with pytest.raises(BenchmarkError, match=r"benchmark 'nope' could not be loaded: .*'livebench'"):
        get_benchmark("nope", DATA)


def test_the_sandbox_judges_every_real_benchmark(sandbox):
    for bench, task_id, right, wrong in CASES:
        problem = next(p for p in get_benchmark(bench, DATA) if p.task_id == task_id)
        right = right or problem.reference_solution
        results, summary = evaluate_samples([problem], {task_id: [right, wrong]}, sandbox, progress=False)
        verdicts = [r.passed for r in results[task_id]]
        assert verdicts == [True, False], (bench, task_id, results[task_id])


def test_eval_samples_reads_the_benchmark_from_params(tmp_path):
    """`corecode eval-samples --params P -b livebench` loads LiveBench from P's data.sources (a local copy)."""
    import typer

    from corecode.evaluation.cli import register

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {"data": {"sources": {"livebench": SOURCES["livebench"].model_dump()}}, "sandbox": {"workers": 1}}
        )
    )
    samples = tmp_path / "samples.jsonl"
    task = CASES[5][1]
    samples.write_text(json.dumps({"task_id": task, "solution": CASES[5][2]}) + "\n")
    res = CliRunner().invoke(
        app, ["eval-samples", str(samples), "-b", "livebench", "--params", str(params), "--k", "1", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"pass@1": 1.0}
    assert "1 samples over 1/4 livebench problems; 1 passed" in res.output
