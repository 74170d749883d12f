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


def test_a_list_of_files_is_read_in_order(tmp_path):
    """GRPO's train_problems may name several files (composite_rl.jsonl and the real sources' RL files)."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_problems(a, PROBLEMS[:2])
    write_problems(b, PROBLEMS[2:])
    assert read_problems([a, str(b)]) == PROBLEMS
    assert read_problems([a, b], limit=3) == PROBLEMS and read_problems([a, b], limit=1) == PROBLEMS[:1]
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        read_problems([a, tmp_path / "missing.jsonl"])
    with pytest.raises(ValueError, match="no problem files given"):
        read_problems([])


def test_grpo_trainers_take_a_list_of_problem_files():
    from corecode.training.grpo_config import TeamGRPOParams
    from corecode.training.single_grpo_config import SingleGRPOParams

    files = ["data/processed/composite_rl.jsonl", "data/processed/sources/mbpp_rl.jsonl"]
    assert TeamGRPOParams(train_problems=files).train_problems == files
    assert SingleGRPOParams(train_problems=files).train_problems == files
