"""HumanEval+ and MBPP+ in the evalplus schema.

Assumed schema (evalplus release JSONL, also ``evalplus/humanevalplus`` on the hub): ``task_id`` ("HumanEval/0",
"Mbpp/2"), ``prompt``, ``canonical_solution``, ``entry_point``, optional ``test`` (a human-eval ``check(candidate)``
program), ``base_input`` / ``plus_input`` (lists of argument lists) and ``atol``. Extra inputs become ``TestCase``s
with ``output=None`` (computed by running the trusted canonical solution, as evalplus does). ``evalplus/mbppplus`` hub
rows (``task_id`` int, ``prompt``, ``code``, ``test_list``, ``test``) are read like MBPP with the ``test`` script run
inside ``check``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from corecode.data.loaders.hub import convert_rows, first_call_name, load_rows, req
from corecode.data.loaders.mbpp import mbpp_problem
from corecode.data.schema import Problem, TestCase


def evalplus_problem(row: dict, source: str, split: str = "test") -> Problem:
    if "canonical_solution" not in row:  # evalplus/mbppplus hub layout
        p = mbpp_problem(row, source=source, split=split)
        if row.get("test"):
            entry = first_call_name(list(row["test_list"]))
            p.check_code = f"def check(candidate):\n    {entry} = candidate\n" + textwrap.indent(row["test"], "    ")
        return p
    tid = str(row["task_id"])
    inputs = list(row.get("base_input") or []) + list(row.get("plus_input") or [])
    atol = row.get("atol")
    return Problem(
        task_id=tid if "/" in tid else f"{source}/{tid}",
        source=source,
        split=split,
        prompt=row["prompt"],
        io_mode="function",
        entry_point=req(row, "entry_point"),
        check_code=row.get("test") or None,
        tests=[TestCase(input=repr(list(args)), output=None) for args in inputs],
        reference_solution=req(row, "prompt") + row["canonical_solution"],
        float_tol=float(atol) if atol else None,
    )


def load_evalplus(
    path: str | Path, source: str = "humaneval_plus", split: str | None = "test", limit: int | None = None
) -> list[Problem]:
    """HumanEval+/MBPP+ problems from a hub id (e.g. ``evalplus/humanevalplus``) or a local evalplus JSONL."""
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"{source}[{path}]", rows, lambda r: evalplus_problem(r, source, split or "test"))
