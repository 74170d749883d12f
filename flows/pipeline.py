"""Prefect flow that runs the DVC pipeline stage by stage, so each stage is a retried, logged, observable task.

Each task runs ``dvc repro --single-item <stage>``: DVC still decides what a stage reads and writes and records it
in dvc.lock, so a flow run leaves the same dvc.lock as ``dvc repro``. The flow adds what DVC lacks: retries with
exponential backoff on transient failures, a visible skip for stages ``dvc status`` reports up to date (the task
ends in a ``Skipped`` state and the MLflow parent gets a ``<stage> (skipped)`` run), a ``gpu`` tag on training stages
(for a tag-based concurrency limit), one MLflow parent run for all stages (``CORECODE_PARENT_RUN_ID``), and the
report (its plots inside it) and metrics as Prefect artifacts.

Stages run one at a time in dependency order, each with the worker's cores to itself (``corecode repro --jobs``
runs independent stages of one checkout side by side).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Completed, State
from prefect.tasks import exponential_backoff

from corecode.pipeline.dag import DvcStatusFailed, stage_env, stage_order, stages_changed
from corecode.tracking.runs import parent_run

# Stages that train on an accelerator: tagged "gpu" so `prefect concurrency-limit create gpu 1` serialises them
# across flow runs, and the GPU deployments (prefect.yaml) select them.
GPU_STAGES = frozenset({"sft", "grpo", "grpo_ptx", "grpo_single", "magrpo"})
# A stage command exiting with one of these is a usage/input error (typer's exit 2): retrying cannot fix it.
PERMANENT_EXIT_CODES = (2,)


class StageFailed(RuntimeError):
    """``dvc repro`` of one stage failed; ``permanent`` when its command reported a usage/input error."""

    def __init__(self, stage: str, returncode: int, output: str):
        self.stage, self.returncode, self.output = stage, returncode, output
        self.permanent = any(f"exited with {c}" in output for c in PERMANENT_EXIT_CODES)
        super().__init__(f"stage {stage!r}: dvc repro exited with {returncode}\n{output[-4000:]}")


# --------------------------------------------------------------------------------------------------------- tasks


def _dvc(args: list[str], repo_dir: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The DVC of this Python environment (a worker's PATH need not contain the venv)."""
    cmd = [sys.executable, "-m", "dvc", *args]
    return subprocess.run(cmd, cwd=repo_dir, env=env, capture_output=True, text=True)


def stage_up_to_date(stage: str, repo_dir: Path) -> bool:
    """``dvc status <stage>`` reports nothing changed (deps, outs, params and cmd match dvc.lock); a failing
    ``dvc status`` is a stage failure, which Prefect retries."""
    try:
        return stages_changed(repo_dir, [stage]) == {}
    except DvcStatusFailed as e:
        raise StageFailed(stage, e.returncode, e.output) from e


def _retry_transient(task, task_run, state) -> bool:
    """Prefect retry condition: retry any stage failure except usage/input errors (see PERMANENT_EXIT_CODES)."""
    try:
        state.result()
    except StageFailed as e:
        return not e.permanent
    except Exception:
        return True
    return False


@task(task_run_name="{stage}", retry_condition_fn=_retry_transient, log_prints=True)
def run_stage(
    stage: str, repo_dir: str, parent_run_id: str | None = None, tracking_uri: str | None = None
) -> dict[str, Any] | State:
    """Run one DVC stage unless ``dvc status`` says it is up to date; returns ``{stage, status, seconds}``.

    A stage that is up to date ends in a ``Skipped`` state (of type COMPLETED, so downstream tasks go on) that
    carries the same dict, and gets a ``<stage> (skipped)`` run under the MLflow parent. The stage process gets the
    MLflow parent run id and tracking URI through the environment, so its ``stage_run`` nests under this flow
    run's parent.
    """
    logger = get_run_logger()
    root = Path(repo_dir)
    if stage_up_to_date(stage, root):
        logger.info("%s: up to date (dvc status clean), skipped", stage)
        if parent_run_id:
            _record_skip(root, stage, parent_run_id, tracking_uri)
        result = {"stage": stage, "status": "skipped", "seconds": 0.0}
        return Completed(name="Skipped", message="up to date in dvc.lock (dvc status clean)", data=result)
    env = stage_env(parent_run_id, tracking_uri)
    start = time.monotonic()
    res = _dvc(["repro", "--single-item", stage], root, env)
    seconds = round(time.monotonic() - start, 2)
    for line in (res.stdout + res.stderr).splitlines()[-50:]:
        logger.info("%s | %s", stage, line)
    if res.returncode != 0:
        raise StageFailed(stage, res.returncode, res.stdout + res.stderr)
    return {"stage": stage, "status": "ran", "seconds": seconds}


def _record_skip(root: Path, stage: str, parent_run_id: str, uri: str | None) -> None:
    from corecode.tracking.runs import checkout_tracking, record_skipped_stage

    record_skipped_stage(checkout_tracking(root, uri), parent_run_id, stage, "dvc status clean", root)


# ---------------------------------------------------------------------------------------------------------- flow


def publish_artifacts(root: Path, results: list[dict], report: str, metrics: str) -> None:
    """Stage results, metrics table and report as Prefect artifacts (visible in the UI)."""
    create_table_artifact(results, key="corecode-stages", description="What each DVC stage did in this flow run")
    mpath = root / metrics
    if mpath.is_file():
        data = json.loads(mpath.read_text())
        rows = [
            {"method": m, "benchmark": b, "pass_at_1": r.get("pass_at_1"), **(r.get("pass_at_k") or {})}
            for m, benches in (data.get("methods") or {}).items()
            for b, r in benches.items()
        ]
        create_table_artifact(rows, key="corecode-metrics", description=f"{metrics}: pass@k per method")
    rpath = root / report
    if rpath.is_file():
        from corecode.tracking.report import embed_images

        # the UI cannot fetch plots/x.png from the repo: the plots go inside the artifact
        text = embed_images(rpath.read_text(), rpath.parent)
        create_markdown_artifact(text, key="corecode-report", description=str(report))


@flow(name="corecode-pipeline", log_prints=True)
def pipeline(
    repo_dir: str = ".",
    stages: list[str] | None = None,
    upstream: bool = True,
    retries: int = 2,
    retry_backoff_s: float = 30.0,
    track: bool = True,
    report: str = "data/reports/report.md",
    metrics: str = "data/reports/metrics.json",
) -> list[dict[str, Any]]:
    """Run the dvc.yaml stages in dependency order, each as a task.

    ``stages``: only these (stage names or foreach groups) and, with ``upstream``, what they depend on; without
    ``upstream`` the named stages run alone (the CPU/GPU deployments split the pipeline this way).
    ``retries``/``retry_backoff_s``: attempts after a transient failure, waiting backoff * 2**n seconds.
    ``track``: open one MLflow parent run for all stages (off: each stage's own ``dvc repro`` gets its own parent).
    ``report``/``metrics``: published as artifacts if present.
    """
    root = Path(repo_dir).resolve()
    order = stage_order(root, stages, upstream)
    get_run_logger().info("stage order: %s", " -> ".join(order))
    delays = exponential_backoff(backoff_factor=retry_backoff_s)(retries) if retry_backoff_s > 0 and retries else 0
    results: list[dict[str, Any]] = []
    try:
        with parent_run(root, track) as (parent, uri):
            for stage in order:
                tags = ["gpu"] if stage.split("@", 1)[0] in GPU_STAGES else ["cpu"]
                runner = run_stage.with_options(retries=retries, retry_delay_seconds=delays, tags=tags)
                result = runner(stage, str(root), parent, uri)
                results.append(result.result() if isinstance(result, State) else result)
    finally:  # a failed run still shows what its stages did
        rest = order[len(results) :]
        rows = results + [
            {"stage": s, "status": "failed" if i == 0 else "not run", "seconds": 0.0} for i, s in enumerate(rest)
        ]
        publish_artifacts(root, rows, report, metrics)
    return results
