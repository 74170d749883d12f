"""Nightly evaluation of the registry's champion (scheduled in prefect.yaml).

Resolves ``models:/<name>@champion`` to a local directory (the version is logged, so a run says which champion it
measured), then runs an evaluation command in the repo. The command is a template: ``{model_path}``,
``{model_uri}`` and ``{version}`` are filled in. The default evaluates the team named ``champion`` in
``agents.teams``, whose roles point at ``models:/corecode-team@champion`` (corecode.agents resolves the per-role
subdirectories of a team version).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact


def _retry_unless_missing(task, task_run, state) -> bool:
    """Retry a failed download (transient), not a URI that names no model (permanent)."""
    try:
        state.result()
    except (LookupError, FileNotFoundError):
        return False
    except Exception:
        return True
    return False


@task(retries=2, retry_delay_seconds=60, retry_condition_fn=_retry_unless_missing)
def resolve_champion(model_uri: str, repo_dir: str) -> dict[str, str]:
    """Download (or reuse the cached copy of) the model behind ``model_uri``; returns its path and version."""
    from corecode.tracking.registry import DEFAULT_CACHE, resolve_model_uri

    path = resolve_model_uri(model_uri, cache_dir=Path(repo_dir) / DEFAULT_CACHE)
    version = path.name if model_uri.startswith("models:/") else ""
    get_run_logger().info("%s -> %s (version %s)", model_uri, path, version or "-")
    return {"model_path": str(path), "version": version}


@task(retries=1, retry_delay_seconds=300, tags=["gpu"])
def run_evaluation(command: list[str], repo_dir: str) -> dict[str, Any]:
    """Run the evaluation command in the repo; a non-zero exit fails the task (and is retried once)."""
    logger = get_run_logger()
    res = subprocess.run(command, cwd=repo_dir, capture_output=True, text=True)
    for line in (res.stdout + res.stderr).splitlines()[-50:]:
        logger.info("evaluate | %s", line)
    if res.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} exited with {res.returncode}:\n{res.stderr[-4000:]}")
    return {"returncode": res.returncode, "stdout_tail": res.stdout[-2000:]}


@flow(name="corecode-nightly-eval", log_prints=True)
def nightly_eval(
    repo_dir: str = ".",
    model_uri: str = "models:/corecode-team@champion",
    command: str = "corecode evaluate --method champion",
) -> dict[str, Any]:
    """Evaluate the current champion; records which version was measured as a Prefect table artifact."""
    import os

    if not os.environ.get("MLFLOW_TRACKING_URI"):  # the registry lives in the repo's sqlite store by default
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{Path(repo_dir).resolve() / 'mlflow.db'}"
    model = resolve_champion(model_uri, repo_dir)
    argv = shlex.split(command.format(model_uri=model_uri, **model))
    result = run_evaluation(argv, repo_dir)
    create_table_artifact(
        [{"model_uri": model_uri, "version": model["version"], "command": shlex.join(argv), "exit": 0}],
        key="corecode-nightly-eval",
        description="Champion measured by the nightly evaluation",
    )
    return {**model, **result}
