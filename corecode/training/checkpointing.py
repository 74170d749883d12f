"""Crash-safe training checkpoints on top of ``accelerate``'s ``save_state`` / ``load_state``.

``Accelerator.save_state`` already writes every prepared model, optimizer and scheduler plus the python / numpy /
torch (and CUDA) RNG states, and any object registered with ``register_for_checkpointing`` (our trainer state: step,
log history). What it does not do is survive a SIGKILL in the middle of writing, so each checkpoint is written to a
temporary directory and renamed into place (an atomic rename on POSIX); a half-written directory is never picked up.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_STEP_DIR = re.compile(r"^step-(\d+)$")


def list_checkpoints(root: str | Path) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), d) for d in root.iterdir() if d.is_dir() and (m := _STEP_DIR.match(d.name))]
    return sorted(found)


def latest_checkpoint(root: str | Path) -> Path | None:
    found = list_checkpoints(root)
    return found[-1][1] if found else None


def save_checkpoint(accelerator, root: str | Path, step: int, keep: int) -> Path:
    """``accelerator.save_state`` into ``root/step-N`` atomically; prune to the newest ``keep``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step}"
    tmp = root / f".tmp-step-{step}"
    if accelerator.is_main_process and tmp.exists():
        shutil.rmtree(tmp)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp), safe_serialization=False)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        for f in tmp.iterdir():  # make the files durable before the rename publishes them
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        for _, old in list_checkpoints(root)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
        if os.environ.get("CORECODE_RUN_STATE_SYNC"):  # a share-nothing worker: a retry elsewhere resumes from here
            from corecode.deploy.worker import push_checkpoint

            push_checkpoint(root, final)
    accelerator.wait_for_everyone()
    return final


def load_checkpoint(accelerator, path: str | Path) -> None:
    """Restore models, optimizers, schedulers, registered objects and RNG states from ``path``."""
    accelerator.load_state(str(path))


# Settings that do not change what a run computes: a restart may differ in them and still resume.
_NOT_SHAPING = {
    "save_steps",
    "save_total_limit",
    "resume",
    "log_path",
    "magrpo_log_path",
    "checkpoint_dir",
    "magrpo_checkpoint_dir",
    "planner_output",
    "coder_output",
    "magrpo_helper_output",
    "magrpo_main_output",
}


def run_fingerprint(settings: dict, seed: int, start_models: list[str | Path]) -> str:
    """Identity of a training run: the settings that shape it, the seed, and the start checkpoints' files.

    Start checkpoints are identified by file names, sizes and modification times (cheap for multi-GB models); a
    re-built SFT checkpoint therefore counts as a different start even when its weights happen to be equal. Where
    the orchestrator knows their content hashes (a share-nothing worker: dvc.lock's md5s, the same on every host,
    unlike file times), ``CORECODE_START_MODELS_ID`` carries them and replaces the file list.
    """
    import hashlib
    import json

    shaping = {k: v for k, v in settings.items() if k not in _NOT_SHAPING}
    files = []
    for d in [] if os.environ.get("CORECODE_START_MODELS_ID") else start_models:
        d = Path(d)
        for f in sorted(d.glob("*")) if d.is_dir() else []:
            if f.is_file():
                st = f.stat()
                files.append([str(f), st.st_size, st.st_mtime_ns])
    start = os.environ.get("CORECODE_START_MODELS_ID") or files
    blob = json.dumps({"settings": shaping, "seed": seed, "start": start}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def claim_checkpoint_dir(root: str | Path, fingerprint: str) -> bool:
    """Make ``root`` hold checkpoints of the run ``fingerprint`` only; True if existing checkpoints may be resumed.

    A directory left by a different run (other params, seed or start models) is not resumed: its checkpoints are
    removed with a warning so that the new run starts fresh instead of silently continuing another one.
    """
    import logging

    root = Path(root)
    marker = root / "fingerprint.txt"
    if root.is_dir() and list_checkpoints(root):
        if marker.exists() and marker.read_text().strip() == fingerprint:
            return True
        logging.getLogger(__name__).warning(
            "%s holds checkpoints of a different run (params, seed or start models changed): starting fresh", root
        )
        for _, old in list_checkpoints(root):
            shutil.rmtree(old, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    marker.write_text(fingerprint + "\n")
    return False
