"""Nightly evaluation of the registry's champion (scheduled in prefect.yaml).

Resolves ``models:/<name>@champion`` to a local directory (the version is logged, so a run says which champion it
measured), then runs an evaluation command in the repo. The command is a template: ``{model_path}``,
``{model_uri}`` and ``{version}`` are filled in. The default evaluates the team named ``champion`` in
``agents.teams``, whose roles point at ``models:/corecode-team@champion`` (corecode.agents resolves the per-role
subdirectories of a team version), into ``data/reports/nightly/`` (outside every DVC stage's outputs).

The ``corecode-nightly-eval`` table artifact then shows, per benchmark of the command's ``summary.json``, the
score (pass@1), last night's (the previous artifact of that key) and the change, with the champion version measured.
"""

from __future__ import annotations

import json
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


ARTIFACT_KEY = "corecode-nightly-eval"


def read_scores(summary: Path) -> dict[str, float]:
    """``{benchmark: pass@1}`` from an evaluate ``summary.json``; empty if the command wrote none there."""
    if not summary.is_file():
        return {}
    benchmarks = json.loads(summary.read_text()).get("benchmarks") or {}
    return {b: float(s["pass_at_1"]) for b, s in benchmarks.items() if isinstance(s.get("pass_at_1"), int | float)}


def last_night(key: str = ARTIFACT_KEY) -> dict[str, float]:
    """``{benchmark: pass@1}`` of the latest artifact ``key`` (the previous nightly run), empty if there is none."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])), sort=ArtifactSort.CREATED_DESC, limit=1
        )
    if not found:
        return {}
    rows = json.loads(found[0].data) if isinstance(found[0].data, str) else found[0].data
    return {r["benchmark"]: r["pass_at_1"] for r in rows or [] if isinstance(r.get("pass_at_1"), int | float)}


def score_rows(scores: dict[str, float], previous: dict[str, float], version: str) -> list[dict[str, Any]]:
    """One row per benchmark: pass@1 tonight, last night and the change (None where there was no last night)."""
    rows = []
    for bench, score in scores.items():
        before = previous.get(bench)
        change = None if before is None else round(score - before, 6)
        rows.append(
            {"benchmark": bench, "pass_at_1": score, "last_night": before, "change": change, "version": version}
        )
    return rows


@flow(name="corecode-nightly-eval", log_prints=True)
def nightly_eval(
    repo_dir: str = ".",
    model_uri: str = "models:/corecode-team@champion",
    command: str = "corecode evaluate --method champion --out-dir data/reports/nightly",
    summary: str = "data/reports/nightly/champion/summary.json",
) -> dict[str, Any]:
    """Evaluate the current champion; a table artifact gives its score per benchmark and the change since last
    night. ``summary``: the ``summary.json`` the command writes (relative to ``repo_dir``)."""
    import os

    if not os.environ.get("MLFLOW_TRACKING_URI"):  # the registry lives in the repo's sqlite store by default
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{Path(repo_dir).resolve() / 'mlflow.db'}"
    model = resolve_champion(model_uri, repo_dir)
    argv = shlex.split(command.format(model_uri=model_uri, **model))
    summary_path = Path(repo_dir) / summary
    summary_path.unlink(missing_ok=True)  # a score must come from tonight's run, not an old file
    result = run_evaluation(argv, repo_dir)
    scores = read_scores(summary_path)
    rows = score_rows(scores, last_night(), model["version"])
    if not rows:
        rows = [{"benchmark": None, "pass_at_1": None, "last_night": None, "change": None, "version": model["version"]}]
    headline = "; ".join(
        f"{r['benchmark']} pass@1 {r['pass_at_1']:.3f}"
        + ("" if r["change"] is None else f" ({r['change']:+.3f} since last night)")
        for r in rows
        if r["benchmark"]
    )
    create_table_artifact(
        rows,
        key=ARTIFACT_KEY,
        description=f"{model_uri} v{model['version']}: {headline or f'no score ({summary} not written)'}",
    )
    get_run_logger().info("%s", headline or f"{summary}: not written by the command, no score")
    return {**model, **result, "scores": scores}
