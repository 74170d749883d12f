"""MLflow runs for the pipeline: one parent run per pipeline run, one nested run per DVC stage.

Every DVC stage is its own process, so the stages of one pipeline run must agree on a parent run id. Two ways:

1. ``CORECODE_PARENT_RUN_ID`` in the environment (the Prefect flows set it): used as is; whoever
   set it opens and closes the parent.
2. Otherwise: an untracked file (``tracking.parent_run_file``) remembers the last parent and the ``dvc repro``
   process it belongs to (pid + start time of the nearest ``dvc`` ancestor process). A stage under the same
   ``dvc repro`` nests under that parent; a stage under another ``dvc repro`` opens a new one. Stages run by hand
   (no ``dvc`` ancestor) share a parent while it was touched within ``tracking.parent_ttl_hours``. Such a parent is
   RUNNING while one of its stages runs and FINISHED (or FAILED, if that stage failed) in between, so it never stays
   RUNNING after the pipeline has stopped.

Stage commands wrap themselves in :func:`stage_run`; TRL/transformers trainers with ``report_to=["mlflow"]`` log
into the stage's run because transformers' MLflowCallback reuses an active run instead of starting its own.

Provenance: a run carries the git commit and ``corecode.git_dirty`` from its start. DVC writes a stage's entry into
dvc.lock only after the stage's command has exited, so a stage run under ``dvc repro`` ends by starting
:mod:`corecode.tracking.lockwatch`, which tags the run and its parent with the hash of dvc.lock as DVC left it
after the stage (``corecode.dvc_lock_sha256``: the lock that records this run's result) and re-checks
``git_dirty`` (dvc.lock then differs from HEAD). A stage run by hand gets no lock hash: no dvc.lock records it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from corecode.tracking.config import TrackingParams

PARENT_ENV = "CORECODE_PARENT_RUN_ID"
# MLflow's limit on a param value (mlflow.utils.validation.MAX_PARAM_VAL_LENGTH); longer values are cut, not dropped.
_MAX_PARAM_LEN = 6000


def tracking_uri(tracking: TrackingParams) -> str:
    """The effective tracking URI: ``MLFLOW_TRACKING_URI`` if set, else ``tracking.uri``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or tracking.uri


@contextlib.contextmanager
def _sqlite_store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a sqlite store while MLflow opens it.

    Opening a fresh store runs MLflow's alembic migrations; two stage processes doing that at once (independent stages
    started together by a Prefect worker, say) corrupt the schema ("table ... already exists", "Online migration
    expected to match one row"). Serialising the first open is enough: later ones find the tables made."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    import fcntl

    db = Path(uri[len("sqlite:///") :])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def configure(tracking: TrackingParams) -> str:
    """Point MLflow at the tracking store and experiment; return the experiment id."""
    import mlflow

    uri = tracking_uri(tracking)
    mlflow.set_tracking_uri(uri)
    with _sqlite_store_lock(uri):
        return mlflow.set_experiment(tracking.experiment).experiment_id


def flatten_params(tree: Mapping[str, Any] | BaseModel, prefix: str = "") -> dict[str, str]:
    """``{"sft": {"lr": 1e-5}}`` -> ``{"sft.lr": "1e-05"}``: nested sections become dotted keys, values strings."""
    if isinstance(tree, BaseModel):
        tree = tree.model_dump(mode="json")
    out: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if isinstance(value, Mapping) and value:
            out.update(flatten_params(value, prefix=f"{name}."))
        else:
            text = json.dumps(value) if isinstance(value, list | tuple | Mapping) else str(value)
            out[name] = text[:_MAX_PARAM_LEN]
    return out


def git_commit(cwd: str | Path = ".") -> tuple[str, bool] | None:
    """``(commit sha, dirty)`` of the work tree at ``cwd``, or None outside a git repo.

    Dirty: a tracked file differs from HEAD (staged or not), or dvc.lock exists but HEAD has none (a first
    ``dvc repro`` in a fresh clone)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True
        ).stdout
        new_lock = (Path(cwd) / "dvc.lock").is_file() and (
            subprocess.run(["git", "cat-file", "-e", "HEAD:dvc.lock"], cwd=cwd, capture_output=True).returncode != 0
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return sha, bool(status.strip()) or new_lock


def file_sha256(path: str | Path) -> str | None:
    """sha256 of a file (``dvc.lock``: identifies the pipeline state a run produced), None if absent."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def provenance_tags(cwd: str | Path = ".") -> dict[str, str]:
    """Tags that tie a run to its code: git commit and dirty flag (the dvc.lock hash comes when DVC has locked the
    run's result: :func:`lock_tags`)."""
    tags: dict[str, str] = {}
    git = git_commit(cwd)
    if git:
        tags["mlflow.source.git.commit"] = git[0]
        tags["corecode.git_commit"] = git[0]
        tags["corecode.git_dirty"] = str(git[1]).lower()
    return tags


def lock_tags(cwd: str | Path = ".") -> dict[str, str]:
    """``corecode.dvc_lock_sha256`` (dvc.lock as it is now) and ``corecode.git_dirty`` re-checked now."""
    tags = {k: v for k, v in provenance_tags(cwd).items() if k == "corecode.git_dirty"}
    lock = file_sha256(Path(cwd) / "dvc.lock")
    if lock:
        tags["corecode.dvc_lock_sha256"] = lock
    return tags


def experiment_url(tracking: TrackingParams, ui: str = "http://127.0.0.1:5000") -> str | None:
    """Link to the experiment's runs in the MLflow UI (``make mlflow-ui``), None if it does not exist yet.

    MLflow 3.17's UI picks an experiment's landing tab from its GenAI / model-training switch (the ``workflowType``
    URL parameter, else the browser's saved choice, GenAI by default), not from an experiment tag; the link asks
    for model training, which opens on the runs."""
    from mlflow import MlflowClient

    exp = MlflowClient(tracking_uri(tracking)).get_experiment_by_name(tracking.experiment)
    return f"{ui}/#/experiments/{exp.experiment_id}/runs?workflowType=machine_learning" if exp else None


# ---------------------------------------------------------------------------------------------------- parent runs


def start_parent_run(tracking: TrackingParams, run_name: str | None = None, tags: dict | None = None) -> str:
    """Create a RUNNING parent run for one pipeline run and return its id (it is not made the active run)."""
    from mlflow import MlflowClient

    exp_id = configure(tracking)
    all_tags = {"corecode.kind": "pipeline", **provenance_tags(), **(tags or {})}
    run = MlflowClient().create_run(exp_id, run_name=run_name or time.strftime("pipeline-%Y%m%d-%H%M%S"), tags=all_tags)
    return run.info.run_id


def end_parent_run(tracking: TrackingParams, run_id: str, status: str = "FINISHED", cwd: str | Path = ".") -> None:
    """Close a parent run (``FINISHED`` or ``FAILED``), tagged with the dvc.lock its stages left at ``cwd``."""
    from mlflow import MlflowClient

    configure(tracking)
    client = MlflowClient()
    for key, value in lock_tags(cwd).items():
        client.set_tag(run_id, key, value)
    client.set_terminated(run_id, status=status)


def checkout_tracking(root: str | Path, uri: str | None = None) -> TrackingParams:
    """The ``tracking`` section of the params.yaml at ``root`` (defaults if absent), a relative sqlite path made
    absolute; ``uri``, where given, replaces its tracking URI (a worker's ``MLFLOW_TRACKING_URI``).

    Only that section is read: the flows and ``corecode repro`` also drive DVC projects whose params.yaml is not
    corecode's.
    """
    import yaml

    params_file = Path(root) / "params.yaml"
    raw = (yaml.safe_load(params_file.read_text()) or {}) if params_file.is_file() else {}
    try:
        tp = TrackingParams.model_validate(raw.get("tracking") or {})
    except ValueError as e:
        raise ValueError(f"{params_file}: invalid 'tracking' section: {e}") from None
    if uri:
        return tp.model_copy(update={"uri": uri})
    local = tracking_uri(tp)
    if local.startswith("sqlite:///") and not local.startswith("sqlite:////"):
        local = f"sqlite:///{(Path(root) / local[len('sqlite:///') :]).resolve()}"
    return tp.model_copy(update={"uri": local})


@contextlib.contextmanager
def parent_run(
    root: str | Path,
    enabled: bool = True,
    tags: dict[str, str] | None = None,
    uri: str | None = None,
    orchestrator: str = "prefect",
) -> Iterator[tuple[str | None, str | None]]:
    """One MLflow parent run for a pipeline run that an orchestrator (a Prefect flow, ``corecode repro``) drives
    stage by stage, closed FINISHED or FAILED with it; yields (run id, tracking URI) for the stages'
    ``CORECODE_PARENT_RUN_ID`` and ``MLFLOW_TRACKING_URI``.

    ``tags`` are added to its ``corecode.orchestrator`` tag; ``uri`` replaces the checkout's tracking URI. Nothing
    is opened, and (None, None) yielded, when ``enabled`` is false or the checkout's ``tracking.enabled`` is.
    """
    tp = checkout_tracking(root, uri) if enabled else None
    if tp is None or not tp.enabled:
        yield None, None
        return
    cwd = os.getcwd()
    os.chdir(root)  # the experiment's default artifact root is relative to the cwd (contextlib.chdir is 3.11+)
    try:
        run_id = start_parent_run(tp, tags={"corecode.orchestrator": orchestrator, **(tags or {})})
    finally:
        os.chdir(cwd)
    status = "FAILED"
    try:
        yield run_id, tp.uri
        status = "FINISHED"
    finally:
        end_parent_run(tp, run_id, status, cwd=root)


def record_skipped_stage(
    tracking: TrackingParams, parent_run_id: str, stage: str, reason: str, cwd: str | Path = "."
) -> str:
    """A FINISHED nested run named ``<stage> (skipped)``, tagged ``corecode.skipped=true``, for a stage DVC found
    up to date: the parent then lists every stage of the pipeline run, run or not. Returns its run id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri(tracking))
    parent = client.get_run(parent_run_id)
    tags = {
        "mlflow.parentRunId": parent_run_id,
        "mlflow.note.content": f"Not run: {reason}. Its outputs are those recorded in dvc.lock.",
        "corecode.stage": stage,
        "corecode.kind": "stage",
        "corecode.skipped": "true",
        **lock_tags(cwd),
    }
    run = client.create_run(parent.info.experiment_id, run_name=f"{stage} (skipped)", tags=tags)
    client.set_terminated(run.info.run_id, status="FINISHED")
    return run.info.run_id


def _open_parent(run_id: str, need_running: bool) -> bool:
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        run = MlflowClient().get_run(run_id)
    except MlflowException:
        return False
    return run.info.lifecycle_stage == "active" and (run.info.status == "RUNNING" or not need_running)


def dvc_invocation() -> str | None:
    """``"dvc:<pid>:<start time>"`` of the ``dvc repro``/``dvc exp run`` process this process runs under, or None.

    DVC runs a stage's command as a child of its own process and exposes no run id, so the nearest ``dvc`` ancestor
    is what the stages of one ``dvc repro`` have in common (pid + start time: pids are reused).
    """
    import psutil

    try:
        for proc in psutil.Process().parents():
            cmd = proc.cmdline()
            if any(Path(c).name in ("dvc", "dvc.exe") or c.endswith("dvc/__main__.py") for c in cmd[:3]) and any(
                c in ("repro", "exp", "experiments") for c in cmd
            ):
                return f"dvc:{proc.pid}:{proc.create_time():.3f}"
    except psutil.Error:
        return None
    return None


def resolve_parent_run(tracking: TrackingParams) -> tuple[str, str]:
    """The parent run id for the current stage and where it came from (``"env"``, ``"file"`` or ``"new"``)."""
    env_id = os.environ.get(PARENT_ENV)
    if env_id:
        if not _open_parent(env_id, need_running=True):
            raise RuntimeError(f"{PARENT_ENV}={env_id}: no such active, RUNNING MLflow run at {tracking_uri(tracking)}")
        return env_id, "env"
    path = Path(tracking.parent_run_file)
    invocation = dvc_invocation()
    if path.is_file():
        try:
            saved = json.loads(path.read_text())
            run_id, touched = saved["run_id"], float(saved["touched"])
        except (ValueError, KeyError, TypeError) as e:
            raise RuntimeError(f"{path}: corrupt parent-run file ({e}); delete it to start a new parent run") from e
        same = saved.get("invocation") == invocation
        fresh = invocation is not None or time.time() - touched < tracking.parent_ttl_hours * 3600
        if same and fresh and _open_parent(run_id, need_running=False):
            _write_parent_file(path, run_id, invocation)
            return run_id, "file"
    tags = {"corecode.dvc_invocation": invocation} if invocation else {}
    run_id = start_parent_run(tracking, tags=tags)
    _write_parent_file(path, run_id, invocation)
    return run_id, "new"


def _write_parent_file(path: Path, run_id: str, invocation: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"run_id": run_id, "touched": time.time(), "invocation": invocation}))
    tmp.replace(path)


# ----------------------------------------------------------------------------------------------------- stage runs


@dataclass
class StageRun:
    """Handle on a stage's MLflow run; every method is a no-op when tracking is off (``run_id is None``)."""

    run_id: str | None = None
    parent_run_id: str | None = None

    @property
    def enabled(self) -> bool:
        return self.run_id is not None

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        if self.enabled:
            import mlflow

            mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step, run_id=self.run_id)

    def log_artifacts(self, path: str | Path, artifact_path: str | None = None) -> None:
        """Log a file or a whole directory under ``artifact_path``; a missing path is an error, not a silent skip."""
        if not self.enabled:
            return
        from mlflow import MlflowClient

        path = Path(path)
        if path.is_dir():
            MlflowClient().log_artifacts(self.run_id, str(path), artifact_path)
        elif path.is_file():
            MlflowClient().log_artifact(self.run_id, str(path), artifact_path)
        else:
            raise FileNotFoundError(f"{path}: cannot log as an artifact: no such file or directory")

    def log_dict(self, data: Any, artifact_file: str) -> None:
        if self.enabled:
            import mlflow

            mlflow.log_dict(data, artifact_file, run_id=self.run_id)

    def log_text(self, text: str, artifact_file: str) -> None:
        if self.enabled:
            from mlflow import MlflowClient

            MlflowClient().log_text(self.run_id, text, artifact_file)

    def log_images(self, paths: list[Path]) -> None:
        """Each PNG as an MLflow image (key = file stem): the run page shows them as pictures, not files."""
        if not self.enabled:
            return
        from mlflow import MlflowClient
        from PIL import Image

        for path in paths:
            with Image.open(path) as image:
                MlflowClient().log_image(
                    self.run_id, image.convert("RGB"), key=Path(path).stem, step=0, synchronous=True
                )

    def log_parent_metrics(self, metrics: Mapping[str, float]) -> None:
        """Metrics on the pipeline's parent run (the headline numbers a user sees without expanding it)."""
        if self.enabled and self.parent_run_id:
            import mlflow

            mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, run_id=self.parent_run_id)


@contextlib.contextmanager
def stage_run(
    stage_name: str,
    params: BaseModel | Mapping[str, Any] | None = None,
    tracking: TrackingParams | None = None,
    tags: Mapping[str, str] | None = None,
) -> Iterator[StageRun]:
    """Run the body as the active MLflow run of stage ``stage_name``, nested under the pipeline's parent run.

    ``params`` (the whole ``Params`` or any mapping) is logged flattened (``sft.lr``; top-level scalars as
    ``corecode.seed``); ``tracking`` defaults to ``params.tracking``. The run carries git/dvc.lock tags and, if
    enabled, system metrics. On an exception the stage run (and a file-managed parent) ends FAILED.
    """
    if tracking is None:
        tracking = getattr(params, "tracking", None) or TrackingParams()
    if not tracking.enabled:
        yield StageRun()
        return

    import mlflow
    from mlflow import MlflowClient

    configure(tracking)
    parent_id, source = resolve_parent_run(tracking)
    owned = source != "env"  # a parent from the file is ours to mark RUNNING / FINISHED around the stage
    if owned:
        MlflowClient().update_run(parent_id, status="RUNNING")
    if tracking.log_system_metrics:
        mlflow.set_system_metrics_sampling_interval(tracking.system_metrics_interval_s)
    run_tags = {"corecode.stage": stage_name, "corecode.kind": "stage", **provenance_tags(), **(tags or {})}
    status = "FAILED"
    try:
        with mlflow.start_run(
            run_name=stage_name,
            parent_run_id=parent_id,
            tags=run_tags,
            log_system_metrics=tracking.log_system_metrics,
        ) as run:
            if params is not None:
                mlflow.log_params(_stage_params(params))
            yield StageRun(run.info.run_id, parent_id)
        status = "FINISHED"
    finally:
        if owned:
            MlflowClient().set_terminated(parent_id, status=status)
    invocation = dvc_invocation()
    if invocation:
        from corecode.tracking.lockwatch import watch_in_background

        watch_in_background(tracking_uri(tracking), [run.info.run_id, parent_id], invocation)


def _stage_params(params: BaseModel | Mapping[str, Any]) -> dict[str, str]:
    """Flattened params; top-level scalars (``seed``) become ``corecode.seed`` so that they cannot collide with the
    un-dotted names transformers' MLflowCallback logs into the same run (its ``seed`` is the trainer's)."""
    return {(k if "." in k else f"corecode.{k}"): v for k, v in flatten_params(params).items()}
