"""MLflow tracking for the pipeline: stage runs nested under a pipeline run, the model registry, promotion, reports.

Public API: :func:`stage_run`, :func:`flatten_params`, :func:`start_parent_run`, :func:`end_parent_run`
(corecode.tracking.runs); :func:`register_checkpoint`, :func:`resolve_model_uri` (corecode.tracking.registry).
Imports are lazy so that ``import corecode.tracking`` does not pull in mlflow.
"""

from __future__ import annotations

_EXPORTS = {
    "stage_run": "corecode.tracking.runs",
    "StageRun": "corecode.tracking.runs",
    "flatten_params": "corecode.tracking.runs",
    "start_parent_run": "corecode.tracking.runs",
    "end_parent_run": "corecode.tracking.runs",
    "PARENT_ENV": "corecode.tracking.runs",
    "register_checkpoint": "corecode.tracking.registry",
    "resolve_model_uri": "corecode.tracking.registry",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'corecode.tracking' has no attribute {name!r}")


__all__ = list(_EXPORTS)
