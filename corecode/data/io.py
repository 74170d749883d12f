"""JSONL in and out: ``Problem`` files (``data/processed/composite_*.jsonl``) and SFT row files.

Plain ``json`` per line rather than ``Dataset.to_json``: pandas' writer escapes ``/`` (task ids are ``a/b/c``) and the
files are read back by ``datasets.load_dataset("json")`` and by ``read_problems`` alike. Errors name file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from corecode.data.schema import Problem


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    """Write dicts one per line (parents created); returns the row count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file; a bad line raises ``ValueError`` naming ``file:line``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    rows = []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: invalid JSON: {e}") from e
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


def write_problems(path: str | Path, problems: Iterable[Problem]) -> int:
    return write_jsonl(path, (p.model_dump(mode="json") for p in problems))


def read_problems(path: str | Path) -> list[Problem]:
    """Problems from JSONL; a row that does not fit the schema raises ``ValueError`` naming ``file:line`` and key."""
    problems = []
    for lineno, row in enumerate(read_jsonl(path), 1):
        try:
            problems.append(Problem.model_validate(row))
        except ValidationError as e:
            first = e.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{path}: row {lineno}: {key}: {first['msg']}") from None
    return problems
