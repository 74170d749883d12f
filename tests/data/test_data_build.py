"""build-data and validate-data end to end (real files, real great-expectations), plus a corrupted copy."""

from __future__ import annotations

import ast
import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from corecode.cli import app
from corecode.data.io import read_jsonl, read_problems, write_jsonl

PARAMS = {
    "seed": 7,
    "data": {
        "composite": {"n_train": 80, "n_val": 12, "n_test": 20, "n_dev": 10, "n_rl": 16},
        "validation": {"max_prompt_chars": 1500},
    },
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump(PARAMS))
    res = CliRunner().invoke(
        app,
        [
            "build-data",
            "--params",
            str(params),
            "--out-dir",
            str(root / "processed"),
            "--reports-dir",
            str(root / "reports"),
        ],
    )
    assert res.exit_code == 0, res.output
    return root, res.output


def test_build_writes_every_file_in_trl_format(built):
    root, output = built
    proc = root / "processed"
    for split, n in (("train", 80), ("val", 12), ("test", 20)):
        probs = read_problems(proc / f"composite_{split}.jsonl")
        assert len(probs) == n and all(p.split == split for p in probs)
    planner = read_jsonl(proc / "planner.jsonl")
    coder = read_jsonl(proc / "coder.jsonl")
    single = read_jsonl(proc / "single.jsonl")
    for rows in (planner, coder, single):
        assert len(rows) == 92
        assert {r["split"] for r in rows} == {"train", "val"}
        assert sum(r["split"] == "val" for r in rows) == 12
        assert all(set(r) == {"prompt", "completion", "task_id", "source", "split", "provenance"} for r in rows)
        assert not any(r["task_id"].startswith("composite/test") for r in rows)
    assert all(r["prompt"].endswith("### Plan\n") and r["completion"].startswith("<plan>\n1. ") for r in planner)
    assert all(r["completion"].endswith("</plan>") for r in planner)  # trainer appends EOS: no trailing junk
    for rows in (coder, single):
        for r in rows:
            assert r["prompt"].endswith("### Code\n") and r["completion"].endswith("\n```")
            ast.parse(r["completion"].removeprefix("```python\n").removesuffix("```"))
    assert all("### Plan\n<plan>" in r["prompt"] for r in coder)
    assert not any("### Plan" in r["prompt"] for r in single)
    assert "planner" in output and "dropped" in output
    card = (root / "reports" / "data_card.md").read_text()
    assert "| planner | train | composite | 80 |" in card and "## Decontamination" in card
    assert "Plan length" in card and "ood:length" in card
    summary = json.loads((root / "reports" / "build_summary.json").read_text())
    assert summary["dropped"] == {"composite": 0}


def test_build_is_deterministic(built, tmp_path):
    root, _ = built
    res = CliRunner().invoke(
        app,
        [
            "build-data",
            "--params",
            str(root / "params.yaml"),
            "--out-dir",
            str(tmp_path / "p"),
            "--reports-dir",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 0
    for name in ("planner", "coder", "composite_test"):
        assert (tmp_path / "p" / f"{name}.jsonl").read_bytes() == (root / "processed" / f"{name}.jsonl").read_bytes()


def test_validate_passes_on_built_data(built):
    root, _ = built
    res = CliRunner().invoke(
        app,
        [
            "validate-data",
            "--params",
            str(root / "params.yaml"),
            "--processed-dir",
            str(root / "processed"),
            "--reports-dir",
            str(root / "reports"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.output.count("PASS") == 8  # planner, coder, single and the five composite splits (dev included)
    summary = json.loads((root / "reports" / "gx" / "summary.json").read_text())
    assert all(s["success"] for s in summary)
    gx = json.loads((root / "reports" / "gx" / "coder.json").read_text())
    assert gx["success"] is True and len(gx["results"]) >= 10
    docs = root / "reports" / "gx_docs"  # apart from gx/, whose bytes the pipeline's next stage depends on
    assert (docs / "index.html").exists() and len(list(docs.glob("validations/**/*.html"))) == 8


def test_validate_fails_on_corrupted_copy(built, tmp_path):
    root, _ = built
    proc = tmp_path / "processed"
    shutil.copytree(root / "processed", proc)
    rows = read_jsonl(proc / "coder.jsonl")
    rows[3]["completion"] = "```python\ndef solve(nums:\n    return\n```"  # does not parse
    rows[5]["task_id"] = rows[4]["task_id"]  # duplicate id in the same split
    rows[6]["prompt"] = None
    write_jsonl(proc / "coder.jsonl", rows)
    plans = read_jsonl(proc / "planner.jsonl")
    plans[2]["completion"] = "<plan>\n1. Do it.\n3. Then this.\n</plan>"  # bad numbering
    write_jsonl(proc / "planner.jsonl", plans)
    before = sorted(p.name for p in proc.iterdir())
    res = CliRunner().invoke(
        app,
        [
            "validate-data",
            "planner",
            "coder",
            "single",
            "--params",
            str(root / "params.yaml"),
            "--processed-dir",
            str(proc),
            "--reports-dir",
            str(tmp_path / "reports"),
        ],
    )
    assert res.exit_code == 1, res.output
    out = res.output
    assert "FAIL coder" in out and "FAIL planner" in out and "PASS single" in out
    assert "column 'code_parses': expect_column_values_to_be_in_set: 1 unexpected (first: line 4" in out
    assert "column 'task_split': expect_column_values_to_be_unique" in out
    assert "column 'prompt': expect_column_values_to_not_be_null: 1 unexpected (first: line 7: None)" in out
    assert "column 'plan_numbering_ok'" in out and "line 3: False" in out
    assert sorted(p.name for p in proc.iterdir()) == before  # nothing deleted
    report = json.loads((tmp_path / "reports" / "gx" / "coder.json").read_text())
    assert report["success"] is False


def test_validate_missing_file_and_wrong_split_size(built, tmp_path):
    root, _ = built
    params = dict(PARAMS, data={**PARAMS["data"], "composite": {"n_train": 81, "n_val": 12, "n_test": 20}})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    res = CliRunner().invoke(
        app,
        [
            "validate-data",
            "composite_train",
            "nope",
            "--params",
            str(tmp_path / "params.yaml"),
            "--processed-dir",
            str(root / "processed"),
            "--reports-dir",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 1
    assert "expect_table_row_count_to_equal" in res.output and "observed 80" in res.output
    assert "nope.jsonl not found" in res.output


def test_bad_params_name_the_key(tmp_path):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"data": {"composite": {"n_trian": 5}}}))
    res = CliRunner().invoke(app, ["build-data", "--params", str(tmp_path / "params.yaml")])
    assert res.exit_code == 2
    assert "data.composite.n_trian" in res.output
