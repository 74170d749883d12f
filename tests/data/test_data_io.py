"""corecode.data.io.read_problems: the one reader of Problem JSONL files."""

import json

import pytest

from corecode.data.io import read_problems, write_problems
from corecode.data.schema import Problem

PROBLEMS = [Problem(task_id=f"t/{i}", source="t", prompt=f"def f{i}():\n", entry_point=f"f{i}") for i in range(3)]


def test_reads_all_or_the_first_limit(tmp_path):
    path = tmp_path / "p.jsonl"
    write_problems(path, PROBLEMS)
    path.write_text(path.read_text() + "\n")  # blank lines are skipped
    assert read_problems(path) == PROBLEMS
    assert read_problems(path, limit=2) == PROBLEMS[:2]


def test_errors_name_the_file_line_and_key(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(PROBLEMS[0].model_dump_json() + "\n" + json.dumps({"task_id": 3}) + "\n")
    with pytest.raises(ValueError, match=rf"^{path}:2: invalid problem: task_id: "):
        read_problems(path)
    path.write_text(PROBLEMS[0].model_dump_json() + "\n{not json\n")
    with pytest.raises(ValueError, match=rf"^{path}:2: invalid problem: Invalid JSON"):
        read_problems(path)
    path.write_text("\n")
    with pytest.raises(ValueError, match=rf"^{path}: no problems in file"):
        read_problems(path)
    with pytest.raises(FileNotFoundError, match=r"missing.jsonl: problem file not found \(run `corecode build-data`"):
        read_problems(tmp_path / "missing.jsonl")
