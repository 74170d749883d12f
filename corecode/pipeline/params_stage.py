"""The ``params`` stage (``corecode check-params``): params.yaml validated before any stage that reads it runs.

DVC removes a stage's outputs right before it runs the stage's command, so a command that rejects params.yaml has
already lost what it produced last time (and the untracked training logs for good). The ``params`` stage runs first
because every other stage depends on one of its files: ``data/params/<section>.json``, the validated section with
every default filled in, written with sorted keys. A bad params.yaml fails this stage, and DVC stops before any other
stage; its files are ``persist`` outputs, so even ``dvc repro --ignore-errors`` finds the last valid ones unchanged
and skips the stages that read them. A valid change rewrites only the changed sections' files, so exactly the
stages that depend on those rerun, as a stage's ``params:`` list would do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corecode.config import Params

# Sections split into their sub-sections, which separate stages read (one per trainer).
SPLIT_SECTIONS = ("grpo",)


def sections(params: Params) -> dict[str, Any]:
    """``{section: its validated value}`` for every top-level key of params.yaml (``grpo``: ``grpo.team``,
    ``grpo.magrpo``, ``grpo.single``)."""
    dumped = params.model_dump(mode="json")
    out: dict[str, Any] = {}
    for name in Params.model_fields:
        if name in SPLIT_SECTIONS:
            out.update({f"{name}.{sub}": value for sub, value in dumped[name].items()})
        else:
            out[name] = dumped[name]
    return out


def write_sections(params: Params, out_dir: str | Path) -> list[Path]:
    """Write :func:`sections` as ``out_dir/<section>.json``: same params, same bytes. Each file is replaced in one
    step (a failed run leaves the previous one whole), and only when its content changes."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, value in sections(params).items():
        path = out_dir / f"{name}.json"
        text = json.dumps(value, indent=1, sort_keys=True) + "\n"
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text)
            tmp.replace(path)
        written.append(path)
    return written
