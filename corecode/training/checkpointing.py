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
    accelerator.wait_for_everyone()
    return final


def load_checkpoint(accelerator, path: str | Path) -> None:
    """Restore models, optimizers, schedulers, registered objects and RNG states from ``path``."""
    accelerator.load_state(str(path))
