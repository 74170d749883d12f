"""Tag a stage's MLflow run with the dvc.lock that records its result, once DVC has written it.

``dvc repro`` writes a stage's entry into dvc.lock after the stage's command has exited, so the command itself cannot
know the lock that records its result. :func:`corecode.tracking.runs.stage_run` therefore ends a stage run under
DVC by starting this module as a detached process (its own session, no pipes, so DVC does not wait for it). It
waits until DVC has recorded the stage (:func:`wait_for_lock`), then sets ``corecode.dvc_lock_sha256`` (the lock's
hash) and ``corecode.git_dirty`` (re-checked: the updated dvc.lock differs from HEAD) on the stage run and on its
parent.

Usage (internal): ``python -m corecode.tracking.lockwatch TRACKING_URI DVC_INVOCATION LOCK_SHA256 STAGE_RUN_ID
[PARENT_RUN_ID]``
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# A stage's outputs are hashed and cached by DVC before it writes the lock: minutes for a large checkpoint.
MAX_WAIT_S = 3 * 3600
POLL_S = 0.5


def watch_in_background(uri: str, run_ids: list[str], invocation: str, cwd: str | Path = ".") -> None:
    """Start the watcher for ``run_ids`` (stage run first, then its parent) of the ``dvc`` process ``invocation``."""
    from corecode.tracking.runs import file_sha256

    lock = file_sha256(Path(cwd) / "dvc.lock") or "-"
    subprocess.Popen(
        [sys.executable, "-m", "corecode.tracking.lockwatch", uri, invocation, lock, *run_ids],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _dvc_alive(invocation: str) -> bool:
    import psutil

    _, pid, started = invocation.split(":")
    try:
        proc = psutil.Process(int(pid))
        return f"{proc.create_time():.3f}" == started and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _single_item(invocation: str) -> bool:
    """The ``dvc`` process is a ``dvc repro --single-item`` (one stage; corecode repro runs several side by side)."""
    import psutil

    try:
        return "--single-item" in psutil.Process(int(invocation.split(":")[1])).cmdline()
    except psutil.Error:
        return False


def wait_for_lock(invocation: str, lock_before: str, cwd: str | Path = ".", max_wait_s: float = MAX_WAIT_S) -> None:
    """Return once the ``dvc`` process has recorded its stage in dvc.lock.

    A ``dvc repro`` of several stages goes on to the next one, so that is when dvc.lock's hash first differs from
    ``lock_before``. A ``dvc repro --single-item`` exits right after writing dvc.lock, and other stages' processes
    may write it meanwhile (``corecode repro``), so that is when it is gone.
    """
    from corecode.tracking.runs import file_sha256

    single = _single_item(invocation)
    deadline = time.monotonic() + max_wait_s
    while time.monotonic() < deadline:
        if not _dvc_alive(invocation):
            return
        if not single and (file_sha256(Path(cwd) / "dvc.lock") or "-") != lock_before:
            return
        time.sleep(POLL_S)


def main(argv: list[str]) -> None:
    uri, invocation, lock_before, stage_run, *parent_runs = argv
    from corecode.tracking.runs import file_sha256, lock_tags

    wait_for_lock(invocation, lock_before)
    time.sleep(POLL_S)  # DVC writes dvc.lock in one go; a read in the middle of it would hash half a file
    # Read the lock before importing MLflow (seconds): by then the next stage may have rewritten dvc.lock.
    tags = lock_tags()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    for key, value in tags.items():
        client.set_tag(stage_run, key, value)
    # The parent carries the last lock of its `dvc repro`. Every stage's watcher tags it, and a slow watcher of an
    # earlier stage (MLflow's import takes seconds on a loaded machine) would overwrite a later stage's tag with an
    # older lock: where dvc.lock has moved on since this watcher read it, a later stage's watcher tags the parent.
    if file_sha256(Path.cwd() / "dvc.lock") == tags.get("corecode.dvc_lock_sha256"):
        for run_id in parent_runs:
            for key, value in tags.items():
                client.set_tag(run_id, key, value)


if __name__ == "__main__":
    main(sys.argv[1:])
