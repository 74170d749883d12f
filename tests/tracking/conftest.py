"""A real MLflow sqlite store in tmp_path for every tracking test, with the test's cwd set to tmp_path."""

from __future__ import annotations

import os
import subprocess

import pytest

from corecode.cli_common import STATE

# No usage telemetry from MLflow or Prefect (this machine has no outside network); set before either is imported.
os.environ.setdefault("DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """cwd = tmp_path (a git repo with one commit), MLFLOW_TRACKING_URI -> tmp sqlite; yields the URI."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("CORECODE_PARENT_RUN_ID", raising=False)
    # report and promote write the pipeline's places, as dvc.yaml runs them (corecode --pipeline-outputs)
    monkeypatch.setitem(STATE, "pipeline_outputs", True)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "README").write_text("x\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run():
        mlflow.end_run()
