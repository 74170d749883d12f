"""CodeContests (``deepmind/code_contests``).

Assumed schema: ``name``, ``description``, ``public_tests`` / ``private_tests`` / ``generated_tests`` (each
``{"input": [str], "output": [str]}``), ``solutions`` / ``incorrect_solutions`` (``{"language": [int], "solution":
[str]}``, language 1 = Python 2, 2 = C++, 3 = Python 3, 4 = Java), ``difficulty`` (int), ``source`` (int),
``cf_rating``, ``cf_tags``, ``time_limit`` (``{"seconds", "nanos"}``), ``memory_limit_bytes``. All problems are stdio;
the reference solution is the first Python 3 solution, if any.
"""

from __future__ import annotations

from pathlib import Path

from corecode.data.loaders.hub import convert_rows, load_rows, req
from corecode.data.schema import Problem, TestCase

PYTHON3 = 3


def _tests(block: dict | None) -> list[TestCase]:
    if not block:
        return []
    return [TestCase(input=i, output=o) for i, o in zip(block.get("input") or [], block.get("output") or [])]


def code_contests_problem(row: dict, split: str = "train", max_generated: int = 20) -> Problem:
    sols = row.get("solutions") or {}
    py3 = [s for lang, s in zip(sols.get("language") or [], sols.get("solution") or []) if lang == PYTHON3]
    tl = row.get("time_limit") or {}
    time_s = (tl.get("seconds") or 0) + (tl.get("nanos") or 0) / 1e9
    mem = row.get("memory_limit_bytes")
    tests = _tests(row.get("public_tests")) + _tests(row.get("private_tests"))
    tests += _tests(row.get("generated_tests"))[:max_generated]
    return Problem(
        task_id=f"code_contests/{req(row, 'name')}",
        source="code_contests",
        split=split,
        prompt=req(row, "description").strip() + "\n",
        io_mode="stdio",
        tests=tests,
        reference_solution=py3[0] if py3 else None,
        difficulty=str(row.get("cf_rating") or row.get("difficulty") or "") or None,
        tags=list(row.get("cf_tags") or []),
        time_limit_s=time_s or None,
        memory_limit_mb=int(mem / 2**20) if mem else None,
    )


def load_code_contests(
    path: str | Path = "deepmind/code_contests", split: str | None = "train", limit: int | None = None
) -> list[Problem]:
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"code_contests[{path}]", rows, lambda r: code_contests_problem(r, split or "train"))
