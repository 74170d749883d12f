"""The nightly champion evaluation flow and the deployments in prefect.yaml."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_nightly_eval_resolves_champion_and_runs_command(prefect_server, tmp_path, monkeypatch):
    import mlflow
    from mlflow import MlflowClient

    from corecode.tracking.config import TrackingParams
    from corecode.tracking.registry import register_checkpoint
    from corecode.tracking.runs import stage_run
    from flows.nightly_eval import nightly_eval

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    for role in ("planner", "coder"):
        (tmp_path / role).mkdir()
        (tmp_path / role / "config.json").write_text(role)
    with stage_run("promote", {}, TrackingParams(log_system_metrics=False)) as run:
        mv = register_checkpoint({"planner": tmp_path / "planner", "coder": tmp_path / "coder"}, "team", run)
    MlflowClient().set_registered_model_alias("team", "champion", str(mv.version))

    check = "import sys, pathlib; p = pathlib.Path(sys.argv[1]); print((p / 'coder' / 'config.json').read_text())"
    out = nightly_eval(
        repo_dir=str(tmp_path),
        model_uri="models:/team@champion",
        command=f'{sys.executable} -c "{check}" {{model_path}}',
    )
    assert out["version"] == "1" and out["stdout_tail"].strip() == "coder"
    assert Path(out["model_path"]) == tmp_path / ".corecode/models/team/1"

    state = nightly_eval(repo_dir=str(tmp_path), model_uri="models:/team@nope", command="true", return_state=True)
    assert state.is_failed()


def test_nightly_artifact_shows_the_score_and_the_change_since_last_night(prefect_server, tmp_path, monkeypatch):
    import json

    from mlflow import MlflowClient
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    from corecode.tracking.config import TrackingParams
    from corecode.tracking.registry import register_checkpoint
    from corecode.tracking.runs import stage_run
    from flows.nightly_eval import ARTIFACT_KEY, nightly_eval

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    (tmp_path / "coder").mkdir()
    (tmp_path / "coder" / "config.json").write_text("{}")
    with stage_run("promote", {}, TrackingParams(log_system_metrics=False)) as run:
        mv = register_checkpoint({"coder": tmp_path / "coder"}, "team", run)
    MlflowClient().set_registered_model_alias("team", "champion", str(mv.version))

    # stands in for `corecode evaluate`: writes the summary.json the flow reads, with the score it is given
    (tmp_path / "score.py").write_text(
        "import json, pathlib, sys\n"
        "p = pathlib.Path('out/champion/summary.json')\n"
        "p.parent.mkdir(parents=True, exist_ok=True)\n"
        "p.write_text(json.dumps({'benchmarks': {'composite_test': {'pass_at_1': float(sys.argv[1])}}}))\n"
    )
    kw = dict(repo_dir=str(tmp_path), model_uri="models:/team@champion", summary="out/champion/summary.json")
    first = nightly_eval(command=f"{sys.executable} score.py 0.25", **kw)
    second = nightly_eval(command=f"{sys.executable} score.py 0.5", **kw)
    assert first["scores"] == {"composite_test": 0.25} and second["scores"] == {"composite_test": 0.5}
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[ARTIFACT_KEY])), sort=ArtifactSort.CREATED_DESC
        )
    tonight, before = (json.loads(a.data) for a in arts[:2])
    assert before == [
        {"benchmark": "composite_test", "pass_at_1": 0.25, "last_night": None, "change": None, "version": "1"}
    ]
    assert tonight == [
        {"benchmark": "composite_test", "pass_at_1": 0.5, "last_night": 0.25, "change": 0.25, "version": "1"}
    ]
    assert "composite_test pass@1 0.500 (+0.250 since last night)" in arts[0].description

    # a command that writes no summary leaves no stale score behind: the artifact says so
    third = nightly_eval(command="true", **kw)
    assert third["scores"] == {}


def test_prefect_yaml_deployments_point_at_real_flows():
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert {"pipeline-cpu", "train-gpu", "pipeline-full", "nightly-champion-eval"} <= set(deployments)
    for d in deployments.values():
        flow = load_flow_from_entrypoint(str(REPO / d["entrypoint"]))
        assert set(d.get("parameters", {})) <= set(flow.parameters.properties), d["name"]
        assert d["work_pool"]["name"] in ("cpu", "gpu")
    assert deployments["train-gpu"]["work_pool"]["name"] == "gpu"
    assert deployments["nightly-champion-eval"]["schedules"][0]["cron"]
    from flows.pipeline import GPU_STAGES

    assert set(deployments["train-gpu"]["parameters"]["stages"]) <= GPU_STAGES
    assert not set(deployments["pipeline-cpu"]["parameters"]["stages"]) & GPU_STAGES
