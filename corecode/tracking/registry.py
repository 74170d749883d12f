"""MLflow model registry: one version of the team model per pipeline run, and ``models:/`` URIs -> local paths.

A version's files are the run artifacts under ``checkpoint/`` (``checkpoint/planner``, ``checkpoint/coder`` for the
team); its per-problem pass rates (what a paired bootstrap needs to compare it with a later candidate) are a JSON
artifact next to it, and the version tag ``corecode.per_problem_uri`` points to that JSON.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from corecode.tracking.config import TrackingParams

PER_PROBLEM_TAG = "corecode.per_problem_uri"
CHECKPOINT_ARTIFACT = "checkpoint"
DEFAULT_CACHE = Path(".corecode/models")


def _run_id(run: Any) -> str:
    """Accept a run id, an ``mlflow.entities.Run``/``ActiveRun`` or a :class:`~corecode.tracking.runs.StageRun`."""
    if isinstance(run, str):
        return run
    if getattr(run, "info", None) is not None:
        return run.info.run_id
    if getattr(run, "run_id", None):
        return run.run_id
    raise TypeError(f"register_checkpoint: cannot get a run id from {run!r} (is tracking disabled?)")


def register_checkpoint(
    path: str | Path | Mapping[str, str | Path],
    name: str,
    run: Any,
    per_problem: Mapping[str, Mapping[str, float]] | None = None,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
):
    """Log a checkpoint as artifacts of ``run`` and register it as a new version of model ``name``.

    ``path`` is a checkpoint dir, or ``{role: dir}`` for a team (each logged under ``checkpoint/<role>``).
    ``per_problem`` is ``{benchmark: {task_id: pass rate}}``, stored with the version for later promotion gates.
    Returns the ``ModelVersion``.
    """
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient()
    run_id = _run_id(run)
    dirs = dict(path) if isinstance(path, Mapping) else {"": path}
    for role, d in dirs.items():
        d = Path(d)
        if not d.is_dir():
            raise FileNotFoundError(f"{d}: checkpoint directory not found (model {name!r}, role {role or '-'})")
    for role, d in dirs.items():
        client.log_artifacts(run_id, str(d), f"{CHECKPOINT_ARTIFACT}/{role}".rstrip("/"))
    artifact_uri = client.get_run(run_id).info.artifact_uri
    version_tags = dict(tags or {})
    if per_problem is not None:
        rel = f"eval/{name}/per_problem.json"
        client.log_dict(run_id, {b: dict(s) for b, s in per_problem.items()}, rel)
        version_tags[PER_PROBLEM_TAG] = f"{artifact_uri}/{rel}"
    try:
        client.create_registered_model(name, description="corecode team model (Planner + Coder checkpoints)")
    except MlflowException as e:
        if "already exists" not in str(e).lower() and e.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    return client.create_model_version(
        name,
        source=f"{artifact_uri}/{CHECKPOINT_ARTIFACT}",
        run_id=run_id,
        tags=version_tags,
        description=description,
    )


def load_per_problem(name: str, version: str | int) -> dict[str, dict[str, float]] | None:
    """The ``{benchmark: {task_id: pass rate}}`` stored with a model version, or None if it has none."""
    import mlflow
    from mlflow import MlflowClient

    mv = MlflowClient().get_model_version(name, str(version))
    uri = mv.tags.get(PER_PROBLEM_TAG)
    if not uri:
        return None
    return json.loads(mlflow.artifacts.load_text(uri))


def resolve_model_uri(uri: str, cache_dir: str | Path | None = None, tracking: TrackingParams | None = None) -> Path:
    """Turn ``models:/NAME@ALIAS``, ``models:/NAME/VERSION`` or ``runs:/ID/PATH`` into a local directory.

    A registry URI may end in a path inside the version (``models:/corecode-team@champion/coder``). Versions are
    downloaded once into ``cache_dir/NAME/VERSION`` (default ``.corecode/models``; an alias is resolved to its
    version first, so a moved alias fetches the new version). Anything else is a local path and must exist.
    """
    if not uri.startswith(("models:/", "runs:/")):
        local = Path(uri)
        if not local.exists():
            raise FileNotFoundError(f"{uri}: model path not found (and not a models:/ or runs:/ URI)")
        return local
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(os.environ.get("MLFLOW_TRACKING_URI") or (tracking or TrackingParams()).uri)
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    client = MlflowClient()
    subpath = ""
    if uri.startswith("models:/"):
        parts = uri[len("models:/") :].strip("/").split("/")
        try:
            if "@" in parts[0]:  # models:/NAME@ALIAS[/SUBPATH]
                name, alias = parts[0].split("@", 1)
                mv = client.get_model_version_by_alias(name, alias)
                subpath = "/".join(parts[1:])
            else:  # models:/NAME/VERSION[/SUBPATH]
                if len(parts) < 2:
                    raise ValueError("expected models:/NAME@ALIAS or models:/NAME/VERSION")
                mv = client.get_model_version(parts[0], parts[1])
                subpath = "/".join(parts[2:])
        except (MlflowException, ValueError) as e:
            raise LookupError(f"{uri}: no such registered model version ({e})") from e
        dst = cache / mv.name / str(mv.version)
        source = client.get_model_version_download_uri(mv.name, mv.version)
    else:
        dst = cache / "runs" / uri[len("runs:/") :].strip("/").replace("/", "__")
        source = uri
    done = dst / ".complete"
    if not done.exists():
        _download(source, dst)
    local = dst / subpath if subpath else dst
    if not local.exists():
        raise FileNotFoundError(f"{uri}: the model version has no {subpath!r} (has: {sorted(os.listdir(dst))})")
    return local


def _download(source: str, dst: Path) -> None:
    """Download an artifact directory so that ``dst`` itself is the checkpoint; marks ``dst/.complete`` when done."""
    import mlflow

    done = dst / ".complete"
    if dst.exists():  # an interrupted download: start again
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=str(dst))
    # download_artifacts puts a directory artifact under dst/<basename>; flatten so dst *is* the checkpoint.
    inner = dst / Path(source.rstrip("/")).name
    if inner.is_dir():
        staged = inner.rename(dst / ".download")  # so a child named like the dir itself cannot collide
        for child in staged.iterdir():
            child.rename(dst / child.name)
        staged.rmdir()
    done.touch()
