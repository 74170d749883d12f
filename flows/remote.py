"""Share-nothing pipeline: each stage runs on a worker of its pool, in that worker's own checkout of the flow's
commit, and the stages exchange data only through the DVC remote (docs/deploy.md).

- ``corecode-stage`` (deployments ``stage-cpu`` / ``stage-gpu``, one per pool): one task that runs
  :func:`corecode.deploy.worker.run_stage` (pull the stage's inputs, ``dvc repro --single-item``, push its outputs)
  and returns the stage's ``dvc.lock`` entry. Transient errors (a service that does not answer, a failed transfer)
  are retried with exponential backoff; a bad input (the command's exit 2) is not.
- ``corecode-pipeline-remote`` (deployment ``pipeline-remote``, on the cpu pool): resolves the commit, opens the
  MLflow parent run and runs the stages in dependency order, handing each the lock entries so far: a CPU stage as a
  task of its own, in the CPU worker's checkout; a training stage as a ``corecode-stage`` run of ``stage-gpu``, which
  a worker of the gpu pool picks up and runs in its checkout. It assembles the run's
  ``dvc.lock``: a Prefect artifact ``corecode-dvc-lock`` and a commit on the run branch ``corecode-runs/<run key>``
  of the git remote (``git checkout corecode-runs/<key> && dvc pull`` gives the run's outputs). A stage run that
  ends Crashed (its worker was lost: no heartbeat, see deploy/prefect_setup.py) is submitted again, and another
  worker of the pool picks it up; GRPO resumes there from the checkpoint the lost worker pushed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from corecode.pipeline.dag import stage_order
from corecode.tracking.runs import parent_run
from flows.pipeline import GPU_STAGES, publish_artifacts

STAGE_FLOW = "corecode-stage"


def _transient(task, task_run, state) -> bool:
    """Retry condition: anything but a stage's bad-input failure (exit 2) or a missing/unknown input."""
    from corecode.deploy.worker import StageError

    try:
        state.result()
    except StageError as e:
        return not e.permanent
    except Exception:
        return True
    return False


@task(task_run_name="{stage}", retry_condition_fn=_transient, cache_policy=NO_CACHE, persist_result=True)
def stage_in_checkout(
    stage: str, git_url: str, commit: str, lock: dict, run_key: str, parent_run_id: str | None
) -> dict[str, Any]:
    from corecode.deploy.worker import run_stage

    logger = get_run_logger()
    return run_stage(stage, git_url, commit, lock, run_key, parent_run_id=parent_run_id, log=logger.info)


@flow(name=STAGE_FLOW, flow_run_name="{stage}", log_prints=True, persist_result=True)
def stage_flow(
    stage: str,
    git_url: str,
    commit: str,
    run_key: str,
    lock: dict | None = None,
    parent_run_id: str | None = None,
    retries: int = 2,
    retry_backoff_s: float = 30.0,
) -> dict[str, Any]:
    """Run one stage in this worker's checkout (``CORECODE_WORKER_DIR``); returns its dvc.lock entry and costs.

    ``retries``/``retry_backoff_s``: attempts after a transient failure, waiting backoff * 2**n seconds.
    """
    tags = ["gpu"] if stage.split("@", 1)[0] in GPU_STAGES else ["cpu"]
    delays = exponential_backoff(backoff_factor=retry_backoff_s)(retries) if retry_backoff_s > 0 and retries else 0
    runner = stage_in_checkout.with_options(retries=retries, retry_delay_seconds=delays, tags=tags)
    return runner(stage, git_url, commit, lock or {}, run_key, parent_run_id)


def resolve_commit(git_url: str, ref: str) -> str:
    """The commit ``ref`` (a branch, tag or sha) names on ``git_url``, as the workers will fetch it."""
    if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref):
        return ref
    res = subprocess.run(["git", "ls-remote", git_url, ref], capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        raise ValueError(f"{git_url}: no ref {ref!r} ({res.stderr.strip() or 'not found'})")
    return res.stdout.split()[0]


def _submit(deployment: str, parameters: dict, lost_worker_retries: int, logger) -> dict[str, Any]:
    """Run the stage deployment; a Crashed run (lost worker) is submitted again, up to ``lost_worker_retries``."""
    from prefect.deployments import run_deployment

    for attempt in range(lost_worker_retries + 1):
        run = run_deployment(deployment, parameters=parameters, timeout=None, poll_interval=3)
        if run.state.is_completed():
            return run.state.result()
        if run.state.is_crashed() and attempt < lost_worker_retries:
            logger.warning(
                "%s: flow run %s crashed (%s): submitting it again", parameters["stage"], run.name, run.state.message
            )
            continue
        raise RuntimeError(
            f"stage {parameters['stage']!r}: flow run {run.name} ended {run.state.name}: {run.state.message}"
        )
    raise AssertionError("unreachable")


def _commit_run_branch(root: Path, lock_text: str, run_key: str, logger) -> str | None:
    """Commit the assembled dvc.lock on ``corecode-runs/<run_key>`` of the git remote; returns the branch."""
    branch = f"corecode-runs/{run_key}"
    (root / "dvc.lock").write_text(lock_text)
    ident = ["-c", "user.name=corecode", "-c", "user.email=corecode@localhost"]
    steps = [
        ["git", "add", "dvc.lock"],
        ["git", *ident, "commit", "-q", "-m", f"corecode run {run_key}: dvc.lock"],
        ["git", "push", "-q", "origin", f"HEAD:refs/heads/{branch}"],
    ]
    for cmd in steps:
        res = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        if res.returncode != 0:
            logger.warning("run branch not written (%s): %s", " ".join(cmd), res.stderr.strip())
            return None
    return branch


@flow(name="corecode-pipeline-remote", log_prints=True, persist_result=True)
def pipeline_remote(
    git_url: str | None = None,
    ref: str | None = None,
    stages: list[str] | None = None,
    upstream: bool = True,
    retries: int = 2,
    retry_backoff_s: float = 30.0,
    lost_worker_retries: int = 2,
    track: bool = True,
    run_branch: bool = True,
    gpu_deployment: str = f"{STAGE_FLOW}/stage-gpu",
) -> dict[str, Any]:
    """Run the pipeline of ``ref`` (default ``CORECODE_GIT_BRANCH``) of ``git_url`` (default ``CORECODE_GIT_URL``)
    stage by stage on the workers of the cpu and gpu pools; returns ``{commit, run_key, lock, stages}``.

    ``stages``/``upstream``: as in ``corecode-pipeline``; stages left out must have no consumer in this run.
    ``retries``/``retry_backoff_s``: each stage's attempts after a transient failure. ``lost_worker_retries``: how
    often a stage whose worker was lost is submitted again. ``run_branch``: commit the run's dvc.lock to the git
    remote as ``corecode-runs/<run key>``.
    """
    from prefect.runtime import flow_run

    from corecode.deploy.worker import checkout

    logger = get_run_logger()
    git_url = git_url or os.environ.get("CORECODE_GIT_URL")
    ref = ref or os.environ.get("CORECODE_GIT_BRANCH") or "HEAD"
    if not git_url:
        raise ValueError("no git URL: pass git_url or set CORECODE_GIT_URL (services.env)")
    commit = resolve_commit(git_url, ref)
    run_key = f"{time.strftime('%Y%m%d-%H%M%S')}-{(flow_run.get_id() or 'local')[:8]}"
    if not os.environ.get("CORECODE_WORKER_DIR"):
        os.environ["CORECODE_WORKER_DIR"] = tempfile.mkdtemp(prefix="corecode-worker-")
    root = checkout(os.environ["CORECODE_WORKER_DIR"], git_url, commit)
    order = stage_order(root, stages, upstream)
    logger.info("commit %s, run %s: %s", commit[:12], run_key, " -> ".join(order))

    lock: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    tags = {"corecode.git_commit": commit, "corecode.run_key": run_key}
    try:
        with parent_run(root, track, tags, os.environ.get("MLFLOW_TRACKING_URI")) as (parent, _):
            try:
                for stage in order:
                    gpu = stage.split("@", 1)[0] in GPU_STAGES
                    params = dict(
                        stage=stage,
                        git_url=git_url,
                        commit=commit,
                        run_key=run_key,
                        lock=dict(lock),
                        parent_run_id=parent,
                        retries=retries,
                        retry_backoff_s=retry_backoff_s,
                    )
                    if gpu:
                        result = _submit(gpu_deployment, params, lost_worker_retries, logger)
                    else:
                        result = stage_flow.fn(**params)  # this worker's checkout, as a task of this flow run
                    lock[stage] = result["lock"]
                    rows.append(_stage_row(stage, gpu, result))
            finally:  # a failed run still records its lock so far, before its parent run is closed FAILED
                branch = _record_lock(root, lock, run_key, commit, run_branch, logger)
    finally:
        _publish_results(root, lock, rows)
    return {"commit": commit, "run_key": run_key, "lock": lock, "stages": rows, "branch": branch}


def _record_lock(root: Path, lock: dict[str, Any], run_key: str, commit: str, run_branch: bool, logger) -> str | None:
    """The run's ``dvc.lock`` as the Prefect artifact ``corecode-dvc-lock`` and, with ``run_branch``, committed to the
    run branch; returns the branch's name (None if not committed)."""
    lock_text = yaml.safe_dump({"schema": "2.0", "stages": lock}, sort_keys=False)
    create_markdown_artifact(
        f"```yaml\n{lock_text}```",
        key="corecode-dvc-lock",
        description=f"dvc.lock of run {run_key} at {commit[:12]}",
    )
    return _commit_run_branch(root, lock_text, run_key, logger) if run_branch and lock else None


def _stage_row(stage: str, gpu: bool, result: dict[str, Any]) -> dict[str, Any]:
    """One stage's row of the stage table: its pool, run time and DVC-remote transfers."""
    return {
        "stage": stage,
        "pool": "gpu" if gpu else "cpu",
        "run_s": result["run"]["seconds"],
        "pull_s": result["pull"]["seconds"],
        "pull_bytes": result["pull"]["bytes"],
        "push_s": result["push"]["seconds"],
        "push_bytes": result["push"]["bytes"],
        "ckpt_push_s": result.get("checkpoint_push", {}).get("seconds", 0.0),
        "ckpt_push_bytes": result.get("checkpoint_push", {}).get("bytes", 0),
        "resumed_from": ", ".join(result["restored"]) or None,
    }


REPORT_FILES = ("data/reports/report.md", "data/reports/plots", "data/reports/metrics.json")


def _publish_results(root: Path, lock: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """The stage table, and (once the report stage ran) the report and metrics, pulled like any input."""
    from corecode.deploy.worker import pull_inputs, stage_outputs

    if "report" in lock:
        cached = dict(stage_outputs(root).get("report", []))
        wanted = [
            {"path": o["path"], "md5": o["md5"], "cached": cached.get(o["path"], True), "stage": "report"}
            for o in lock["report"].get("outs", [])
            if o["path"] in REPORT_FILES
        ]
        pull_inputs(root, wanted)
    publish_artifacts(root, rows, "data/reports/report.md", "data/reports/metrics.json")
