"""LiveBench coding (``livebench/coding``, split ``test``).

Schema (the hub dataset card, and ``livebench/process_results/coding/utils.py`` of LiveBench, which scores it):
``question_id``, ``category`` ("coding"), ``task`` ("LCB_generation" | "coding_completion"), ``turns`` (list of str:
the prompt LiveBench sends, with its own answer-format instructions), ``question_title``, ``public_test_cases`` (JSON
string), ``private_test_cases`` (JSON, or JSON pickled + zlib + base64, as LiveCodeBench stores them),
``original_json`` (the LiveCodeBench record: ``question_title``, ``question_content``, ``platform``,
``question_id``, ``contest_id``, ``contest_date``, ``starter_code``, ``difficulty``, ``metadata`` (JSON string,
``{"func_name": ...}`` for functional problems)), ``release_date``, ``citation``, ``livebench_release_date``,
``livebench_removal_date``, and for ``coding_completion``: ``partial_solution`` (the given start of the program),
``remainder`` (the rest) and ``solution`` (the whole program).

Tests are read exactly as LiveCodeBench's (``livecodebench.decode_private_tests``, ``livecodebench.lcb_test_case``). The
prompt is the statement (``original_json.question_content``) and the starter code, as in the LiveCodeBench loader,
not ``turns[0]``, whose format instructions would contradict the project's Planner/Coder formats. For
``coding_completion`` the partial solution takes the starter code's place; the Coder answers with the whole program
(LiveBench's scorer also accepts an answer that is only the remainder, by prepending the partial solution; here such
an answer fails). Tags: platform, task, ``livebench:<release date>``, and ``class_solution`` for LeetCode problems.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from corecode.data.loaders.hub import convert_rows, json_field, load_rows, req
from corecode.data.loaders.livecodebench import decode_private_tests, lcb_test_case
from corecode.data.schema import Problem

HUB_ID = "livebench/coding"


def _day(value) -> str:
    """A release date (a datetime from Parquet, or a string from JSON) as YYYY-MM-DD."""
    if isinstance(value, (datetime, date)):
        return value.strftime("%Y-%m-%d")
    return str(value)[:10]


def livebench_problem(row: dict, split: str = "test") -> Problem:
    original = req(row, "original_json")
    task = req(row, "task")
    cases = list(json_field(req(row, "public_test_cases")) or []) + decode_private_tests(row.get("private_test_cases"))
    functional = bool(cases) and cases[0].get("testtype") == "functional"
    meta = json_field(original.get("metadata")) or {}
    partial = row.get("partial_solution") or ""
    starter = partial if task == "coding_completion" and partial else (original.get("starter_code") or "")
    title = row.get("question_title") or original.get("question_title") or ""
    prompt = f"{title}\n\n{req(original, 'question_content').strip()}\n"
    if starter:
        prompt += f"\n{starter.rstrip()}\n"
    tags = [original.get("platform") or "unknown", task]
    if row.get("livebench_release_date"):
        tags.append(f"livebench:{_day(row['livebench_release_date'])}")
    if "class Solution" in starter:
        tags.append("class_solution")
    return Problem(
        task_id=f"livebench/{req(row, 'question_id')}",
        source="livebench",
        split=split,
        prompt=prompt,
        io_mode="function" if functional else "stdio",
        entry_point=meta.get("func_name") if functional else None,
        tests=[lcb_test_case(c) for c in cases],
        reference_solution=row.get("solution") or None,
        difficulty=original.get("difficulty"),
        tags=tags,
    )


def load_livebench(path: str | Path = HUB_ID, split: str | None = "test", limit: int | None = None) -> list[Problem]:
    """LiveBench coding problems from the hub id or a local Parquet/JSONL/save_to_disk copy."""
    rows = load_rows(path, split=split, limit=limit)
    return convert_rows(f"livebench[{path}]", rows, lambda r: livebench_problem(r, split or "test"))
