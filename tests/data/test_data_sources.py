"""Real sources end to end on fixture files in their hub schemas: build-data writes each train source's RL problems
and SFT rows, decontaminated against every evaluation set, within the source's limits; validate-data runs one
great-expectations suite per source; a teacher plans (and codes) Codeforces problems, which have no reference."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from corecode.data.build import build_data, for_rl, rl_path
from corecode.data.config import (
    CompositeParams,
    DataParams,
    DecontamParams,
    SourceSpec,
    TeacherParams,
    ValidationParams,
)
from corecode.data.io import read_jsonl, read_problems, write_jsonl
from corecode.data.validate import validate_datasets

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"
COMPOSITE = CompositeParams(n_train=20, n_val=4, n_test=6, n_dev=5, n_rl=5)
EVAL_SOURCES = {
    "livebench": SourceSpec(loader="livebench", path=str(FIX / "livebench.parquet"), role="eval"),
    "livecodebench": SourceSpec(loader="livecodebench", path=str(FIX / "livecodebench.jsonl"), role="eval"),
    "humaneval_plus": SourceSpec(loader="evalplus", path=str(FIX / "humanevalplus.jsonl"), role="eval"),
    "mbpp_plus": SourceSpec(loader="evalplus", path=str(FIX / "mbppplus.jsonl"), role="eval"),
}


def _apps_with_a_livebench_copy(tmp_path: Path) -> Path:
    """The APPS fixture plus a row whose statement is LiveBench's first problem (decontamination must drop it)."""
    rows = [json.loads(line) for line in (FIX / "apps.jsonl").read_text().splitlines()]
    rows.append(
        {
            "problem_id": 99,
            "question": "Triple Sum\n\nRead three integers and print their sum.",
            "solutions": json.dumps(["print(sum(map(int, input().split())))\n"]),
            "input_output": json.dumps({"inputs": ["1 2 3\n"], "outputs": ["6\n"]}),
            "difficulty": "introductory",
            "url": "https://atcoder.jp/x",
            "starter_code": "",
        }
    )
    path = tmp_path / "apps.jsonl"
    write_jsonl(path, rows)
    return path


def _data(tmp_path: Path, **kw) -> DataParams:
    limits = ValidationParams().per_source
    limits["mbpp"] = limits["mbpp"].model_copy(update={"max_completion_chars": 150})
    limits["apps"] = limits["apps"].model_copy(update={"max_tests": 1, "max_test_chars": 7})
    return DataParams(
        **{
            "composite": COMPOSITE,
            "train_sources": ["composite", "mbpp", "apps", "cc", "cf"],
            "sources": {
                "mbpp": SourceSpec(loader="mbpp", path=str(FIX / "mbpp.jsonl"), rl_fraction=0.0),
                "apps": SourceSpec(loader="apps", path=str(_apps_with_a_livebench_copy(tmp_path)), rl_fraction=1.0),
                "cc": SourceSpec(loader="code_contests", path=str(FIX / "code_contests.jsonl"), rl_fraction=0.5),
                "cf": SourceSpec(loader="codeforces", path=str(FIX / "codeforces.jsonl"), rl_fraction=1.0),
                **EVAL_SOURCES,
            },
            "decontam": DecontamParams(n=8),
            "validation": ValidationParams(per_source=limits),
            **kw,
        }
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    data = _data(root)
    summary = build_data(data, 0, root / "p", root / "r", progress=False)
    return root, data, summary


def test_rl_files_per_source_in_the_problem_schema(built):
    root, _, s = built
    apps = read_problems(rl_path(root / "p", "apps"))
    assert [p.task_id for p in apps] == ["apps/1", "apps/2", "apps/3"]  # apps/99 copies a LiveBench problem
    assert all(p.split == "rl" for p in apps)
    # limits: tests over max_test_chars cut, then the first max_tests kept
    assert [(t.input, t.output) for t in apps[0].tests] == [("1\n", "1\n")]
    assert [(t.input, t.output) for t in apps[2].tests] == [("x\ny", "y\nx")]
    cf = read_problems(rl_path(root / "p", "cf"))
    assert [p.task_id for p in cf] == ["codeforces/2063/A", "codeforces/2063/B"]  # not interactive, not file io
    assert s.sources["cf"] == {
        "loaded": 4,
        "decontaminated": 0,
        "rl": 2,
        "rl_unusable": 2,
        "sft_problems": 0,
        "sft_rows_over_limits": 0,
    }
    assert s.sources["apps"]["decontaminated"] == 1 and "apps/99" in s.dropped_ids
    # seed 0 keeps two of CodeContests' three problems for GRPO; 3_C has no Python reference, its tests judge alone
    assert [p.task_id for p in read_problems(rl_path(root / "p", "cc"))] == [
        "code_contests/2_B. Reverse Words",
        "code_contests/3_C. Only Cpp",
    ]
    assert s.sources["cc"] == {
        "loaded": 3,
        "decontaminated": 0,
        "rl": 2,
        "rl_unusable": 0,
        "sft_problems": 1,
        "sft_rows_over_limits": 0,
    }
    assert not (root / "p" / "sources" / "mbpp_rl.jsonl").read_text()  # rl_fraction 0: written, empty
    assert s.rows["apps_rl"] == {"rl": 3} and s.files["cf_rl"] == str(rl_path(root / "p", "cf"))


def test_sft_rows_from_reference_solutions_within_limits(built):
    root, _, s = built
    single = read_jsonl(root / "p" / "single.jsonl")
    mbpp = [r for r in single if r["source"] == "mbpp"]
    # decontaminated: mbpp/9001 (HumanEval/0) and mbpp/17 (in MBPP+); mbpp/3's code is over the 150-character limit
    assert [r["task_id"] for r in mbpp] == ["mbpp/2"]
    assert s.sources["mbpp"] == {
        "loaded": 4,
        "decontaminated": 2,
        "rl": 0,
        "rl_unusable": 0,
        "sft_problems": 2,
        "sft_rows_over_limits": 1,
    }
    assert sorted(s.dropped_ids) == ["apps/99", "mbpp/17", "mbpp/9001"]
    assert mbpp[0]["completion"].startswith("```python\ndef similar_elements(")
    assert mbpp[0]["provenance"].startswith("mbpp:mbpp:") and mbpp[0]["split"] == "train"
    # a problem is for GRPO or for SFT, never both
    assert [r["task_id"] for r in single if r["source"] == "code_contests"] == ["code_contests/1_A. Double It"]
    # no plans without a teacher: the Planner and Coder sets stay composite's
    assert {r["source"] for r in read_jsonl(root / "p" / "planner.jsonl")} == {"composite"}
    card = (root / "r" / "data_card.md").read_text()
    assert "## External sources" in card and "| cf | 4 | 0 | 2 | 2 | 0 | 0 |" in card
    assert json.loads((root / "r" / "build_summary.json").read_text())["sources"]["apps"]["rl"] == 3


def test_composite_outputs_do_not_depend_on_the_sources(built, tmp_path):
    root, data, _ = built
    plain = data.model_copy(update={"train_sources": ["composite"], "sources": {}})
    s = build_data(plain, 0, tmp_path / "p", tmp_path / "r", progress=False)
    for name in ("composite_train", "composite_val", "composite_test", "composite_rl", "planner", "coder"):
        assert (tmp_path / "p" / f"{name}.jsonl").read_bytes() == (root / "p" / f"{name}.jsonl").read_bytes(), name
    assert "sources" not in json.loads((tmp_path / "r" / "build_summary.json").read_text()) and not s.sources
    assert list((tmp_path / "p" / "sources").iterdir()) == []  # the directory the pipeline declares, empty


def test_validate_runs_a_suite_per_source(built):
    root, data, _ = built
    results = validate_datasets(data, None, root / "p", root / "r", html=False)
    by_name = {r.name: r for r in results}
    assert all(r.success for r in results), [(r.name, [str(f) for f in r.failures]) for r in results if not r.success]
    assert {
        "planner",
        "coder",
        "single",
        "single.mbpp",
        "single.code_contests",
        "apps_rl",
        "cc_rl",
        "cf_rl",
        "composite_rl",
    } <= set(by_name)
    assert "mbpp_rl" not in by_name  # rl_fraction 0: nothing kept for GRPO, nothing to check
    assert by_name["single.mbpp"].rows == 1 and by_name["cf_rl"].rows == 2 and by_name["apps_rl"].rows == 3
    assert (root / "r" / "gx" / "single.mbpp.json").exists()


def test_validate_fails_on_bad_rl_problems(built, tmp_path):
    root, data, _ = built
    probs = read_problems(rl_path(root / "p", "cf"))
    huge = probs[0].model_copy(update={"task_id": "codeforces/huge", "tests": probs[0].tests * 60})
    interactive = probs[1].model_copy(update={"task_id": "codeforces/i", "tags": ["interactive"]})
    long = probs[1].model_copy(update={"task_id": "codeforces/long", "prompt": "x " * 6000})
    rows = [p.model_dump(mode="json") for p in (*probs, huge, interactive, long)]
    write_jsonl(rl_path(tmp_path / "p", "cf"), rows)
    results = validate_datasets(data, ["cf_rl"], tmp_path / "p", tmp_path / "r", eval_problems=[], html=False)
    (r,) = results
    assert not r.success and r.rows == 5
    text = "\n".join(str(f) for f in r.failures)
    assert "column 'n_tests': expect_column_values_to_be_between: 1 unexpected (first: line 3: 120)" in text
    assert "column 'judgeable': expect_column_values_to_be_in_set: 1 unexpected (first: line 4: False)" in text
    assert "column 'prompt': expect_column_value_lengths_to_be_between: 1 unexpected (first: line 5" in text


def test_for_rl_is_a_stable_fraction():
    ids = [f"apps/{i}" for i in range(2000)]
    picked = [for_rl(t, 0.3, seed=0) for t in ids]
    assert 0.26 < sum(picked) / len(ids) < 0.34
    assert picked == [for_rl(t, 0.3, seed=0) for t in ids]
    assert picked != [for_rl(t, 0.3, seed=1) for t in ids]
    assert not any(for_rl(t, 0.0, 0) for t in ids) and all(for_rl(t, 1.0, 0) for t in ids)
    # a problem on the GRPO side at 0.3 stays there at 0.5: raising rl_fraction only moves problems towards GRPO
    assert all(for_rl(t, 0.5, 0) for t, p in zip(ids, picked) if p)


def test_eval_role_source_cannot_be_a_train_source():
    with pytest.raises(ValueError, match="train_sources: 'livebench' has role 'eval'"):
        DataParams(train_sources=["livebench"], sources=EVAL_SOURCES)


# --- teacher plans for a source without reference solutions (Codeforces), through a scripted HTTP teacher

GOOD_PLAN = "<plan>\n1. Read n.\n2. Print n plus one.\n</plan>"
BAD_PLAN = "<plan>\n1. Print zero.\n</plan>"


class _Teacher(BaseHTTPRequestHandler):
    """Plans well only for "Add One"; as the Coder, writes correct code only when the plan says "plus one"."""

    def log_message(self, *a):
        pass

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = req["prompt"]
        if prompt.startswith("You write short plans"):
            assert "### Reference solution" not in prompt  # Codeforces has none
            text = GOOD_PLAN if "Add One" in prompt else BAD_PLAN
        else:
            text = "```python\nprint(int(input()) + 1)\n```" if "plus one" in prompt else "```python\nprint(0)\n```"
        self._send(
            {
                "choices": [{"index": i, "text": text, "finish_reason": "stop"} for i in range(req["n"])],
                "usage": {"completion_tokens": 10},
            }
        )

    def _send(self, body: dict):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def teacher_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Teacher)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_teacher_plans_and_codes_problems_without_reference(teacher_url, tmp_path):
    from corecode.sandbox.isolation import SandboxUnavailable

    data = DataParams(
        composite=COMPOSITE,
        train_sources=["composite", "cf"],
        sources={
            "cf": SourceSpec(loader="codeforces", path=str(FIX / "codeforces.jsonl"), rl_fraction=0.0),
            **EVAL_SOURCES,
        },
        teacher=TeacherParams(
            enabled=True,
            sources=["cf"],
            base_url=teacher_url,
            model="scripted",
            chat=False,
            n_candidates=2,
            requests_per_second=None,
            cache=str(tmp_path / "cache.jsonl"),
        ),
    )
    try:
        s = build_data(data, 0, tmp_path / "p", tmp_path / "r", progress=False)
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable: {e}")
    # A and B are judgeable (C is interactive, D reads a file and needs a checker); only A's plan led to passing code
    assert s.teacher == {"codeforces": {"problems": 2, "planned": 1, "mean_pass_rate": 0.5}}
    rows = {
        name: [r for r in read_jsonl(tmp_path / "p" / f"{name}.jsonl") if r["source"] == "codeforces"]
        for name in ("planner", "coder", "single")
    }
    assert [r["task_id"] for r in rows["planner"]] == ["codeforces/2063/A"]
    assert rows["planner"][0]["completion"] == GOOD_PLAN
    assert rows["coder"][0]["completion"] == "```python\nprint(int(input()) + 1)\n```"
    assert "### Plan\n" + GOOD_PLAN in rows["coder"][0]["prompt"]
    assert rows["single"][0]["completion"] == rows["coder"][0]["completion"]
    assert rows["coder"][0]["provenance"].endswith("teacher-plan(scripted,pass_rate=1.00):teacher-code")
    results = validate_datasets(data, ["planner", "coder", "single"], tmp_path / "p", tmp_path / "r", html=False)
    assert all(r.success for r in results) and "planner.codeforces" in {r.name for r in results}


def test_the_settings_in_docs_data_md_are_valid():
    """docs/data.md's override blocks validate against the params models (keys and values as documented)."""
    import re

    import yaml

    from corecode.config import Params
    from corecode.models.profiles import deep_merge

    text = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    assert len(blocks) == 2
    tree = Params().model_dump(mode="json")
    for block in blocks:
        tree = deep_merge(tree, block)
    params = Params.model_validate(tree)
    assert len(params.data.train_sources) == 5 and params.data.teacher.enabled
    rl_files = [f"data/processed/sources/{name}_rl.jsonl" for name in params.data.train_sources[1:]]
    assert params.grpo.team.train_problems[1:] == rl_files
    evals = {name for name, spec in params.data.sources.items() if spec.role == "eval"}
    assert set(params.evaluate.benchmarks) - {"composite_test", "humaneval"} == evals
