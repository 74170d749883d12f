"""Each team's wiring: scripted role "models", real extraction, programs judged by the real sandbox."""

from __future__ import annotations

import pytest

from corecode.agents import prompts as P
from corecode.agents.teams import (
    CoTTeam,
    HelperMainTeam,
    PlanDraft,
    PlannerCoderTeam,
    PlanThenCodeTeam,
    SingleTeam,
)
from corecode.data.schema import Problem, TestCase

GOOD_ADD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD_ADD = "```python\ndef add(a, b):\n    return a - b\n```"


def test_single_prompts_samples_and_tokens(scripted, add_problem, sandbox):
    gen = scripted(lambda prompt, i: GOOD_ADD if i == 0 else BAD_ADD)
    out = SingleTeam({"coder": gen}).solve([add_problem, add_problem], n=2)
    assert [len(r) for r in out] == [2, 2]
    assert gen.calls[0][0] == [P.coder_prompt(add_problem, None)] * 2 and gen.calls[0][1].n == 2
    a0, a1 = out[0]
    assert a0.plan is None and a0.code == "def add(a, b):\n    return a + b"
    assert a0.raw["coder"] == GOOD_ADD and a0.tokens["coder"] == len(GOOD_ADD.split())
    assert a0.prompts["coder"] == P.coder_prompt(add_problem, None)
    assert sandbox.run(add_problem, a0.program).passed
    assert not sandbox.run(add_problem, a1.program).passed


def test_single_records_extraction_failure(scripted, add_problem):
    ((att,),) = SingleTeam({"coder": scripted(lambda p, i: "   ")}).solve([add_problem], n=1)
    assert att.code is None and att.failures == {"coder": "empty completion"}


def test_cot_splits_reasoning_and_code(scripted, add_problem, sandbox):
    text = "<think>\nAdd the two numbers.\n</think>\n" + GOOD_ADD
    gen = scripted(lambda p, i: text)
    ((att,),) = CoTTeam({"coder": gen}).solve([add_problem], n=1)
    assert gen.prompts == [P.cot_prompt(add_problem)]
    assert att.meta["reasoning"] == "Add the two numbers." and att.code.startswith("def add")
    assert sandbox.run(add_problem, att.program).passed


def test_cot_missing_close_tag_still_finds_code(scripted, add_problem):
    ((att,),) = CoTTeam({"coder": scripted(lambda p, i: "<think>hmm\n" + GOOD_ADD)}).solve([add_problem], n=1)
    assert att.meta["reasoning"] is None and att.code.startswith("def add") and "missing </think>" in att.notes["coder"]


def _planner_script(prompt: str, i: int) -> str:
    return f"<plan>\nStep 1: plan number {i}\n</plan>"


def _coder_script(prompt: str, i: int) -> str:
    # The coder proves it saw the plan: it writes the plan number into the code.
    k = prompt.split("plan number ")[1].split("\n")[0]
    return f"```python\ndef add(a, b):\n    # plan {k} sample {i}\n    return a + b\n```"


def test_planner_coder_nested_steps(scripted, add_problem):
    planner, coder = scripted(_planner_script), scripted(_coder_script)
    team = PlannerCoderTeam({"planner": planner, "coder": coder})
    plans = team.plan([add_problem], n_plans=3)
    assert [[d.plan for d in ps] for ps in plans] == [[f"1. plan number {i}" for i in range(3)]]
    assert planner.prompts == [P.planner_prompt(add_problem)] and planner.calls[0][1].n == 3
    nested = team.code([add_problem], plans, n_codes=2)
    assert [[len(c) for c in per_plan] for per_plan in nested] == [[2, 2, 2]]
    assert len(coder.calls) == 1 and len(coder.calls[0][0]) == 3  # one batched Coder call for all plans
    for j, per_plan in enumerate(nested[0]):
        for k, att in enumerate(per_plan):
            assert f"# plan {j} sample {k}" in att.code and att.plan == f"1. plan number {j}"
            assert att.meta["plan_index"] == j and att.raw["planner"].startswith("<plan>")
            assert "### Plan\n<plan>\n1. plan number" in att.prompts["coder"]
            assert set(att.tokens) == {"planner", "coder"}


def test_planner_coder_solve_flattens_and_trims(scripted, add_problem, sandbox):
    team = PlannerCoderTeam({"planner": scripted(_planner_script), "coder": scripted(_coder_script)}, codes_per_plan=2)
    (row,) = team.solve([add_problem], n=3)
    assert [a.meta["plan_index"] for a in row] == [0, 0, 1]
    assert all(sandbox.run(add_problem, a.program).passed for a in row)


def test_planner_coder_accepts_gold_plan_strings(scripted, add_problem):
    team = PlannerCoderTeam({"planner": scripted(_planner_script), "coder": scripted(_coder_script)})
    (per_problem,) = team.code([add_problem], [["1. plan number 7"]], n_codes=1)
    assert "# plan 7 sample 0" in per_problem[0][0].code and "planner" not in per_problem[0][0].raw


@pytest.mark.parametrize("on_failure,expect_plan_in_prompt", [("raw", True), ("none", False)])
def test_planner_failure_policy(scripted, add_problem, on_failure, expect_plan_in_prompt):
    coder = scripted(lambda p, i: GOOD_ADD)
    team = PlannerCoderTeam(
        {"planner": scripted(lambda p, i: "<plan>\n</plan> just add them"), "coder": coder}, on_plan_failure=on_failure
    )
    (row,) = team.solve([add_problem], n=1)
    assert row[0].failures["planner"].startswith("empty plan") and row[0].plan is None
    assert ("### Plan" in coder.prompts[0]) is expect_plan_in_prompt


def test_plan_draft_for_coder():
    from corecode.agents.prompts import Extracted
    from corecode.generation.base import Completion

    d = PlanDraft("t", "p", Completion("garbage", 1), Extracted(None, "no plan"))
    assert d.for_coder("raw") == "garbage" and d.for_coder("none") is None


SUM_SQ = Problem(
    task_id="toy/sumsq",
    source="toy",
    prompt='def sum_squares(xs):\n    """Sum of squares.\n    >>> sum_squares([1, 2])\n    5\n    """\n',
    entry_point="sum_squares",
    tests=[
        TestCase(input="[[1, 2]]", output="5"),
        TestCase(input="[[3]]", output="9"),
        TestCase(input="[[]]", output="0"),
    ],
)
HELPER = "```python\ndef square(x):\n    return x * x\n\nprint(square(3))\nassert square(2) == 5\n```"
MAIN = "```python\ndef sum_squares(xs):\n    return sum(square(x) for x in xs)\n```"


def test_helper_main_sees_helper_and_program_runs(scripted, sandbox):
    helper, main = scripted(lambda p, i: HELPER), scripted(lambda p, i: MAIN)
    (row,) = HelperMainTeam({"helper": helper, "main": main}).solve([SUM_SQ], n=2)
    assert len(row) == 2 and helper.calls[0][1].n == 2
    assert main.prompts[0] == P.main_prompt(SUM_SQ, "def square(x):\n    return x * x")
    att = row[0]
    assert att.meta["helper_code"] == "def square(x):\n    return x * x"  # its test scaffolding is dropped
    assert "def sum_squares" in att.code and "dropped 2 top-level" in att.notes["helper"][-1]
    assert set(att.raw) == {"helper", "main"}
    assert sandbox.run(SUM_SQ, att.program).passed


def test_helper_main_parallel_and_body_only_main(scripted, sandbox):
    main = scripted(lambda p, i: "    return sum(square(x) for x in xs)\n")
    team = HelperMainTeam({"helper": scripted(lambda p, i: HELPER), "main": main}, main_sees_helper=False)
    (row,) = team.solve([SUM_SQ], n=2)
    assert main.prompts == [P.main_prompt(SUM_SQ, None)] and main.calls[0][1].n == 2
    assert sandbox.run(SUM_SQ, row[1].program).passed


def test_missing_role_generator_is_a_clear_error(scripted):
    with pytest.raises(ValueError, match=r"no generator for role\(s\) \['coder'\]"):
        PlannerCoderTeam({"planner": scripted(_planner_script)})


def test_plan_then_code_reads_the_training_format(scripted, add_problem, sandbox):
    """The PTA completion as `sft --role pta` / `grpo-single --plan-then-code` write it (the training code's join)."""
    from corecode.training.sft import join_plan_then_code

    text = join_plan_then_code(P.format_plan("1. add a and b"), P.format_code("def add(a, b):\n    return a + b"))
    gen = scripted(lambda p, i: text)
    (row,) = PlanThenCodeTeam({"coder": gen}).solve([add_problem], n=1)
    assert gen.prompts == [P.planner_prompt(add_problem)]
    assert row[0].plan == "1. add a and b" and row[0].code == "def add(a, b):\n    return a + b"
    assert row[0].failures == {} and sandbox.run(add_problem, row[0].program).passed


def test_every_completion_format_round_trips_through_its_extraction(add_problem):
    """SFT rows built with format_* must be read back exactly by the team that uses them."""
    from corecode.agents.extract import extract_code, extract_helper_code, extract_plan
    from corecode.agents.teams import split_thought

    code = "def add(a, b):\n    return a + b"
    assert extract_plan(P.format_plan("1. a\n2. b")).value == "1. a\n2. b"
    assert extract_code(P.format_code(code), add_problem).value == code
    assert extract_helper_code(P.format_code("def sq(x):\n    return x * x")).value == "def sq(x):\n    return x * x"
    thought, rest = split_thought(f"{P.THINK_OPEN}\nadd them\n{P.THINK_CLOSE}\n{P.format_code(code)}")
    assert thought == "add them" and extract_code(rest, add_problem).value == code
    ex = P.retrieval_planner_prompt(add_problem, [add_problem.model_copy(update={"plan": "1. add"})])
    assert ex.count("### Example problem") == 1 and ex.endswith(P.planner_prompt(add_problem))
    assert P.repair_prompt(add_problem, code, "boom", plan="1. add").endswith(
        "### Test feedback\nboom\n### Fixed code\n"
    )
