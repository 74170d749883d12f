"""Debugging agent: visible tests only, real sandbox, a scripted "model" that fixes code once it sees the error."""

from __future__ import annotations

from corecode.agents.debugging import DebuggingTeam, docstring_examples, visible_tests
from corecode.agents.teams import SingleTeam
from corecode.data.schema import Problem, TestCase

BAD = "```python\ndef add(a, b):\n    return a - b\n```"
GOOD = "```python\ndef add(a, b):\n    return a + b\n```"


def _repair_script(prompt: str, i: int) -> str:
    """Fixes the code only if the feedback shows the failing example's expected value (i.e. the error got through)."""
    feedback = prompt.split("### Test feedback\n", 1)[1]
    return GOOD if "wrong_answer" in feedback and "failing test: add(1, 2)" in feedback and "3" in feedback else BAD


def test_debugging_repairs_wrong_program(scripted, add_problem, sandbox):
    coder, repair = scripted(lambda p, i: BAD), scripted(_repair_script)
    team = DebuggingTeam(SingleTeam({"coder": coder}), {"repair": repair}, sandbox=sandbox, max_rounds=2)
    (row,) = team.solve([add_problem], n=2)
    for att in row:
        assert att.code == "def add(a, b):\n    return a + b"
        assert att.meta["visible_verdicts"] == ["wrong_answer", "passed"] and att.meta["repair_rounds"] == 1
        assert att.raw["repair_1"] == GOOD and att.tokens["repair"] > 0
        assert sandbox.run(add_problem, att.program).passed  # hidden tests pass too
    # The repair prompt showed the failing code and the visible example, never the hidden check() tests.
    prompt = repair.prompts[0]
    assert "return a - b" in prompt and "candidate(0, 7)" not in prompt and "[5, 5]" not in prompt


def test_debugging_stops_after_max_rounds(scripted, add_problem, sandbox):
    repair = scripted(lambda p, i: BAD)  # a "model" that never fixes anything
    team = DebuggingTeam(
        SingleTeam({"coder": scripted(lambda p, i: BAD)}), {"repair": repair}, sandbox=sandbox, max_rounds=2
    )
    (row,) = team.solve([add_problem], n=1)
    assert row[0].meta["visible_verdicts"] == ["wrong_answer"] * 3 and row[0].meta["repair_rounds"] == 2
    assert len(repair.calls) == 2 and not row[0].meta["visible_passed"]


def test_debugging_leaves_passing_code_alone(scripted, add_problem, sandbox):
    repair = scripted(lambda p, i: BAD)
    team = DebuggingTeam(SingleTeam({"coder": scripted(lambda p, i: GOOD)}), {"repair": repair}, sandbox=sandbox)
    (row,) = team.solve([add_problem], n=1)
    assert row[0].meta["visible_verdicts"] == ["passed"] and repair.calls == []


def test_debugging_feeds_runtime_errors_back(scripted, add_problem, sandbox):
    crash = "```python\ndef add(a, b):\n    return undefined_name\n```"
    seen = []
    repair = scripted(lambda p, i: seen.append(p) or GOOD)
    team = DebuggingTeam(SingleTeam({"coder": scripted(lambda p, i: crash)}), {"repair": repair}, sandbox=sandbox)
    (row,) = team.solve([add_problem], n=1)
    assert "NameError" in seen[0] and row[0].meta["visible_verdicts"] == ["runtime_error", "passed"]


def test_visible_tests_prefer_statement_examples(add_problem):
    assert [(t.input, t.output) for t in visible_tests(add_problem, 5)] == [("[1, 2]", "3"), ("[-1, 1]", "0")]
    assert len(visible_tests(add_problem, 1)) == 1


def test_visible_tests_fall_back_to_first_k_tests():
    p = Problem(
        task_id="t",
        source="s",
        prompt="Read n; print 2n.",
        io_mode="stdio",
        tests=[
            TestCase(input="1\n", output="2\n"),
            TestCase(input="2\n", output=None),
            TestCase(input="3\n", output="6\n"),
            TestCase(input="4\n", output="8\n"),
        ],
    )
    assert [t.input for t in visible_tests(p, 2)] == ["1\n", "3\n"]  # no expected output = not visible


def test_docstring_example_styles():
    prompt = (
        'def f(xs, k):\n    """Examples:\n    f([1, 2], 3) == [4, 5]\n    f([], 0) ➞ []\n    f([1], -1) -> [0].\n'
        "    >>> f([2], 2)\n    [4]\n    f(x, 1) == 2  (not a literal: skipped)\n"
        '    f([0], 1) == 0 + 1 = [1]\n    f([9], 9) == ""bad typo"\n    """\n'
    )
    p = Problem(task_id="t", source="s", prompt=prompt, entry_point="f")
    got = [(t.input, t.output) for t in docstring_examples(p)]
    assert got == [
        ("[[1, 2], 3]", "[4, 5]"),
        ("[[], 0]", "[]"),
        ("[[1], -1]", "[0]"),
        ("[[2], 2]", "[4]"),
        ("[[0], 1]", "[1]"),
    ]
