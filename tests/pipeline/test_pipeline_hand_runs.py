"""Stage commands run by hand: they write under data/work/manual/ unless asked for the pipeline's places
(`corecode --pipeline-outputs`, what dvc.yaml runs); their reports are deterministic; user errors are one short line
(exit 2) with the traceback behind `corecode --debug`; SFT reports the rows it would truncate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from corecode.cli import app

BIN = Path(sys.executable).parent
TINY_DATA = {"composite": {"n_train": 40, "n_val": 8, "n_test": 10, "n_rl": 8}}


def _corecode(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    return subprocess.run([str(BIN / "corecode"), *args], cwd=cwd, capture_output=True, text=True, env=os.environ)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"seed": 3, "data": TINY_DATA}))
    return tmp_path


def test_data_stages_by_hand_write_under_manual_and_gx_reports_are_deterministic(project):
    runner = CliRunner()
    res = runner.invoke(app, ["build-data"])
    assert res.exit_code == 0, res.output
    assert (project / "data/work/manual/processed/composite_train.jsonl").is_file()
    assert not (project / "data/processed").exists() and not (project / "data/reports").exists()
    res = runner.invoke(app, ["--pipeline-outputs", "build-data"])
    assert res.exit_code == 0, res.output
    assert _tree(project / "data/processed") == _tree(project / "data/work/manual/processed")

    res = runner.invoke(app, ["validate-data"])  # by hand: reads the pipeline's data, writes apart
    assert res.exit_code == 0, res.output
    assert (project / "data/work/manual/reports/gx/summary.json").is_file()
    assert not (project / "data/reports/gx").exists()

    # What DVC hashes for init_model (data/reports/gx) is the same bytes run after run; the HTML data docs, stamped
    # with run times, lie apart in gx_docs/.
    reports = []
    for _ in range(2):
        res = runner.invoke(app, ["--pipeline-outputs", "validate-data"])
        assert res.exit_code == 0, res.output
        reports.append(_tree(project / "data/reports/gx"))
    assert reports[0] == reports[1] and "planner.json" in reports[0]
    assert (project / "data/reports/gx_docs/index.html").is_file()
    assert not any("T" in name and "Z" in name for name in reports[0])  # no timestamped paths

    # Bad lines in two files: every dataset is checked, each bad line counted, the first ones named.
    for name in ("coder", "composite_val"):
        with (project / f"data/processed/{name}.jsonl").open("a") as f:
            f.write('{"prompt": "x",\n[1, 2]\n')
    res = runner.invoke(app, ["validate-data"])
    assert res.exit_code == 1
    assert res.output.count("lines_are_json_objects: 2 unexpected") == 2, res.output
    assert "line 41: 'not valid JSON" in res.output or "line 9: 'not valid JSON" in res.output, res.output
    assert "PASS planner" in res.output  # the others still ran


def test_hand_run_sft_leaves_the_pipelines_outputs_and_reports_long_rows(project):
    from corecode.models.testing import make_tiny_checkpoint

    rows = [
        {
            "task_id": f"t{i}",
            "split": "val" if i == 7 else "train",
            "prompt": f"Write f{i}.\n",
            "completion": f"```python\ndef f{i}(x):\n    return x + {i}\n```",
        }
        for i in range(8)
    ]
    rows[3]["prompt"] = "a very long prompt " * 60  # far over sft.max_length
    data = project / "data/processed/coder.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    make_tiny_checkpoint(project / "data/checkpoints/base", [r["prompt"] + r["completion"] for r in rows])
    # what the pipeline trained before
    (project / "data/checkpoints/sft_coder").mkdir()
    (project / "data/checkpoints/sft_coder/model.safetensors").write_text("the pipeline's")
    (project / "data/reports/train").mkdir(parents=True)
    (project / "data/reports/train/sft_coder.json").write_text("[]\n")
    sft = {"batch_size": 2, "max_length": 64, "check_n": 0, "logging_steps": 1, "torch_threads": 1}
    (project / "params.yaml").write_text(yaml.safe_dump({"tracking": {"enabled": False}, "sft": sft}))

    res = CliRunner().invoke(app, ["sft", "--role", "coder", "--set", "sft.max_steps=2"])
    assert res.exit_code == 0, res.output
    assert (project / "data/checkpoints/sft_coder/model.safetensors").read_text() == "the pipeline's"
    assert (project / "data/reports/train/sft_coder.json").read_text() == "[]\n"
    manual = project / "data/work/manual"
    assert (manual / "checkpoints/sft_coder/model.safetensors").stat().st_size > 1000
    assert [r["step"] for r in json.loads((manual / "reports/train/sft_coder.json").read_text()) if "loss" in r]
    warning = "warning: sft --role coder: 1 of 8 rows are longer than sft.max_length=64 tokens and will be truncated"
    assert f"{warning}; the longest: data/processed/coder.jsonl:4 (" in res.stderr, res.stderr
    summary = json.loads((manual / "reports/train/sft_coder_summary.json").read_text())
    assert summary["truncated_rows"] == 1 and summary["longest_row"] == "data/processed/coder.jsonl:4"
    assert summary["longest_row_tokens"] > 64


def test_user_errors_are_one_line_with_exit_2_and_the_traceback_behind_debug(project):
    # bad params through the real console script: file, line and key
    (project / "params.yaml").write_text("seed: 0\ngrpo:\n  team:\n    max_steps: abc\n")
    res = _corecode(project, "check-params")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: params.yaml: invalid parameters: grpo.team.max_steps (line 4): ")
    assert len(res.stderr.splitlines()) == 1, res.stderr

    # bad JSONL data: the file and line, in one line
    (project / "params.yaml").write_text("seed: 0\n")
    method = project / "data/reports/eval/m"
    method.mkdir(parents=True)
    (method / "summary.json").write_text(json.dumps({"benchmarks": {}}))
    (method / "humaneval.jsonl").write_text('{"task_id": "a", "n": 1, "c": 1}\n{"task_id": "b", "n": 1\n')
    args = ("metrics", "--compare", "m:m", "--set", "evaluate.benchmarks=[humaneval]")
    res = _corecode(project, *args)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: data/reports/eval/m/humaneval.jsonl:2: bad per-problem row")
    assert len(res.stderr.splitlines()) == 1, res.stderr
    res = _corecode(project, "--debug", *args)
    assert res.returncode == 1 and "Traceback (most recent call last)" in res.stderr
    assert "humaneval.jsonl:2: bad per-problem row" in res.stderr

    # not a user error (a malformed summary written by no corecode command): two lines, exit 1
    (method / "summary.json").write_text("{}")
    res = _corecode(project, "metrics")
    assert res.returncode == 1
    hint = "(corecode --debug COMMAND ... shows the traceback)"
    assert res.stderr.splitlines() == ["error: KeyError: 'benchmarks'", hint]
