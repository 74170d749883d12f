"""Loaders: each source's real schema (fixture files) -> Problem, through the same datasets code path as the hub."""

from __future__ import annotations

import ast
import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from corecode.data.benchmarks import load_benchmark
from corecode.data.config import DataParams, SourceSpec
from corecode.data.loaders.apps import load_apps
from corecode.data.loaders.code_contests import load_code_contests
from corecode.data.loaders.codeforces import load_codeforces
from corecode.data.loaders.evalplus import load_evalplus
from corecode.data.loaders.hub import load_rows
from corecode.data.loaders.livebench import load_livebench
from corecode.data.loaders.livecodebench import decode_private_tests, load_livecodebench
from corecode.data.loaders.mbpp import load_mbpp

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"


def test_mbpp():
    probs = load_mbpp(FIX / "mbpp.jsonl", split="train")
    assert [p.task_id for p in probs] == ["mbpp/2", "mbpp/3", "mbpp/17", "mbpp/9001"]
    p = probs[2]
    assert p.entry_point == "square_perimeter" and p.io_mode == "function" and p.split == "train"
    assert "perimeter of a square" in p.prompt and "assert square_perimeter(10)==40" in p.prompt
    assert "\r" not in probs[0].reference_solution
    ns: dict = {}
    exec(p.reference_solution, ns)  # trusted fixture code
    exec(p.check_code, ns)
    ns["check"](ns[p.entry_point])
    with pytest.raises(AssertionError):
        ns["check"](lambda a: 4 * a + 1)


def test_evalplus():
    probs = load_evalplus(FIX / "humanevalplus.jsonl")
    p = probs[0]
    assert p.task_id == "HumanEval/2" and p.entry_point == "truncate_number" and p.float_tol == 1e-6
    assert [ast.literal_eval(t.input) for t in p.tests] == [[3.5], [1.33], [123.456], [999.5], [0.25]]
    assert all(t.output is None for t in p.tests)  # computed from the canonical solution by the sandbox
    assert p.reference_solution.startswith(p.prompt) and "def check(candidate)" in p.check_code
    assert probs[1].float_tol is None


def test_livecodebench_stdin_functional_and_compressed_private_tests():
    probs = load_livecodebench(FIX / "livecodebench.jsonl")
    a, b, c = probs
    assert a.io_mode == "stdio" and [t.input for t in a.tests] == ["1 2\n", "10 20\n", "-5 5\n"]
    assert a.tests[1].output == "30\n" and a.entry_point is None and a.tags == ["atcoder"]
    assert b.io_mode == "function" and b.entry_point == "maxOf" and "class_solution" in b.tags
    assert [(t.input, t.output) for t in b.tests] == [("[[1, 5, 2]]", "5"), ("[[-1]]", "-1")]
    assert [(t.input, t.output) for t in c.tests] == [("['ab', 3]", "'ababab'"), ("['x', 0]", "''")]
    assert "class Solution" in c.prompt


def test_livecodebench_refuses_pickled_globals():
    evil = base64.b64encode(zlib.compress(pickle.dumps(Path("/etc/passwd")))).decode()
    with pytest.raises(pickle.UnpicklingError, match="refusing to load global"):
        decode_private_tests(evil)


def test_code_contests():
    probs = load_code_contests(FIX / "code_contests.jsonl")
    a, b, c = probs
    assert a.task_id == "code_contests/1_A. Double It" and a.io_mode == "stdio"
    assert [t.input for t in a.tests] == ["3\n", "0\n", "-4\n", "100\n"]  # public + private + generated
    assert a.reference_solution == "n = int(input())\nprint(2 * n)\n"  # the Python 3 one, not C++
    assert a.time_limit_s == 2.0 and a.memory_limit_mb == 256 and a.difficulty == "800"
    assert b.time_limit_s == 1.5 and b.tags == ["strings", "implementation"]
    assert c.reference_solution is None and c.time_limit_s is None


def test_apps():
    a, b, c = load_apps(FIX / "apps.jsonl")
    assert a.io_mode == "stdio" and a.tests[0].input == "3\n" and a.reference_solution.startswith("n = int")
    assert b.io_mode == "function" and b.entry_point == "count_vowels"
    assert [(t.input, t.output) for t in b.tests] == [("['hello']", "2"), ("['']", "0"), ("['aeiou']", "5")]
    assert "def count_vowels" in b.prompt
    assert c.tests[0].input == "x\ny" and c.tests[0].output == "y\nx"  # line lists joined


def test_codeforces():
    a, b, c, d = load_codeforces(FIX / "codeforces.jsonl")
    assert a.task_id == "codeforces/2063/A" and [t.input for t in a.tests] == ["1\n", "41\n"]
    assert "Input\nOne integer" in a.prompt and "Example input\n1" in a.prompt
    assert a.time_limit_s == 1.0 and a.memory_limit_mb == 256 and a.difficulty == "800"
    assert a.tags == ["math"] and b.tags == ["implementation"]
    assert [t.input for t in b.tests] == ["3 5"]  # no official tests: fall back to the examples
    assert "interactive" in c.tags and c.tests == [] and c.difficulty is None
    assert d.tags == ["math", "file_io", "custom_checker"]  # what exact-output stdio tests cannot judge


def test_mbpp_plus_hub_layout():
    a, b = load_evalplus(FIX / "mbppplus.jsonl", source="mbpp_plus")
    assert a.task_id == "mbpp_plus/17" and a.entry_point == "square_perimeter" and a.source == "mbpp_plus"
    assert "assert square_perimeter(10)==40" in a.prompt
    ns: dict = {}
    exec(a.reference_solution, ns)  # trusted fixture code
    exec(a.check_code, ns)
    ns["check"](ns["square_perimeter"])
    with pytest.raises(AssertionError):
        ns["check"](lambda x: 4 * x if x != 123 else 0)  # only the plus inputs catch it
    assert b.entry_point == "find_Max_Num"


def test_livebench_real_schema():
    from datasets import Value

    ds = load_rows(FIX / "livebench.parquet")
    assert set(ds.column_names) == {
        "question_id",
        "category",
        "turns",
        "question_title",
        "public_test_cases",
        "private_test_cases",
        "original_json",
        "release_date",
        "citation",
        "task",
        "livebench_release_date",
        "livebench_removal_date",
        "remainder",
        "solution",
        "partial_solution",
    }
    assert (
        ds.features["original_json"]["metadata"] == Value("string") and ds.features["turns"].feature.dtype == "string"
    )
    assert ds.features["livebench_release_date"].dtype.startswith("timestamp")
    gen, fn, completion, stdin_completion = load_livebench(FIX / "livebench.parquet")
    assert gen.task_id.startswith("livebench/a1b2") and gen.source == "livebench" and gen.split == "test"
    assert gen.io_mode == "stdio" and [t.input for t in gen.tests] == ["1 2 3\n", "0 0 0\n", "-1 5 2\n"]  # + private
    assert gen.tags == ["atcoder", "LCB_generation", "livebench:2024-06-24"] and gen.reference_solution is None
    assert gen.prompt == "Triple Sum\n\nRead three integers and print their sum.\n"
    assert fn.io_mode == "function" and fn.entry_point == "countEvens" and "class_solution" in fn.tags
    assert [(t.input, t.output) for t in fn.tests] == [("[[1, 2, 4]]", "2"), ("[[]]", "0")]
    # coding_completion: the partial solution is the starter; the reference is the whole program
    assert completion.prompt.endswith("        best = 0\n") and "coding_completion" in completion.tags
    assert (
        completion.reference_solution.startswith("class Solution:") and "return best" in completion.reference_solution
    )
    assert [(t.input, t.output) for t in completion.tests] == [("[['a', 'abc']]", "3"), ("[['xy']]", "2")]
    assert stdin_completion.prompt.endswith("\ns = input()\n") and stdin_completion.io_mode == "stdio"


def test_livebench_bad_row_names_the_key(tmp_path):
    ds = load_rows(FIX / "livebench.parquet").remove_columns(["original_json"])
    ds.to_parquet(str(tmp_path / "lb.parquet"))
    with pytest.raises(ValueError, match=r"livebench\[.*lb.parquet\]: row 0: missing key 'original_json'"):
        load_livebench(tmp_path / "lb.parquet")


def test_same_code_path_for_parquet_and_save_to_disk(tmp_path):
    ds = load_rows(FIX / "apps.jsonl")
    ds.to_parquet(str(tmp_path / "apps.parquet"))
    ds.save_to_disk(str(tmp_path / "apps_disk"))
    from datasets import DatasetDict

    DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "apps_dict"))
    ref = load_apps(FIX / "apps.jsonl")
    assert load_apps(tmp_path / "apps.parquet") == ref
    assert load_apps(tmp_path / "apps_disk") == ref
    assert [p.task_id for p in load_apps(tmp_path / "apps_dict", split="test")] == [p.task_id for p in ref]
    assert len(load_apps(FIX / "apps.jsonl", limit=2)) == 2


def test_bad_rows_and_files_name_the_problem(tmp_path):
    bad = tmp_path / "mbpp.jsonl"
    rows = [json.loads(line) for line in (FIX / "mbpp.jsonl").read_text().splitlines()]
    del rows[1]["code"]
    bad.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(ValueError, match=r"mbpp\[.*mbpp.jsonl\]: row 1: missing key 'code'"):
        load_mbpp(bad)
    (tmp_path / "x.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_apps(tmp_path / "x.csv")


def test_load_benchmark_names(tmp_path):
    data = DataParams(sources={"my_apps": SourceSpec(loader="apps", path=str(FIX / "apps.jsonl"), role="eval")})
    assert len(load_benchmark("my_apps", params=data)) == 3
    lb = DataParams(
        sources={"livebench": SourceSpec(loader="livebench", path=str(FIX / "livebench.parquet"), role="eval")}
    )
    assert [p.source for p in load_benchmark("livebench", params=lb)] == ["livebench"] * 4
    assert len(load_benchmark("humaneval")) == 164
    assert len(load_benchmark("composite_val", params=DataParams(), seed=0, processed_dir=tmp_path)) == 200
    with pytest.raises(ValueError, match="unknown benchmark 'nope'"):
        load_benchmark("nope", params=data)
    with pytest.raises(ValueError, match="composite needs split"):
        load_benchmark("composite", params=data, seed=0)
