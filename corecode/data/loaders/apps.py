"""APPS (``codeparrot/apps``).

Assumed schema: ``problem_id`` (int), ``question``, ``solutions`` (JSON string: list of programs), ``input_output``
(JSON string ``{"inputs": [...], "outputs": [...], "fn_name"?: str}``), ``difficulty`` (introductory / interview /
competition), ``url``, ``starter_code``. With ``fn_name`` the problem is functional: each input is the argument list and
each output the expected value (APPS often wraps it in a one-element list; kept as stored). Without it, stdio:
inputs and outputs are strings (or lists of lines, joined here).
"""

from __future__ import annotations

from pathlib import Path

from corecode.data.loaders.hub import convert_rows, json_field, load_rows, req
from corecode.data.schema import Problem, TestCase


def _text(v) -> str:
    return "\n".join(v) if isinstance(v, list) else str(v)


def apps_problem(row: dict, split: str = "train") -> Problem:
    io = json_field(row.get("input_output")) or {}
    sols = json_field(row.get("solutions")) or []
    fn = io.get("fn_name")
    ins, outs = io.get("inputs") or [], io.get("outputs") or []
    if fn:
        tests = [TestCase(input=repr(list(i)), output=repr(o)) for i, o in zip(ins, outs)]
    else:
        tests = [TestCase(input=_text(i), output=_text(o)) for i, o in zip(ins, outs)]
    starter = row.get("starter_code") or ""
    prompt = req(row, "question").strip() + "\n" + (f"\n{starter.rstrip()}\n" if starter else "")
    return Problem(
        task_id=f"apps/{req(row, 'problem_id')}",
        source="apps",
        split=split,
        prompt=prompt,
        io_mode="function" if fn else "stdio",
        entry_point=fn,
        tests=tests,
        reference_solution=sols[0] if sols else None,
        difficulty=row.get("difficulty"),
    )


def load_apps(
    path: str | Path = "codeparrot/apps", split: str | None = "train", limit: int | None = None
) -> list[Problem]:
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"apps[{path}]", rows, lambda r: apps_problem(r, split or "train"))
