"""``corecode solve`` end to end on a tiny random-init Qwen2 checkpoint (output text is garbage; the path must work)."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from typer.testing import CliRunner

from corecode.cli import app

PROBLEM = 'def add(a, b):\n    """Return a + b.\n    >>> add(1, 2)\n    3\n    """\n'


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory):
    from corecode.models.testing import make_tiny_checkpoint

    out = tmp_path_factory.mktemp("ckpt") / "tiny"
    texts = [
        f"### Problem\n{PROBLEM}### Plan\n<plan>\n1. add a and b\n</plan>",
        "```python\ndef add(a, b):\n    return a + b\n```",
    ]
    return make_tiny_checkpoint(out, texts, train_steps=0)


@pytest.fixture
def params_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        textwrap.dedent("""
        agents:
          sampling:
            planner: {max_new_tokens: 12}
            coder: {max_new_tokens: 12}
            repair: {max_new_tokens: 12}
          teams:
            pc: {type: planner_coder, roles: {planner: data/nowhere/planner, coder: data/nowhere/coder}}
            solo: {type: single, roles: {coder: data/nowhere/coder}}
            fix: {type: debugging, options: {inner: solo, max_rounds: 1}}
          default_team: pc
    """)
    )
    return path


def test_solve_planner_coder_rich_output(tiny_ckpt, params_file):
    res = CliRunner().invoke(
        app,
        [
            "solve",
            PROBLEM,
            "--team",
            "pc",
            "--planner",
            str(tiny_ckpt),
            "--coder",
            str(tiny_ckpt),
            "--params",
            str(params_file),
            "--n",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output + repr(res.exception)
    assert "problem cli/0" in res.output
    assert "attempt 1/2: plan" in res.output and "attempt 2/2: code" in res.output
    assert "tokens {" in res.output
    # the checkpoints it used are named, and each attempt was run on the statement's example (add(1, 2) -> 3)
    assert f"planner: {tiny_ckpt}" in res.output and f"coder: {tiny_ckpt}" in res.output
    for k in (1, 2):
        assert re.search(rf"attempt {k}: \w+ \([01]/1 on the statement's 1 example\)", res.output), res.output


def test_solve_debugging_team_json_from_a_file(tiny_ckpt, params_file, tmp_path):
    prob = tmp_path / "add.py"
    prob.write_text(PROBLEM)
    res = CliRunner().invoke(
        app,
        [
            "solve",
            str(prob),
            "--team",
            "fix",
            "--coder",
            str(tiny_ckpt),
            "--params",
            str(params_file),
            "--json",
            "--set",
            "agents.sampling.coder.temperature=0",
        ],
    )
    assert res.exit_code == 0, res.output + repr(res.exception)
    (row,) = json.loads(res.stdout)  # stdout only: model-loading progress bars go to stderr
    assert row["task_id"] == "cli/0" and row["tokens"]["coder"] > 0
    assert row["checkpoints"] == {"coder": str(tiny_ckpt), "repair": str(tiny_ckpt)}
    assert row["tested_on"] == "the statement's 1 example" and row["verdict"] and len(row["tests"]) == 1
    assert row["meta"]["visible_tests"] == 1 and len(row["meta"]["visible_verdicts"]) >= 1
    if row["meta"]["visible_verdicts"][0] != "passed":  # garbage code fails, so the repair role must have spoken
        assert row["meta"]["repair_rounds"] == 1 and "repair_1" in row["raw"]


def test_solve_errors_are_clear(params_file):
    runner = CliRunner()
    res = runner.invoke(app, ["solve", PROBLEM, "--team", "nope", "--params", str(params_file)])
    assert res.exit_code != 0 and "no team named 'nope'" in res.output
    res = runner.invoke(app, ["solve", PROBLEM, "--team", "solo", "--planner", "x", "--params", str(params_file)])
    assert res.exit_code != 0 and "has no role 'planner'" in res.output
    res = runner.invoke(app, ["solve", PROBLEM, "--params", str(params_file), "--set", "agents.teams.pc.type=magic"])
    assert res.exit_code != 0 and "agents.teams.pc.type" in res.output
    res = runner.invoke(app, ["solve", PROBLEM, "--team", "solo", "--params", str(params_file)])
    assert res.exit_code == 1 and "cannot build team 'solo'" in res.output and "data/nowhere/coder" in res.output


def test_problem_from_arg_variants(tmp_path):
    from corecode.agents.cli import problem_from_arg
    from corecode.data.schema import Problem

    p = problem_from_arg("def helper(x):\n    return x\n\ndef solve(n):\n    pass\n")
    assert p.io_mode == "function" and p.entry_point == "solve"
    assert problem_from_arg("Read two ints and print their sum.").io_mode == "stdio"
    jl = tmp_path / "ps.jsonl"
    rows = [Problem(task_id=f"t/{i}", source="s", prompt=f"P{i}") for i in range(3)]
    jl.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    assert problem_from_arg(str(jl), "t/2").prompt == "P2"
    assert problem_from_arg(str(jl)).task_id == "t/0"


def test_render_does_not_interpret_model_text_as_markup():
    from rich.console import Console

    from corecode.agents.cli import render
    from corecode.agents.teams import Attempt
    from corecode.data.schema import Problem

    console = Console(width=100, record=True)
    att = Attempt(
        task_id="t[/x]",
        code="print('[/x]')",
        program="",
        plan="1. keep [/b] and [red]",
        failures={"coder": "bad [/x]"},
        notes={"planner": ["[/y]"]},
        tokens={"coder": 1},
    )
    render(Problem(task_id="t[/x]", source="s", prompt="f([/bold])"), [att], console)
    text = console.export_text()
    for s in ("f([/bold])", "1. keep [/b] and [red]", "print('[/x]')", "coder failed: bad [/x]", "planner: [/y]"):
        assert s in text


def test_judge_runs_the_problems_tests_or_the_statements_examples_in_the_sandbox(tmp_path):
    from corecode.agents.cli import judge, problem_from_arg
    from corecode.agents.teams import Attempt
    from corecode.data.schema import Problem, TestCase
    from corecode.sandbox import Sandbox
    from corecode.sandbox.config import SandboxParams

    def attempt(program):
        return Attempt(task_id="t", code=program, program=program)

    right, wrong = attempt("def add(a, b):\n    return a + b\n"), attempt("def add(a, b):\n    return a - b\n")
    stated = problem_from_arg(PROBLEM + "    # add(2, 2) == 4\n")  # a doctest and a call with its result
    with_tests = Problem(
        task_id="p/1",
        source="s",
        prompt="def add(a, b): ...",
        entry_point="add",
        tests=[
            TestCase(input="[1, 1]", output="2"),
            TestCase(input="[0, 5]", output="5"),
            TestCase(input="[2, 2]", output="4"),
        ],
    )
    with Sandbox(SandboxParams(cache_dir=str(tmp_path / "cache"))) as box:
        what, (ok, bad) = judge(stated, [right, wrong], box)
        assert what == "the statement's 2 examples"
        assert ok.passed and [t.verdict.value for t in ok.tests] == ["passed", "passed"]
        assert not bad.passed and bad.verdict.value == "wrong_answer" and "expected" in bad.tests[0].detail
        what, (ok, bad) = judge(with_tests, [right, wrong], box)
        assert what == "the problem's tests" and ok.passed and len(ok.tests) == 3 and not bad.passed
        what, results = judge(problem_from_arg("Read two ints and print their sum."), [right], box)
        assert results == [None] and "not run" in what
