"""A real Prefect server (prefect_test_harness) for the session, and tiny real DVC projects in tmp git repos."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# No usage telemetry from MLflow or Prefect (this machine has no outside network); set before either is imported.
os.environ.setdefault("DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# As flows/start_local.sh: the client also retries a 500, which the test servers (on SQLite) can answer now and then.
os.environ.setdefault("PREFECT_CLIENT_RETRY_EXTRA_CODES", "500")

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `flows` is a top-level directory of the repo, not part of the corecode package
    sys.path.insert(0, str(REPO))


@pytest.fixture(scope="session")
def prefect_server():
    from prefect.testing.utilities import prefect_test_harness

    # No telemetry from the test server or the client (this machine has no outside network).
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(autouse=True)
def _dvc_env(monkeypatch):
    """dvc on PATH (the venv's), and no analytics calls from DVC (this machine has no internet)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    monkeypatch.delenv("CORECODE_PARENT_RUN_ID", raising=False)


# Three trivial stages: prepare -> train -> evaluate (evaluate also reads prepare's output directly).
# SIDE is a directory outside the DVC project where commands count their runs (not a DVC out, so it does not
# change what dvc.lock records).
DVC_YAML = """\
stages:
  evaluate:
    cmd: python steps.py evaluate
    deps: [steps.py, data/model.txt, data/prepared]
    outs: [data/metrics.json]
  train:
    cmd: python steps.py train
    deps: [steps.py, data/prepared]
    params: [lr]
    outs: [data/model.txt]
  prepare:
    cmd: python steps.py prepare
    deps: [steps.py, raw.txt]
    outs: [data/prepared]
"""

STEPS = """\
import json, os, sys, pathlib
stage = sys.argv[1]
side = pathlib.Path(os.environ["SIDE"])
side.mkdir(parents=True, exist_ok=True)
with open(side / f"{stage}.count", "a") as f:
    f.write(os.environ.get("CORECODE_PARENT_RUN_ID", "-") + "\\n")
attempts = len((side / f"{stage}.count").read_text().splitlines())
if stage == os.environ.get("FAIL_ONCE") and attempts == 1:
    sys.exit("transient failure (first attempt)")
if stage == os.environ.get("FAIL_ALWAYS"):
    sys.exit(2)
if stage == "prepare":
    os.makedirs("data/prepared", exist_ok=True)
    open("data/prepared/rows.txt", "w").write(open("raw.txt").read().upper())
elif stage == "train":
    import yaml
    lr = yaml.safe_load(open("params.yaml"))["lr"]
    open("data/model.txt", "w").write(f"lr={lr} rows={open('data/prepared/rows.txt').read()}")
elif stage == "evaluate":
    json.dump({"methods": {"toy": {"bench": {"pass_at_1": 0.5, "pass_at_k": {"pass_at_2": 0.75}}}}},
              open("data/metrics.json", "w"))
    os.makedirs("data/plots", exist_ok=True)
    from PIL import Image
    Image.new("RGB", (8, 8), (200, 30, 30)).save("data/plots/bars.png")
    open("data/report.md", "w").write("# toy report\\n\\n![bars](plots/bars.png)\\n")
    if os.environ.get("CORECODE_PARENT_RUN_ID"):  # under the flow: log a real nested stage run
        from corecode.tracking.config import TrackingParams
        from corecode.tracking.runs import stage_run
        with stage_run("evaluate", {"lr": 1}, TrackingParams(log_system_metrics=False)) as run:
            run.log_metrics({"pass_at_1": 0.5})
"""


def make_project(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=root, check=True)
    subprocess.run(["dvc", "config", "--local", "core.analytics", "false"], cwd=root, check=True)
    (root / "dvc.yaml").write_text(DVC_YAML)
    (root / "steps.py").write_text(textwrap.dedent(STEPS))
    (root / "raw.txt").write_text("a\nb\n")
    (root / "params.yaml").write_text("lr: 0.1\ntracking:\n  log_system_metrics: false\n")
    (root / ".gitignore").write_text("mlflow.db\nmlruns/\n.corecode/\n")
    return root


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("SIDE", str(tmp_path / "side"))
    return make_project(tmp_path / "proj")
