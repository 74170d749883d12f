"""`corecode report` on a small synthetic metrics.json in the evaluate stage's shape."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
import typer
import yaml
from matplotlib.image import imread
from mlflow import MlflowClient
from typer.testing import CliRunner

from corecode.tracking.cli import register
from corecode.tracking.report import ReportError, build_report, load_metrics

runner = CliRunner()
app = typer.Typer()
register(app)

METHODS = ["single_sft", "planner_coder_sft", "planner_coder_grpo"]


def _metrics() -> dict:
    methods = {}
    for i, m in enumerate(METHODS):
        methods[m] = {
            b: {
                "pass_at_1": 0.2 + 0.1 * i + 0.01 * j,
                "n_problems": 600 if j == 0 else 164,
                "pass_at_k": {"pass_at_1": 0.2 + 0.1 * i, "pass_at_5": 0.4 + 0.1 * i},
                "failures": {"passed": 10 + i, "wrong_answer": 5 - i, "timeout": 1, "syntax_error": 2},
                "efficiency": {"median_runtime_s": 0.01 * (i + 1), "peak_memory_mb": 20.0 + i, "label": "x"},
            }
            for j, b in enumerate(["composite_test", "humaneval"])
        }
    # the shape corecode.evaluation/pipeline write: failures as counts + fractions; efficiency may sit at top level
    hum = methods["single_sft"]["humaneval"]
    hum["failures"] = {"counts": {"passed": 3, "timeout": 1}, "fractions": {"passed": 0.75, "timeout": 0.25}}
    eff_top = {
        "single_sft": {"humaneval": hum.pop("efficiency")},
        # timings from efficiency.json merge with a result's own (generation cost) efficiency
        "planner_coder_grpo": {"humaneval": {"overall": {"median_wall_time_s": 0.5}}},
    }
    comps = [
        {"a": "planner_coder_grpo", "b": "single_sft", "benchmark": "humaneval", "delta": 0.2, "p_value": 0.003,
         "n_problems": 164}
    ]  # fmt: skip
    return {"methods": methods, "comparisons": comps, "efficiency": eff_top}


def _write(root) -> None:
    (root / "data/reports/train").mkdir(parents=True)
    (root / "data/reports/metrics.json").write_text(json.dumps(_metrics()))
    hist = [{"step": s, "loss": 2.0 / s, "learning_rate": 1e-4, "epoch": s / 10} for s in range(1, 11)]
    (root / "data/reports/train/sft_coder.json").write_text(json.dumps({"log_history": hist}))
    (root / "data/reports/train/sft_coder_summary.json").write_text('{"role": "coder", "steps": 10}')  # not a log
    (root / "data/reports/train/grpo_team.csv").write_text(
        "step,reward_planner,reward_coder,note\n" + "".join(f"{s},{s / 10},{s / 20},ok\n" for s in range(1, 6))
    )


def test_report_cli_writes_markdown_plots_and_logs_them(store, tmp_path):
    _write(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"tracking": {"log_system_metrics": False}}))
    res = runner.invoke(app, ["report"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "data/reports/report.md").read_text()
    assert "## composite_test" in md and "## humaneval" in md and "## Paired comparisons" in md
    assert "| planner_coder_grpo | 164 | 0.41 | 0.6 |" in md  # humaneval row: problems, pass_at_1, pass_at_5
    assert "| planner_coder_grpo | 600 | 0.4 | 0.6 |" in md  # composite_test's
    assert "| planner_coder_grpo | single_sft | humaneval | 164 | 0.2 | 0.003 |" in md
    hum = md[md.index("## humaneval") :]
    assert "| single_sft | 0.75 |  | 0.25 |  |" in hum  # fractions (not counts) of the nested failures
    assert "| single_sft | 0.01 |  | 20 |" in hum  # efficiency found at the top level
    assert "| planner_coder_grpo | 0.03 | 0.5 | 22 |" in hum  # own figures and efficiency.json's, merged
    plots = sorted(p.name for p in (tmp_path / "data/reports/plots").glob("*.png"))
    assert plots == sorted(
        [f"{k}_{b}.png" for k in ("pass_at_k", "failures", "efficiency") for b in ("composite_test", "humaneval")]
        + ["train_sft_coder.png", "train_grpo_team.png"]
    )
    for name in plots:
        assert f"(plots/{name})" in md
        img = imread(tmp_path / "data/reports/plots" / name)
        assert img.shape[0] > 100 and img.shape[1] > 100 and img.std() > 0  # a real, non-blank picture

    client = MlflowClient()
    (run,) = client.search_runs(
        client.get_experiment_by_name("corecode").experiment_id, filter_string="tags.`corecode.stage` = 'report'"
    )
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "metrics.json", "plots"} <= arts
    assert len(client.list_artifacts(run.info.run_id, "plots")) == len(plots)
    assert run.data.metrics["planner_coder_grpo.humaneval.pass_at_5"] == pytest.approx(0.6)
    # report.md as written, and report.html that carries its plots (MLflow's preview cannot resolve plots/x.png)
    logged = Path(client.download_artifacts(run.info.run_id, "report.md", str(tmp_path / "dl"))).read_text()
    assert logged == md
    html = Path(client.download_artifacts(run.info.run_id, "report.html", str(tmp_path / "dl"))).read_text()
    uris = re.findall(r'<img src="data:image/png;base64,([^"]+)"', html)
    assert sorted(base64.b64decode(u) for u in uris) == sorted(
        (tmp_path / "data/reports/plots" / n).read_bytes() for n in plots
    )
    assert "<table>" in html and "<h2>Paired comparisons</h2>" in html and "(plots/" not in html
    # ... and each plot is an MLflow image (the run page's image view), not only a file
    images = {a.path for a in client.list_artifacts(run.info.run_id, "images")}
    assert {Path(p).name.split("+")[0] for p in images} >= {Path(n).stem for n in plots}
    # the parent run carries the headline numbers: pass@1 per method and benchmark, each comparison's delta
    parent = client.get_run(run.data.tags["mlflow.parentRunId"]).data.metrics
    assert parent["planner_coder_grpo.humaneval.pass_at_1"] == pytest.approx(0.41)
    assert parent["delta.planner_coder_grpo_vs_single_sft.humaneval"] == pytest.approx(0.2)
    assert parent["p_value.planner_coder_grpo_vs_single_sft.humaneval"] == pytest.approx(0.003)
    exp = client.get_experiment_by_name("corecode").experiment_id
    assert f"/#/experiments/{exp}/runs?workflowType=machine_learning" in res.output  # the link that opens on runs


def test_bad_metrics_name_the_file_and_key(tmp_path):
    p = tmp_path / "metrics.json"
    p.write_text(json.dumps({"method": {}}))
    with pytest.raises(ReportError, match=r"metrics.json: expected a non-empty 'methods'"):
        load_metrics(p)
    p.write_text(json.dumps({"methods": {"m": {"humaneval": {"pass_at_k": {}}}}}))
    with pytest.raises(ReportError, match=r"methods\.m\.humaneval\.pass_at_1"):
        build_report(p, tmp_path / "train", tmp_path / "out")
    p.write_text(json.dumps({"methods": {"m": {"h": {"pass_at_1": 0.1}}}, "comparisons": [{"a": "m"}]}))
    with pytest.raises(ReportError, match=r"comparisons\[0\]: missing \['b', 'benchmark'"):
        load_metrics(p)
    (tmp_path / "train").mkdir()
    (tmp_path / "train/x.json").write_text('[{"loss": 1}]')
    p.write_text(json.dumps({"methods": {"m": {"h": {"pass_at_1": 0.1}}}}))
    with pytest.raises(ReportError, match=r"x.json: record 0: expected an object with a 'step'"):
        build_report(p, tmp_path / "train", tmp_path / "out")
