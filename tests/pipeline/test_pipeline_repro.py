"""corecode repro on a small real DVC project in a real git repo: independent stages overlap, dependent ones wait,
dvc.lock ends up as dvc repro leaves it, and a failed stage stops what depends on it but not what already runs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from corecode.pipeline.repro import ReproFailed, repro, stages_to_run

# Two slow independent branches (a, b) that join in c. Each stage records when it ran and its OMP_NUM_THREADS.
DVC_YAML = """\
stages:
  c:
    cmd: python step.py c
    deps: [step.py, out/a.txt, out/b.txt]
    outs: [out/c.txt]
  a:
    cmd: python step.py a
    deps: [step.py]
    outs: [out/a.txt]
  b:
    cmd: python step.py b
    deps: [step.py]
    outs: [out/b.txt]
"""

STEP = """\
import json, os, sys, time
stage = sys.argv[1]
start = time.time()
if stage == os.environ.get("FAIL_STAGE"):
    print("about to fail\\rfailing", flush=True)
    sys.exit(3)
time.sleep(float(os.environ.get("STEP_SLEEP", "0")) if stage != "c" else 0)
os.makedirs("out", exist_ok=True)
open(f"out/{stage}.txt", "w").write(stage)
with open(os.environ["SPANS"], "a") as f:
    f.write(json.dumps([stage, start, time.time(), os.environ.get("OMP_NUM_THREADS")]) + "\\n")
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    monkeypatch.setenv("SPANS", str(tmp_path / "spans.jsonl"))
    monkeypatch.setenv("STEP_SLEEP", "3")
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "config", "--local", "core.analytics", "false"]):
        subprocess.run(cmd, cwd=root, check=True)
    (root / "dvc.yaml").write_text(DVC_YAML)
    (root / "step.py").write_text(STEP)
    return root


def _spans(root: Path) -> dict[str, tuple[float, float, str]]:
    lines = (root.parent / "spans.jsonl").read_text().splitlines()
    return {s: (t0, t1, threads) for s, t0, t1, threads in map(json.loads, lines)}


def _parent_runs(root: Path) -> list[tuple[str, str]]:
    """(status, orchestrator tag) of the pipeline parent runs in the project's mlflow.db."""
    db = sqlite3.connect(root / "mlflow.db")
    return db.execute(
        "select r.status, t.value from runs r join tags t on t.run_uuid = r.run_uuid "
        "where t.key = 'corecode.orchestrator'"
    ).fetchall()


def _dvc_status(root: Path) -> dict:
    res = subprocess.run(["dvc", "status", "--json"], cwd=root, capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def test_independent_stages_overlap_and_the_join_waits(project):
    lines: list[str] = []
    seconds = repro(project, jobs=2, threads=3, echo=lines.append)
    spans = _spans(project)
    (a0, a1, a_threads), (b0, b1, _), (c0, _, _) = spans["a"], spans["b"], spans["c"]
    assert max(a0, b0) < min(a1, b1), "a and b ran one after the other"
    assert c0 >= max(a1, b1), "c started before both of its inputs were done"
    assert a_threads == "3"
    assert list(seconds)[-1] == "c" and set(seconds) == {"a", "b", "c"}
    assert _dvc_status(project) == {}  # dvc.lock records all three, as after dvc repro
    assert any(line.startswith("a | started") for line in lines)
    assert _parent_runs(project) == [("FINISHED", "corecode-repro")]  # one MLflow parent for the three stages
    # up to date now: nothing runs and no second parent run is opened
    assert repro(project, jobs=2, echo=lines.append) == {}
    assert lines[-1] == "every stage is up to date (dvc status)"
    assert len((project.parent / "spans.jsonl").read_text().splitlines()) == 3
    assert len(_parent_runs(project)) == 1


def test_one_job_runs_stages_one_at_a_time(project, monkeypatch):
    monkeypatch.setenv("STEP_SLEEP", "1")
    repro(project, ["c"], jobs=1, echo=lambda line: None)
    spans = sorted(_spans(project).values())
    assert all(prev[1] <= nxt[0] for prev, nxt in zip(spans, spans[1:]))


def test_a_failed_stage_stops_what_depends_on_it_and_keeps_the_rest(project, monkeypatch):
    monkeypatch.setenv("FAIL_STAGE", "b")
    lines: list[str] = []
    with pytest.raises(ReproFailed, match=r"stage 'b' failed \(dvc repro exit 255\); not started: c") as err:
        repro(project, jobs=2, echo=lines.append)
    assert "failing" in err.value.tail and "about to fail" not in "\n".join(err.value.tail)  # \r: the last frame
    assert (project / "out" / "a.txt").read_text() == "a"  # a ran beside b and finished
    assert set(_spans(project)) == {"a"}
    status = _dvc_status(project)
    assert "a" not in status and "b" in status and "c" in status
    assert _parent_runs(project) == [("FAILED", "corecode-repro")]


def test_cli_names_the_failed_stage(project, monkeypatch):
    monkeypatch.setenv("FAIL_STAGE", "a")
    res = subprocess.run(
        [sys.executable, "-m", "corecode.cli", "repro", "--repo", str(project), "-j", "2"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 1
    assert "error: stage 'a' failed (dvc repro exit 255); not started: c" in res.stderr


def test_bad_arguments(project):
    with pytest.raises(ValueError, match="unknown stage"):
        repro(project, ["nope"])
    with pytest.raises(ValueError, match="jobs and threads must be at least 1"):
        repro(project, jobs=0)


def test_stages_changed_reports_dvc_status_and_its_failures(project):
    from corecode.pipeline.dag import DvcStatusFailed, stages_changed
    from flows.pipeline import StageFailed, stage_up_to_date

    assert set(stages_changed(project, ["a", "b"])) == {"a", "b"}  # never run: both differ from dvc.lock
    repro(project, ["a"], jobs=1, echo=lambda line: None)
    assert stages_changed(project, ["a"]) == {} and stage_up_to_date("a", project)
    assert set(stages_changed(project, [])) == {"b", "c"}  # no stages: the whole pipeline
    (project / "dvc.lock").write_text("schema: '2.0'\nstages: [unclosed\n")
    with pytest.raises(DvcStatusFailed, match="dvc status exited with") as err:
        stages_changed(project, ["a"])
    assert "dvc.lock" in err.value.output  # DVC's own message names the file
    with pytest.raises(StageFailed, match="stage 'a'"):  # the Prefect task retries it as a stage failure
        stage_up_to_date("a", project)


def test_only_changed_stages_and_what_follows_them_run(project, monkeypatch):
    monkeypatch.setenv("STEP_SLEEP", "0")
    repro(project, jobs=2, echo=lambda line: None)
    assert stages_to_run(project) == []
    dvc_yaml = project / "dvc.yaml"
    dvc_yaml.write_text(DVC_YAML.replace("cmd: python step.py a", "cmd: python ./step.py a"))  # a's command changed
    assert stages_to_run(project) == [("a", ("changed command",), ()), ("c", (), ("a",))]
    res = subprocess.run(
        [sys.executable, "-m", "corecode.cli", "repro", "--repo", str(project), "--dry"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "a | changed command",
        "c | checked after a",
        "1 stage(s) changed; 1 more start after them and run only if their inputs change",
    ]
    assert len(_spans(project)) == 3  # --dry ran nothing
    lines: list[str] = []
    assert set(repro(project, jobs=2, echo=lines.append)) == {"a", "c"}
    assert not any(line.startswith("b ") for line in lines)  # b was never started
    # a wrote what it wrote before, so c's own dvc repro found nothing changed and skipped its command
    ran = [json.loads(line)[0] for line in (project.parent / "spans.jsonl").read_text().splitlines()]
    assert ran[3:] == ["a"] and _dvc_status(project) == {}
    # --force runs a stage dvc status calls up to date
    assert stages_to_run(project, ["b"], force=True) == [("b", ("forced",), ())]
    assert set(repro(project, ["b"], force=True, echo=lambda line: None)) == {"b"}
    ran = [json.loads(line)[0] for line in (project.parent / "spans.jsonl").read_text().splitlines()]
    assert ran[3:] == ["a", "b"]


def test_stage_commands_find_this_environments_tools_without_an_activated_venv(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=root, check=True)
    (root / "dvc.yaml").write_text("stages:\n  help:\n    cmd: corecode --help > help.txt\n    outs: [help.txt]\n")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no venv: `corecode` is only beside this interpreter
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
    assert set(repro(root, echo=lambda line: None)) == {"help"}
    assert "repro" in (root / "help.txt").read_text()


def test_stage_env_is_what_every_orchestrator_hands_a_stage(monkeypatch):
    from corecode.pipeline.dag import stage_env
    from corecode.tracking.runs import PARENT_ENV

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv(PARENT_ENV, raising=False)
    env = stage_env(OMP_NUM_THREADS="3")
    assert env["PATH"] == f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin" and env["OMP_NUM_THREADS"] == "3"
    assert PARENT_ENV not in env and env.get("MLFLOW_TRACKING_URI") == os.environ.get("MLFLOW_TRACKING_URI")
    env = stage_env("run-1", "sqlite:///x.db")
    assert env[PARENT_ENV] == "run-1" and env["MLFLOW_TRACKING_URI"] == "sqlite:///x.db"
