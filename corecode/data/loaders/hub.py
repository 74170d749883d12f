"""One code path for every external source: a hub dataset id or a local file/dir, read through ``datasets``.

``path`` is a local JSONL/JSON(.gz) or Parquet file (``load_dataset("json"|"parquet", data_files=...)``), a
``save_to_disk`` directory (``load_from_disk``), or else a hub id (``load_dataset(id, name, split=...)``). Every loader
turns the rows into ``Problem``s; a row that does not fit raises ``ValueError`` naming the source, row and key.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from corecode import pysource
from corecode.data.schema import Problem


def load_rows(path: str | Path, split: str | None = None, name: str | None = None, limit: int | None = None):
    """A ``datasets.Dataset`` from a local file/dir or a hub id (see the module docstring)."""
    import datasets

    p = Path(path)
    if p.is_dir():
        ds = datasets.load_from_disk(str(p))
        if isinstance(ds, datasets.DatasetDict):
            if split is None and len(ds) == 1:
                split = next(iter(ds))
            if split not in ds:
                raise ValueError(f"{p}: split {split!r} not in saved DatasetDict (has {list(ds)})")
            ds = ds[split]
    elif p.is_file():
        suffixes = "".join(p.suffixes[-2:]) if p.suffix == ".gz" else p.suffix
        kind = {".jsonl": "json", ".json": "json", ".jsonl.gz": "json", ".json.gz": "json", ".parquet": "parquet"}
        if suffixes not in kind:
            raise ValueError(
                f"{p}: unsupported file type {suffixes!r} (use .jsonl, .json, .parquet or a save_to_disk dir)"
            )
        ds = datasets.load_dataset(kind[suffixes], data_files=str(p), split="train")
    else:
        ds = datasets.load_dataset(str(path), name, split=split or "test")
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return ds


def convert_rows(source: str, rows: Iterable[dict], convert: Callable[[dict], Problem]) -> list[Problem]:
    """Apply ``convert`` to each row; wrap any failure in a ``ValueError`` naming source, row number and cause."""
    out = []
    for i, row in enumerate(rows):
        try:
            out.append(convert(row))
        except (KeyError, TypeError, ValueError, json.JSONDecodeError, SyntaxError) as e:
            what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
            raise ValueError(f"{source}: row {i}: {what}") from e
    return out


def json_field(value: Any) -> Any:
    """Fields some datasets store as JSON strings (APPS ``input_output``, LCB test cases) -> Python objects."""
    if isinstance(value, str):
        return json.loads(value) if value.strip() else None
    return value


def first_call_name(asserts: list[str]) -> str:
    """The function an MBPP-style ``assert f(...) == ...`` calls (the problem's entry point)."""
    for a in asserts:
        for node in ast.walk(pysource.parse(a)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id
                not in {
                    "set",
                    "abs",
                    "round",
                    "sorted",
                    "list",
                    "tuple",
                    "math",
                    "isclose",
                    "len",
                    "str",
                    "int",
                    "float",
                }
            ):
                return node.func.id
    raise ValueError(f"no function call found in asserts {asserts[:1]}")


def asserts_to_check(entry_point: str, asserts: list[str], setup: str = "") -> str:
    """Human-eval style ``check(candidate)`` from top-level asserts that call ``entry_point`` by name."""
    body = "\n".join("    " + line for a in asserts for line in a.splitlines())
    return f"{setup.strip()}\n\ndef check(candidate):\n    {entry_point} = candidate\n{body}\n".lstrip()


def req(row: dict, key: str):
    """``row[key]``, treating a null (what Arrow puts in a missing column) as missing: ``KeyError(key)``."""
    value = row.get(key)
    if value is None:
        raise KeyError(key)
    return value
