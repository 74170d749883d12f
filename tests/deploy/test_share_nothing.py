"""Share-nothing workers end to end, with the real services of deploy/services.sh (PostgreSQL, the MLflow tracking
server, the Prefect server, the DVC remote's sshd) started in a state directory of their own.

A CPU worker and two GPU-pool workers (CPU here), each in its own directory with its own clone, run the tiny pipeline
(tests/deploy/tiny.py) to promotion from a git origin holding a snapshot of this working tree. Faults: the first GPU
worker is killed (its whole process group) once team GRPO has pushed a checkpoint, and the second one resumes from
it; the MLflow server restarts while a training stage runs and no run, metric or artifact is lost; a known_hosts file
with another key for the sshd fails a stage at once (host keys are checked); a stopped sshd
fails a stage with a message naming the DVC remote after the retry policy retried it, and a bad params.yaml (the
command's exit 2) is not retried. The workers share this machine's venv (the installed software), nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from corecode.deploy import local
from corecode.deploy.local import GIT_IDENT, SERVICES

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).parent)]  # `flows` and tiny.py
from tiny import write_tiny_params  # noqa: E402


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    reason = local.can_run_services()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("share_nothing")
    git_url, src = local.snapshot_origin(tmp, write_tiny_params)
    with local.services(git_url, {"CORECODE_LOST_WORKER_AFTER": "60"}) as svc:
        svc["worker_env"]["OMP_NUM_THREADS"] = "1"
        yield {**svc, "tmp": tmp, "src": src, "git_url": git_url}


def _worker(svc, name: str, pool: str, limit: int) -> subprocess.Popen:
    return local.start_worker(svc["worker_env"], svc["tmp"] / name, pool, limit, svc["tmp"] / f"{name}.log")


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    for p in procs:
        p.kill()
    psutil.wait_procs(procs, timeout=30)


def _settings(svc):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    return temporary_settings(updates={PREFECT_API_URL: svc["worker_env"]["PREFECT_API_URL"]})


def _step_dirs(state: Path) -> list[int]:
    base = state / "dvc-remote" / "corecode-run-state"
    return [int(p.name.split("-")[1]) for p in base.glob("*/grpo/data/run_state/grpo_team/step-*")]


def test_pipeline_on_share_nothing_workers_survives_a_lost_gpu_worker_and_an_mlflow_restart(services):
    svc = services
    state, wenv = svc["state"], svc["worker_env"]
    local.deploy(svc["src"], wenv, ["pipeline-remote", "stage-gpu"])
    workers = {
        "cpu": _worker(svc, "cpu-worker", "cpu", 2),
        "gpu1": _worker(svc, "gpu-worker-1", "gpu", 1),
    }
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    try:
        with _settings(svc):
            params = {"retries": 3, "retry_backoff_s": 10, "lost_worker_retries": 2}  # backoff 10, 20, 40 s
            run = run_deployment("corecode-pipeline-remote/pipeline-remote", parameters=params, timeout=0)
            restarted, killed, deadline = False, False, time.time() + 3600
            with get_client(sync_client=True) as client:
                while True:
                    fr = client.read_flow_run(run.id)
                    if fr.state.is_final() or time.time() > deadline:
                        break
                    if not restarted and (svc["tmp"] / "gpu-worker-1" / "checkout").exists():
                        # a training stage is under way on the GPU worker: restart the tracking server under it
                        subprocess.run(["bash", str(SERVICES), "restart-mlflow"], env=svc["env"], check=True)
                        restarted = True
                    if not killed and any(s >= 1 for s in _step_dirs(state)):
                        _kill_tree(workers["gpu1"])  # the host is gone: the worker and its flow runs
                        workers["gpu2"] = _worker(svc, "gpu-worker-2", "gpu", 1)
                        killed = True
                    time.sleep(2)
            assert fr.state.is_completed(), f"{fr.state.name}: {fr.state.message}"
            result = fr.state.result()
    finally:
        for p in workers.values():
            local.stop_worker(p)
    assert restarted and killed

    from corecode.pipeline.dag import stage_order

    order = stage_order(svc["src"])
    assert list(result["lock"]) == order  # every stage, in order, with its dvc.lock entry
    rows = {r["stage"]: r for r in result["stages"]}
    resumed = rows["grpo"]["resumed_from"]
    assert resumed and int(resumed.rsplit("step-", 1)[1]) >= 1, rows["grpo"]  # resumed past step 0
    assert {rows[s]["pool"] for s in order if s.startswith("sft@")} == {"gpu"}
    # the run branch holds the assembled dvc.lock; promotion.json came back through the remote
    lock = subprocess.run(
        ["git", "show", f"{result['branch']}:dvc.lock"], cwd=svc["git_url"], capture_output=True, text=True
    )
    assert yaml.safe_load(lock.stdout)["stages"] == result["lock"]
    promo = next(o for o in result["lock"]["promote"]["outs"] if o["path"] == "data/reports/promotion.json")
    assert json.loads((state / "dvc-remote" / "corecode-uncached" / promo["md5"]).read_text())

    # MLflow: the parent finished, every stage has a finished run with its metrics, artifacts come back over HTTP
    from mlflow import MlflowClient

    client = MlflowClient(wenv["MLFLOW_TRACKING_URI"])
    (exp,) = [e for e in client.search_experiments() if e.name == "corecode"]
    (parent,) = client.search_runs([exp.experiment_id], "tags.`corecode.kind` = 'pipeline'")
    assert parent.info.status == "FINISHED"
    tags = parent.data.tags  # the parent names the commit and run it tracks
    assert (tags["corecode.git_commit"], tags["corecode.run_key"]) == (result["commit"], result["run_key"]), tags
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    finished = {r.data.tags.get("corecode.stage"): r for r in children if r.info.status == "FINISHED"}
    wanted = {s.replace("@", "_") for s in order if s.startswith(("sft@", "evaluate@"))} | {"report", "promote"}
    assert wanted <= set(finished), sorted(wanted - set(finished))
    trained = [r for n, r in finished.items() if n and n.startswith("sft")]
    assert trained and all(r.data.metrics for r in trained)
    for r in trained:  # the per-step loss of every training step is there, restart or not (max_steps 2, logged each)
        assert {m.step for m in client.get_metric_history(r.info.run_id, "loss")} == {1, 2}, r.data.tags
    with_artifacts = [r for r in finished.values() if client.list_artifacts(r.info.run_id)]
    assert with_artifacts
    run_id = with_artifacts[0].info.run_id  # an artifact logged through the server comes back through it
    fetched = client.download_artifacts(run_id, client.list_artifacts(run_id)[0].path)
    assert Path(fetched).exists()


def attempts(state) -> int:
    """How many times the stage flow's task ran (1 + its retries)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        (task_run,) = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
        )
        return task_run.run_count


def test_a_remote_whose_host_key_is_not_the_known_one_is_refused_and_not_retried(services, tmp_path, monkeypatch):
    # dvc-ssh alone checks no host key; a worker checks it against CORECODE_DVC_REMOTE_KNOWN_HOSTS
    # (corecode.deploy.dvc_cli). A known_hosts entry holding another key for the remote's host and port stops the
    # stage at its first SSH connection, as a permanent error naming the file. (With the right file, the pipeline
    # test above goes through it at every pull and push.)
    svc = services
    for k, v in svc["worker_env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CORECODE_WORKER_DIR", str(tmp_path / "forged-worker"))
    host = Path(svc["worker_env"]["CORECODE_DVC_REMOTE_KNOWN_HOSTS"]).read_text().split()[0]  # [127.0.0.1]:PORT
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    key_type, key = (tmp_path / "other.pub").read_text().split()[:2]
    forged = tmp_path / "known_hosts"
    forged.write_text(f"{host} {key_type} {key}\n")
    monkeypatch.setenv("CORECODE_DVC_REMOTE_KNOWN_HOSTS", str(forged))
    from flows.remote import stage_flow

    main = subprocess.run(["git", "rev-parse", "main"], cwd=svc["git_url"], capture_output=True, text=True)
    with _settings(svc):
        kw = dict(git_url=svc["git_url"], run_key="forged", retries=1, retry_backoff_s=1, return_state=True)
        state = stage_flow(stage="params", commit=main.stdout.strip(), **kw)
        assert state.is_failed()
        refused = rf"SSH host key is not the one CORECODE_DVC_REMOTE_KNOWN_HOSTS \({forged}\)"
        with pytest.raises(Exception, match=refused):
            state.result()
        assert attempts(state) == 1  # permanent: not retried


def test_a_stopped_service_is_named_and_retried_and_bad_params_are_not(services, tmp_path, monkeypatch):
    svc = services
    for k, v in svc["worker_env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CORECODE_WORKER_DIR", str(tmp_path / "probe-worker"))
    from flows.remote import stage_flow

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=svc["src"], capture_output=True, text=True).stdout.strip()

    with _settings(svc):
        subprocess.run(["bash", str(SERVICES), "stop-one", "sshd"], env=svc["env"], check=True)
        try:
            kw = dict(git_url=svc["git_url"], run_key="probe", retries=1, retry_backoff_s=1, return_state=True)
            state = stage_flow(stage="params", commit=commit, **kw)
        finally:
            subprocess.run(["bash", str(SERVICES), "start-one", "sshd"], env=svc["env"], check=True)
        assert state.is_failed()
        assert "DVC remote (SSH server) at 127.0.0.1:" in str(state.message) + repr(state.data), state.message
        assert attempts(state) == 2  # connection refused is transient: retried once

        src = svc["src"]
        raw = yaml.safe_load((src / "params.yaml").read_text())
        raw["sft"]["max_steps"] = "abc"
        (src / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        subprocess.run(["git", *GIT_IDENT, "commit", "-qam", "typo"], cwd=src, check=True)
        subprocess.run(["git", "push", "-q", "origin", "HEAD:refs/heads/typo"], cwd=src, check=True)
        bad = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True).stdout.strip()
        state = stage_flow(stage="params", commit=bad, **kw)
        assert state.is_failed()
        with pytest.raises(Exception, match=r"error: params.yaml: invalid parameters: sft.max_steps"):
            state.result()
        assert attempts(state) == 1  # exit 2: bad input, not retried
