"""MBPP (``google-research-datasets/mbpp``, configs ``full`` and ``sanitized``).

Assumed schema: ``full``: ``task_id`` (int), ``text``, ``code``, ``test_list`` (assert strings), ``test_setup_code``,
``challenge_test_list``; ``sanitized``: ``task_id``, ``prompt``, ``code``, ``test_imports``, ``test_list``,
``source_file``. The prompt is human-eval shaped: a docstring with the statement and the first assert (the usual MBPP
convention, which also tells the model the function name).
"""

from __future__ import annotations

from pathlib import Path

from corecode.data.loaders.hub import asserts_to_check, convert_rows, first_call_name, load_rows, req
from corecode.data.schema import Problem

HUB_ID = "google-research-datasets/mbpp"


def mbpp_problem(row: dict, source: str = "mbpp", split: str = "train") -> Problem:
    text = row.get("text") or row["prompt"]
    asserts = list(req(row, "test_list"))
    entry = first_call_name(asserts)
    setup = row.get("test_setup_code") or "\n".join(row.get("test_imports") or [])
    return Problem(
        task_id=f"{source}/{req(row, 'task_id')}",
        source=source,
        split=split,
        prompt=f'"""\n{text.strip()}\n{asserts[0].strip()}\n"""\n',
        io_mode="function",
        entry_point=entry,
        check_code=asserts_to_check(entry, asserts, setup),
        reference_solution=req(row, "code").replace("\r\n", "\n"),
    )


def load_mbpp(
    path: str | Path = HUB_ID, split: str | None = "train", name: str | None = "full", limit: int | None = None
) -> list[Problem]:
    """MBPP problems from the hub (``path`` = dataset id) or a local JSONL/Parquet/save_to_disk copy."""
    rows = load_rows(path, split=split, name=name, limit=limit)
    return convert_rows(f"mbpp[{path}]", rows, lambda r: mbpp_problem(r, split=split or "train"))
