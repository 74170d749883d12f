"""Codeforces (``open-r1/codeforces``).

Assumed schema: ``id`` ("2063/A"), ``contest_id``, ``index``, ``title``, ``description``, ``input_format``,
``output_format``, ``examples`` (list of ``{"input", "output"}``), ``note``, ``rating``, ``tags``, ``time_limit``
(seconds, float), ``memory_limit`` (MB), ``official_tests`` (list of ``{"input", "output"}``, may be empty),
``official_tests_complete``, ``input_mode`` ("stdio" | "file"), ``interaction_format``, ``generated_checker`` (a
checker program, for problems with more than one right answer). Tests are the official tests when present, else the
statement's examples. The dataset carries no reference solutions (editorials only). Tags name what exact-output
stdio tests cannot judge: ``interactive``, ``file_io`` (input_mode file), ``custom_checker``.
"""

from __future__ import annotations

from pathlib import Path

from corecode.data.loaders.hub import convert_rows, load_rows, req
from corecode.data.schema import Problem, TestCase


def codeforces_problem(row: dict, split: str = "test") -> Problem:
    parts = [f"{row.get('title') or req(row, 'id')}", row.get("description") or ""]
    if row.get("input_format"):
        parts.append("Input\n" + row["input_format"])
    if row.get("output_format"):
        parts.append("Output\n" + row["output_format"])
    for ex in row.get("examples") or []:
        parts.append(f"Example input\n{ex['input']}\nExample output\n{ex['output']}")
    cases = row.get("official_tests") or row.get("examples") or []
    return Problem(
        task_id=f"codeforces/{req(row, 'id')}",
        source="codeforces",
        split=split,
        prompt="\n\n".join(p.strip() for p in parts if p) + "\n",
        io_mode="stdio",
        tests=[TestCase(input=c["input"], output=c["output"]) for c in cases],
        difficulty=str(row["rating"]) if row.get("rating") is not None else None,
        tags=list(row.get("tags") or [])
        + (["interactive"] if row.get("interaction_format") else [])
        + (["file_io"] if row.get("input_mode") == "file" else [])
        + (["custom_checker"] if row.get("generated_checker") else []),
        time_limit_s=float(row["time_limit"]) if row.get("time_limit") else None,
        memory_limit_mb=int(row["memory_limit"]) if row.get("memory_limit") else None,
    )


def load_codeforces(
    path: str | Path = "open-r1/codeforces", split: str | None = "test", limit: int | None = None
) -> list[Problem]:
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"codeforces[{path}]", rows, lambda r: codeforces_problem(r, split or "test"))
