"""What `dvc metrics show` and `dvc plots show` (the real dvc of the venv) make of the report stage's files, in a
scratch git + DVC repo with the repository's dvc.yaml: one readable table, and every plot with data and no warning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOGS = ROOT / "tests" / "fixtures" / "train_logs"
METHODS = {  # pass@1 on composite_test
    "single_sft": 0.15,
    "single_grpo": 0.12,
    "planner_coder_sft": 0.31,
    "planner_coder_grpo": 0.36,
    "planner_coder_ptx": 0.33,
    "magrpo": 0.08,
    "planner_coder_grpo_retrieval": 0.37,
    "planner_coder_grpo_debug": 0.38,
}


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)


def _write_eval(repo: Path) -> None:
    """The evaluate stages' files (summary.json, per-problem rows) for the pipeline's methods."""
    for method, rate in METHODS.items():
        d = repo / "data/reports/eval" / method
        d.mkdir(parents=True)
        benchmarks = {}
        for bench, p in (("composite_test", rate),):  # the embedded default's one benchmark
            n_pass = round(p * 100)
            rows = [{"task_id": f"t{i}", "n": 1, "c": int(i < n_pass)} for i in range(100)]
            (d / f"{bench}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            benchmarks[bench] = {"pass_at_1": n_pass / 100, "pass_at_k": {"pass_at_1": n_pass / 100}, "n_problems": 100}
        (d / "summary.json").write_text(json.dumps({"benchmarks": benchmarks}))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("views")
    assert _run(repo, "git", "init", "-q").returncode == 0
    assert _run(repo, str(BIN / "dvc"), "init", "-q").returncode == 0
    for rel in ("dvc.yaml", "params.yaml", "baselines/dvc.yaml"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, repo / rel)
    shutil.copytree(LOGS, repo / "data/reports/train", ignore=shutil.ignore_patterns("*.md"))
    _write_eval(repo)
    res = _run(repo, str(BIN / "corecode"), "--pipeline-outputs", "metrics", "--set", "report.n_resamples=200")
    assert res.returncode == 0, res.stdout + res.stderr
    return repo


def test_dvc_metrics_show_prints_one_readable_table(repo):
    res = _run(repo, str(BIN / "dvc"), "metrics", "show")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    header, *rows = res.stdout.strip().splitlines()
    assert header.split() == ["Path", "delta", "p_value", "pass@1"]
    # one row per method and per comparison of report.comparisons, within a terminal's width
    comparisons = yaml.safe_load((repo / "params.yaml").read_text())["report"]["comparisons"]
    assert len(rows) == len(METHODS) + len(comparisons)
    assert max(len(line) for line in res.stdout.splitlines()) <= 120
    cells = {row.split()[0].removeprefix("data/reports/scores/"): row.split()[1:] for row in rows}
    assert cells["composite_test/planner_coder_grpo.json"] == ["-", "-", "0.36"]
    delta, p_value, _ = cells["composite_test/planner_coder_grpo_vs_planner_coder_sft.json"]
    assert delta == "0.05" and float(p_value) < 0.05
    # the details stay in metrics.json and the timings in efficiency.json, which are not DVC metrics
    assert "metrics.json" not in res.stdout and "efficiency.json" not in res.stdout


def test_dvc_plots_show_renders_every_plot_with_data_and_no_warning(repo):
    res = _run(repo, str(BIN / "dvc"), "plots", "show", "--json")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    shown = json.loads(res.stdout)
    assert "errors" not in shown, shown.get("errors")
    defined = [next(iter(p)) for p in yaml.safe_load((repo / "dvc.yaml").read_text())["plots"]]
    assert set(shown["data"]) == set(defined)
    for plot_id in defined:
        (plot,) = shown["data"][plot_id]
        values = plot["content"]["data"]["values"]
        assert values, plot_id
        fields = {k for v in values for k in v} - {"rev", "filename", "field", "step", "dvc_inferred_y_value", "method"}
        assert fields, plot_id
    # every training curve: each training log of the pipeline is drawn by some plot
    drawn = json.dumps({k: v for k, v in yaml.safe_load((repo / "dvc.yaml").read_text()).items() if k == "plots"})
    for log in LOGS.glob("*.json"):
        assert f"data/reports/curves/{log.stem}.json" in drawn, log.stem


def test_curves_tables_have_uniform_rows(repo):
    """What DVC needs of a table: every row has the same keys (the logs' rows do not)."""
    tables = sorted((repo / "data/reports/curves").glob("*.json"))
    assert {t.name for t in tables} == {f"{log.stem}{s}.json" for log in LOGS.glob("*.json") for s in ("", "_eval")}
    for table in tables:
        rows = json.loads(table.read_text())
        assert len({tuple(sorted(r)) for r in rows}) <= 1, table.name
    sft = json.loads((repo / "data/reports/curves/sft_planner.json").read_text())
    assert "train_runtime" not in sft[0] and "eval_loss" not in sft[0] and "loss" in sft[0]
    team_eval = json.loads((repo / "data/reports/curves/grpo_team_eval.json").read_text())
    assert team_eval and set(team_eval[0]) == {
        "step",
        "eval/collaboration_gain",
        "eval/pass_rate_with_plan",
        "eval/pass_rate_without_plan",
    }
