"""The Prefect pipeline flow on a tiny real DVC project, against a real Prefect server (prefect_test_harness)."""

from __future__ import annotations

import base64
import hashlib

import pytest
import yaml
from conftest import DVC_YAML, make_project
from mlflow import MlflowClient

from corecode.pipeline.dag import stage_order
from flows.pipeline import pipeline


def _counts(side, stage) -> list[str]:
    f = side / f"{stage}.count"
    return f.read_text().splitlines() if f.exists() else []


def test_stage_order_follows_deps_not_file_order(project):
    assert stage_order(project) == ["prepare", "train", "evaluate"]
    assert stage_order(project, ["train"]) == ["prepare", "train"]
    assert stage_order(project, ["evaluate", "prepare"], upstream=False) == ["prepare", "evaluate"]
    with pytest.raises(ValueError, match=r"unknown stage\(s\) \['nope'\]"):
        stage_order(project, ["nope"])
    # foreach stages expand as DVC expands them; a target may name the whole group
    spec = yaml.safe_load(DVC_YAML)
    spec["stages"]["score"] = {
        "foreach": ["x", "y"],
        "do": {
            "cmd": "python steps.py score ${item}",
            "deps": ["data/metrics.json"],
            "outs": ["data/score_${item}.txt"],
        },
    }
    (project / "dvc.yaml").write_text(yaml.safe_dump(spec))
    assert stage_order(project, ["score"]) == ["prepare", "train", "evaluate", "score@x", "score@y"]
    cyc = {
        "stages": {
            "x": {"cmd": "a", "deps": ["y.txt"], "outs": ["x.txt"]},
            "y": {"cmd": "b", "deps": ["x.txt"], "outs": ["y.txt"]},
        }
    }
    (project / "dvc.yaml").write_text(yaml.safe_dump(cyc))
    with pytest.raises(ValueError, match="cannot read the DVC pipeline: .*both a dependency and an output"):
        stage_order(project)


@pytest.mark.slow  # four pipeline runs of real DVC subprocesses: ~40 s on 2 idle cores
def test_flow_leaves_same_lock_as_dvc_repro_and_skips_when_up_to_date(prefect_server, tmp_path, monkeypatch):
    import subprocess

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("SIDE", str(tmp_path / "side_repro"))
    by_dvc = make_project(tmp_path / "by_dvc")
    subprocess.run(["dvc", "repro"], cwd=by_dvc, check=True, capture_output=True)

    side = tmp_path / "side_flow"
    monkeypatch.setenv("SIDE", str(side))
    by_flow = make_project(tmp_path / "by_flow")
    kw = dict(repo_dir=str(by_flow), retry_backoff_s=0, report="data/report.md", metrics="data/metrics.json")
    first = pipeline(**kw)
    assert [(r["stage"], r["status"]) for r in first] == [("prepare", "ran"), ("train", "ran"), ("evaluate", "ran")]
    assert (by_flow / "dvc.lock").read_text() == (by_dvc / "dvc.lock").read_text()

    # one MLflow parent run for the flow run, handed to every stage, closed FINISHED
    parents = {_counts(side, s)[0] for s in ("prepare", "train", "evaluate")}
    assert len(parents) == 1
    parent = MlflowClient().get_run(parents.pop())
    assert parent.info.status == "FINISHED" and parent.data.tags["corecode.orchestrator"] == "prefect"
    (child,) = MlflowClient().search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    assert child.data.tags["corecode.stage"] == "evaluate" and child.data.metrics["pass_at_1"] == 0.5

    # the parent carries the dvc.lock the flow left: the lock that records its result
    lock = hashlib.sha256((by_flow / "dvc.lock").read_bytes()).hexdigest()
    assert parent.data.tags["corecode.dvc_lock_sha256"] == lock

    second = pipeline(**kw, return_state=True)  # nothing changed: every stage is skipped, no command runs
    assert {r["status"] for r in second.result()} == {"skipped"}
    assert [len(_counts(side, s)) for s in ("prepare", "train", "evaluate")] == [1, 1, 1]
    # ... and shows as skipped: Prefect task runs end in a `Skipped` state, MLflow lists a `(skipped)` run per stage
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        tasks = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[second.state_details.flow_run_id]))
        )
    assert sorted((t.name, t.state.name, t.state.type.value) for t in tasks) == [
        (s, "Skipped", "COMPLETED") for s in ("evaluate", "prepare", "train")
    ]
    (flow_parent,) = MlflowClient().search_runs(
        [parent.info.experiment_id], "tags.`corecode.kind` = 'pipeline'", order_by=["start_time DESC"], max_results=1
    )
    skipped = MlflowClient().search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{flow_parent.info.run_id}'"
    )
    assert sorted(r.info.run_name for r in skipped) == ["evaluate (skipped)", "prepare (skipped)", "train (skipped)"]
    assert {r.data.tags["corecode.skipped"] for r in skipped} == {"true"}

    (by_flow / "params.yaml").write_text((by_flow / "params.yaml").read_text().replace("lr: 0.1", "lr: 0.2"))
    third = pipeline(**kw)  # a param of `train` changed: train and its downstream re-run, prepare stays cached
    assert [r["status"] for r in third] == ["skipped", "ran", "ran"]
    assert "lr=0.2" in (by_flow / "data/model.txt").read_text()

    with get_client(sync_client=True) as client:
        keys = {"corecode-stages", "corecode-metrics", "corecode-report"}
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=sorted(keys))))
    assert {a.key for a in arts} == keys
    report = next(a for a in arts if a.key == "corecode-report")
    png = base64.b64encode((by_flow / "data/plots/bars.png").read_bytes()).decode()
    assert report.data == f"# toy report\n\n![bars](data:image/png;base64,{png})\n"  # the UI shows the plot itself
    metrics = next(a for a in arts if a.key == "corecode-metrics")
    assert "pass_at_2" in str(metrics.data) and "0.75" in str(metrics.data)


def test_transient_failure_is_retried(prefect_server, project, tmp_path, monkeypatch):
    monkeypatch.setenv("FAIL_ONCE", "train")
    results = pipeline(repo_dir=str(project), retries=2, retry_backoff_s=0, track=False)
    assert [r["status"] for r in results] == ["ran", "ran", "ran"]
    assert len(_counts(tmp_path / "side", "train")) == 2  # failed once, succeeded on the retry
    assert (project / "dvc.lock").exists()


def test_permanent_failure_is_not_retried_and_fails_the_parent(prefect_server, project, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("FAIL_ALWAYS", "train")
    state = pipeline(repo_dir=str(project), retries=3, retry_backoff_s=0, return_state=True)
    assert state.is_failed()
    side = tmp_path / "side"
    assert len(_counts(side, "train")) == 1  # exit code 2 = usage error: no retry
    assert _counts(side, "evaluate") == []  # downstream never ran
    assert MlflowClient().get_run(_counts(side, "train")[0]).info.status == "FAILED"
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:  # the stage table still tells what happened
        (table,) = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["corecode-stages"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])),
        )
    assert '"failed"' in table.data and '"not run"' in table.data and '"ran"' in table.data
