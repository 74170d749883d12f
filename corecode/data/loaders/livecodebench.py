"""LiveCodeBench (``livecodebench/code_generation_lite``).

Assumed schema: ``question_id``, ``question_title``, ``question_content``, ``platform`` (leetcode/codeforces/atcoder),
``contest_id``, ``contest_date``, ``starter_code``, ``difficulty``, ``public_test_cases`` (JSON string: list of
``{"input", "output", "testtype": "stdin"|"functional"}``), ``private_test_cases`` (the same JSON, or that JSON pickled,
zlib-compressed and base64-encoded), ``metadata`` (JSON string, ``{"func_name": ...}`` for functional problems).
Functional inputs are newline-separated JSON values, one per argument. The pickle is read with an unpickler that
refuses every global, so only plain strings/containers can come out of it (a dataset file is not trusted code).
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from pathlib import Path

from corecode.data.loaders.hub import convert_rows, json_field, load_rows, req
from corecode.data.schema import Problem, TestCase


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: ARG002 - refuse all globals
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name} from a dataset file")


def decode_private_tests(value: str | list | None) -> list[dict]:
    """``private_test_cases`` as a list of dicts, whichever of the two encodings it uses."""
    if not value:
        return []
    if isinstance(value, list):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raw = zlib.decompress(base64.b64decode(value.encode("utf-8")))
        return json.loads(_PlainUnpickler(io.BytesIO(raw)).load())


def lcb_test_case(case: dict) -> TestCase:
    """One LiveCodeBench test: functional inputs are newline-separated JSON values (one per argument)."""
    if case.get("testtype") == "functional":
        args = [json.loads(line) for line in case["input"].splitlines() if line.strip()]
        return TestCase(input=repr(args), output=repr(json.loads(case["output"])))
    return TestCase(input=case["input"], output=case["output"])


def lcb_problem(row: dict, split: str = "test") -> Problem:
    cases = list(json_field(req(row, "public_test_cases")) or []) + decode_private_tests(row.get("private_test_cases"))
    functional = bool(cases) and cases[0].get("testtype") == "functional"
    meta = json_field(row.get("metadata")) or {}
    starter = row.get("starter_code") or ""
    prompt = f"{row['question_title']}\n\n{row['question_content'].strip()}\n"
    if starter:
        prompt += f"\n{starter.rstrip()}\n"
    return Problem(
        task_id=f"livecodebench/{req(row, 'question_id')}",
        source="livecodebench",
        split=split,
        prompt=prompt,
        io_mode="function" if functional else "stdio",
        entry_point=meta.get("func_name") if functional else None,
        tests=[lcb_test_case(c) for c in cases],
        difficulty=row.get("difficulty"),
        # LeetCode functional problems are methods of ``class Solution`` (starter code); the tag tells the runner.
        tags=[row.get("platform") or "unknown"] + (["class_solution"] if "class Solution" in starter else []),
    )


def load_livecodebench(
    path: str | Path = "livecodebench/code_generation_lite", split: str | None = "test", limit: int | None = None
) -> list[Problem]:
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"livecodebench[{path}]", rows, lambda r: lcb_problem(r, split or "test"))
