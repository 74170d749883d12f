"""Parent/nested stage runs against a real MLflow sqlite store."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest
from mlflow import MlflowClient

from corecode.config import Params
from corecode.tracking.config import TrackingParams
from corecode.tracking.runs import PARENT_ENV, end_parent_run, flatten_params, stage_run, start_parent_run


def _tp(**kw) -> TrackingParams:
    return TrackingParams(log_system_metrics=False, **kw)


def test_flatten_params_dots_sections_and_keeps_every_leaf():
    flat = flatten_params({"sft": {"lr": 1e-5, "lora": {"r": 8}}, "seed": 3, "tags": ["a", "b"], "empty": {}})
    assert flat == {"sft.lr": "1e-05", "sft.lora.r": "8", "seed": "3", "tags": '["a", "b"]', "empty": "{}"}
    whole = flatten_params(Params())
    assert whole["tracking.uri"] == "sqlite:///mlflow.db"
    assert whole["promote.checkpoints.planner"] == "data/checkpoints/grpo_planner"
    assert not any(v.startswith("{") and v != "{}" for v in whole.values())  # no section logged as one blob


def test_stages_share_parent_params_and_tags(store, tmp_path):
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")
    params = Params(tracking=_tp())
    client = MlflowClient()
    with stage_run("build_data", params) as a:
        assert a.enabled and a.parent_run_id
        assert client.get_run(a.parent_run_id).info.status == "RUNNING"  # while a stage runs
    assert client.get_run(a.parent_run_id).info.status == "FINISHED"  # between stages: nothing left hanging
    with stage_run("evaluate", params) as b:
        pass
    assert a.parent_run_id == b.parent_run_id
    run = client.get_run(a.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlflow.parentRunId"] == a.parent_run_id
    assert run.data.tags["corecode.stage"] == "build_data"
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert run.data.tags["corecode.git_commit"] == head
    # run by hand: no dvc.lock records this result, so no lock hash; dirty, since HEAD has no dvc.lock
    assert "corecode.dvc_lock_sha256" not in run.data.tags and run.data.tags["corecode.git_dirty"] == "true"
    assert run.data.params["tracking.experiment"] == "corecode"
    assert run.data.params["corecode.seed"] == "0"  # top-level scalars are prefixed (a trainer logs its own `seed`)
    assert len(run.data.params) == len(flatten_params(params))  # > 100 params: batching works
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{a.parent_run_id}'"
    )
    assert sorted(r.data.tags["corecode.stage"] for r in children) == ["build_data", "evaluate"]


STAGE_PY = """\
import sys
from corecode.tracking.config import TrackingParams
from corecode.tracking.runs import stage_run
with stage_run(sys.argv[1], {}, TrackingParams(log_system_metrics=False)):
    open(sys.argv[1] + ".out", "w").write("x")
"""


@pytest.mark.slow  # two `dvc repro` runs of two stage processes that each import mlflow
def test_each_dvc_repro_gets_its_own_parent(store, tmp_path, monkeypatch):
    """What `dvc repro` alone does: each stage is a fresh process; one parent per `dvc repro` invocation."""
    import yaml

    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    subprocess.run(["dvc", "init", "-q"], check=True)
    (tmp_path / "stage.py").write_text(STAGE_PY)
    stages = {
        "one": {"cmd": "python stage.py one", "outs": ["one.out"]},
        "two": {"cmd": "python stage.py two", "deps": ["one.out"], "outs": ["two.out"]},
    }
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    client = MlflowClient()
    parents = []
    for args in (["dvc", "repro"], ["dvc", "repro", "--force"]):
        res = subprocess.run(args, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        exp = client.get_experiment_by_name("corecode").experiment_id
        runs = client.search_runs([exp], filter_string="tags.`corecode.kind` = 'stage'", order_by=["start_time DESC"])
        latest = {r.data.tags["corecode.stage"]: r for r in runs[:2]}
        assert set(latest) == {"one", "two"}
        (parent,) = {r.data.tags["mlflow.parentRunId"] for r in latest.values()}
        parents.append(parent)
        info = client.get_run(parent)
        assert info.info.status == "FINISHED" and info.data.tags["corecode.dvc_invocation"].startswith("dvc:")
        # each run is tagged with dvc.lock as DVC left it after the stage (the lock that records its result):
        # after `one` the lock holds only `one`; the last stage and the parent carry the final lock
        final = hashlib.sha256((tmp_path / "dvc.lock").read_bytes()).hexdigest()
        tags = {name: _await_tag(client, r.info.run_id) for name, r in latest.items()}
        assert tags["two"] == final and _await_tag(client, parent) == final
        if len(parents) == 1:
            assert tags["one"] != final
        for run_id in [parent, *(r.info.run_id for r in latest.values())]:
            assert client.get_run(run_id).data.tags["corecode.git_dirty"] == "true"  # dvc.lock is not in HEAD
    assert parents[0] != parents[1]


def _await_tag(client, run_id, key="corecode.dvc_lock_sha256", timeout_s=30.0):
    """The lock tag is set by a detached watcher once DVC has written dvc.lock: poll for it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        tag = client.get_run(run_id).data.tags.get(key)
        if tag:
            return tag
        time.sleep(0.2)
    raise AssertionError(f"run {run_id}: no {key} after {timeout_s} s")


def test_env_parent_wins_and_is_left_open(store, monkeypatch):
    tp = _tp()
    parent = start_parent_run(tp, run_name="flow-run")
    monkeypatch.setenv(PARENT_ENV, parent)
    with stage_run("promote", {"a": 1}, tp) as r:
        pass
    assert r.parent_run_id == parent
    assert MlflowClient().get_run(parent).info.status == "RUNNING"  # an env parent is left to its owner
    end_parent_run(tp, parent, "FAILED")
    assert MlflowClient().get_run(parent).info.status == "FAILED"
    with pytest.raises(RuntimeError, match=PARENT_ENV):  # a closed parent is not silently reused
        with stage_run("evaluate", {}, tp):
            pass


def test_failed_stage_marks_runs_failed_and_rerun_continues_parent(store):
    tp = _tp()
    with pytest.raises(ZeroDivisionError):
        with stage_run("grpo", {}, tp) as r:
            raise ZeroDivisionError
    client = MlflowClient()
    assert client.get_run(r.run_id).info.status == "FAILED"
    assert client.get_run(r.parent_run_id).info.status == "FAILED"
    with stage_run("grpo", {}, tp) as again:
        pass
    assert again.parent_run_id == r.parent_run_id
    assert client.get_run(r.parent_run_id).info.status == "FINISHED"


def test_stale_parent_is_not_reused(store, tmp_path):
    tp = _tp(parent_ttl_hours=1.0)
    with stage_run("a", {}, tp) as r:
        pass
    f = tmp_path / tp.parent_run_file
    saved = json.loads(f.read_text())
    f.write_text(json.dumps({**saved, "touched": time.time() - 2 * 3600}))
    with stage_run("b", {}, tp) as s:
        pass
    assert s.parent_run_id != r.parent_run_id


def test_disabled_tracking_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'never.db'}")
    with stage_run("evaluate", Params(tracking=TrackingParams(enabled=False))) as r:
        r.log_metrics({"x": 1.0})
        r.log_artifacts(tmp_path / "missing")  # no-op, not an error, when off
    assert not r.enabled
    assert list(tmp_path.iterdir()) == []


def test_artifacts_metrics_and_system_metrics(store, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out/a.txt").write_text("hello")
    tp = TrackingParams(log_system_metrics=True, system_metrics_interval_s=0.2)
    with stage_run("evaluate", {}, tp) as r:
        r.log_metrics({"pass_at_1": 0.5}, step=0)
        r.log_artifacts(tmp_path / "out", "outs")
        r.log_dict({"k": 1}, "d.json")
        with pytest.raises(FileNotFoundError, match="nope"):
            r.log_artifacts(tmp_path / "nope")
        time.sleep(1.0)
    run = MlflowClient().get_run(r.run_id)
    assert run.data.metrics["pass_at_1"] == 0.5
    assert any(k.startswith("system/cpu_utilization") for k in run.data.metrics), run.data.metrics.keys()
    names = {a.path for a in MlflowClient().list_artifacts(r.run_id)} | {
        a.path for a in MlflowClient().list_artifacts(r.run_id, "outs")
    }
    assert {"outs/a.txt", "d.json"} <= names


def test_stages_started_together_on_a_fresh_store_share_one_experiment(tmp_path):
    """Several stage processes (e.g. a Prefect worker running independent stages) creating the sqlite store at once:
    without the retry in ``configure`` one of them failed with "table experiments already exists"."""
    code = (
        "from corecode.tracking.config import TrackingParams\nfrom corecode.tracking.runs import configure\n"
        f"print(configure(TrackingParams(uri='sqlite:///{tmp_path}/mlflow.db', experiment='race')))"
    )
    env = {**os.environ, "MLFLOW_TRACKING_URI": "", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-500:] for _, err in outs]
    assert len({out.strip().splitlines()[-1] for out, _ in outs}) == 1


def test_a_late_watcher_of_an_earlier_stage_leaves_the_parent_to_the_later_one(store, tmp_path, monkeypatch):
    """Each stage's lock watcher tags its stage run with the lock it read; it tags the parent only while dvc.lock is
    still that lock, so an earlier stage's watcher that finishes last cannot put an older lock on the parent."""
    from corecode.tracking import lockwatch, runs

    client = MlflowClient()
    exp = client.create_experiment("w")
    stage, parent = (client.create_run(exp).info.run_id for _ in range(2))
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {one: {}}\n")
    after_one = runs.file_sha256(tmp_path / "dvc.lock")

    def watch():  # a watcher whose dvc process is gone: it reads the lock at once and tags
        lockwatch.main([store, "dvc:1:0", "-", stage, parent])
        return {r: client.get_run(r).data.tags.get("corecode.dvc_lock_sha256") for r in (stage, parent)}

    assert watch() == {stage: after_one, parent: after_one}  # the lock has not moved on: both tagged
    real = runs.lock_tags()
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {one: {}, two: {}}\n")  # the next stage locked
    monkeypatch.setattr(runs, "lock_tags", lambda cwd=".": real | {"corecode.dvc_lock_sha256": "older"})
    assert watch() == {stage: "older", parent: after_one}  # read before the next stage: the parent is left alone
