"""JSONL in and out: ``Problem`` files (``data/processed/composite_*.jsonl``) and SFT row files.

Plain ``json`` per line rather than ``Dataset.to_json``: pandas' writer escapes ``/`` (task ids are ``a/b/c``) and the
files are read back by ``datasets.load_dataset("json")`` and by ``read_problems`` alike. Errors name file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
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


def iter_jsonl(path: str | Path, missing: str = "no such file") -> Iterator[tuple[int, dict]]:
    """(line number, row) of each non-blank line of a JSONL file. A missing file raises ``FileNotFoundError``
    ("PATH: ``missing``"); a line that is not a JSON object raises ``ValueError`` naming ``file:line``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: {missing}")
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not valid JSON: {e}") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield lineno, row


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file; a bad line raises ``ValueError`` naming ``file:line``."""
    return [row for _, row in iter_jsonl(path)]


def write_problems(path: str | Path, problems: Iterable[Problem]) -> int:
    return write_jsonl(path, (p.model_dump(mode="json") for p in problems))


def read_problems(path: str | Path | Sequence[str | Path], limit: int | None = None) -> list[Problem]:
    """The first ``limit`` (default: all) problems of a Problem JSONL file, such as ``corecode build-data`` writes,
    or of a list of such files read one after the other (GRPO training on several sources).

    The one reader of problem files. A missing file raises ``FileNotFoundError`` (saying to run ``corecode
    build-data``); a line that is not a Problem, or a file without problems, raises ``ValueError`` naming
    ``file:line`` and the key.
    """
    if not isinstance(path, (str, Path)):
        problems: list[Problem] = []
        for one in path:
            if limit is not None and len(problems) >= limit:
                break
            problems += read_problems(one, None if limit is None else limit - len(problems))
        if not problems:
            raise ValueError("no problem files given")
        return problems
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: problem file not found (run `corecode build-data` first)")
    problems: list[Problem] = []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and len(problems) >= limit:
                break
            if not line.strip():
                continue
            try:
                problems.append(Problem.model_validate_json(line))
            except ValidationError as e:
                first = e.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                key = f"{where}: " if where else ""  # no key: the line is not JSON at all
                raise ValueError(f"{path}:{lineno}: invalid problem: {key}{first['msg']}") from None
    if not problems:
        raise ValueError(f"{path}: no problems in file")
    return problems
