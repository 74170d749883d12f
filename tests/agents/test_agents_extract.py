"""Extraction edge cases: plans, code, and the program the sandbox runs (checked by running trusted code here)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from corecode.agents.extract import build_program, extract_code, extract_plan
from corecode.data.loaders.humaneval import load_humaneval
from corecode.data.schema import Problem

FUNC = Problem(
    task_id="t/sq",
    source="toy",
    prompt='from typing import List\n\n\ndef squares(xs: List[int]) -> List[int]:\n    """Square each."""\n',
    entry_point="squares",
)
STDIO = Problem(task_id="t/io", source="toy", prompt="Read n, print n*2.", io_mode="stdio")


def run_fn(program: str, name: str):
    """Execute a program built from *trusted, hand-written* test strings (never model output) and return ``name``."""
    ns: dict = {}
    exec(compile(program, "<test>", "exec"), ns)
    return ns[name]


# ------------------------------------------------------------------------------------------------------------ plans


def test_plan_well_formed():
    ex = extract_plan("<plan>\n1. Read input.\n2. Sort it.\n</plan>")
    assert ex.ok and ex.value == "1. Read input.\n2. Sort it." and ex.reason is None and ex.notes == []


def test_plan_missing_close_tag_stops_at_next_section():
    ex = extract_plan("<plan>\n1. Loop over xs.\n2. Square.\n### Code\n```python\nx=1\n```")
    assert ex.value == "1. Loop over xs.\n2. Square."
    assert "missing </plan>" in ex.notes


def test_plan_stray_text_both_sides():
    ex = extract_plan("Sure, here is a plan:\n<plan>\n1. A\n</plan>\nThanks!")
    assert ex.value == "1. A"
    assert {"stray text before <plan>", "stray text after </plan>"} <= set(ex.notes)


def test_plan_missing_open_tag():
    ex = extract_plan("1. A\n2. B\n</plan>")
    assert ex.value == "1. A\n2. B" and "missing <plan>" in ex.notes


def test_plan_case_insensitive_tags():
    assert extract_plan("<PLAN>1. A</Plan>").value == "1. A"


@pytest.mark.parametrize(
    "text",
    [
        "Step 1: read\nStep 2: sort",
        "1) read\n2) sort",
        "(1) read\n(2) sort",
        "**Step 1:** read\n**Step 2:** sort",
        "1 - read\n2 - sort",
        "- read\n- sort",
        "1. read\n1. sort",  # a model that repeats the number
    ],
)
def test_plan_step_styles_normalised(text):
    ex = extract_plan(f"<plan>\n{text}\n</plan>")
    assert ex.value == "1. read\n2. sort", ex


def test_plan_substeps_and_indentation_kept():
    ex = extract_plan("<plan>\n1. For each x:\n   1.1 if x < 0: skip\n   - else add\n2. Return sum\n</plan>")
    assert ex.value == "1. For each x:\n   1.1 if x < 0: skip\n   - else add\n2. Return sum"


def test_plan_repeated_lines_collapsed():
    ex = extract_plan("<plan>\n1. A\n2. loop\n2. loop\n2. loop\n</plan>")
    assert ex.value == "1. A\n2. loop" and "repeated lines collapsed" in ex.notes


@pytest.mark.parametrize("text,reason", [("", "empty completion"), ("   \n", "empty completion"), (None, "empty")])
def test_plan_empty_is_reason_not_exception(text, reason):
    ex = extract_plan(text)
    assert not ex.ok and reason in ex.reason


def test_plan_empty_tags():
    ex = extract_plan("<plan>\n\n</plan>")
    assert not ex.ok and ex.reason.startswith("empty plan")


def test_plan_free_text_without_steps_accepted_with_note():
    ex = extract_plan("Use a dictionary to count.")
    assert ex.value == "Use a dictionary to count." and "no numbered steps" in ex.notes


def test_plan_garbage_never_raises():
    for text in ["<plan>", "</plan>", "<plan></plan></plan>", "```", "\x00\x01", "<plan>" * 50, "1." * 1000]:
        ex = extract_plan(text)
        assert ex.ok or ex.reason


# ------------------------------------------------------------------------------------------------------------- code


def test_code_python_fence_with_prose():
    text = "Here you go:\n```python\ndef squares(xs):\n    return [x * x for x in xs]\n```\nThis squares each."
    ex = extract_code(text, FUNC)
    assert ex.value == "def squares(xs):\n    return [x * x for x in xs]"
    assert run_fn(build_program(FUNC, ex.value), "squares")([2, 3]) == [4, 9]


@pytest.mark.parametrize("fence", ["```py", "```Python", "```python3", "```"])
def test_code_fence_variants(fence):
    ex = extract_code(f"{fence}\ndef squares(xs):\n    return [x*x for x in xs]\n```", FUNC)
    assert ex.value.startswith("def squares")


def test_code_unclosed_fence_truncated_generation():
    ex = extract_code("```python\ndef squares(xs):\n    return [x*x for x in xs]\n", FUNC)
    assert ex.value.startswith("def squares") and "unclosed code fence" in ex.notes


def test_code_several_blocks_pick_entry_point():
    text = (
        "First a helper:\n```python\ndef sq(x):\n    return x * x\n```\n"
        "Example:\n```python\nprint(squares([1]))\n```\n"
        "Solution:\n```python\ndef squares(xs):\n    return [sq(x) for x in xs]\n```\n"
    )
    ex = extract_code(text, FUNC)
    assert "def squares" in ex.value and "print(" not in ex.value
    assert "def sq(x)" in ex.value  # pulled from the other block because the chosen one calls it
    assert any("pulled 1" in n for n in ex.notes)
    assert run_fn(build_program(FUNC, ex.value), "squares")([3]) == [9]


def test_code_non_python_blocks_ignored_when_python_exists():
    text = "```text\nsquares([1]) -> [1]\n```\n```python\ndef squares(xs):\n    return [x*x for x in xs]\n```"
    assert extract_code(text, FUNC).value.startswith("def squares")


def test_code_unfenced_with_prose_before_and_after():
    text = "Sure! The solution is below.\ndef squares(xs):\n    return [x*x for x in xs]\nThat is all, folks."
    ex = extract_code(text, FUNC)
    assert ex.value == "def squares(xs):\n    return [x*x for x in xs]"
    assert {"stray prose before code", "stray text after code", "no code fence"} <= set(ex.notes)


def test_code_unfenced_cut_at_next_prompt_header():
    ex = extract_code("def squares(xs):\n    return [x*x for x in xs]\n### Problem\nnext problem text", FUNC)
    assert ex.value == "def squares(xs):\n    return [x*x for x in xs]"


def test_code_test_scaffolding_dropped():
    text = (
        "```python\nimport math\ndef squares(xs):\n    return [x*x for x in xs]\n\nprint(squares([2]))\n"
        "assert squares([2]) == [5]\nif __name__ == '__main__':\n    squares(input())\n```"
    )
    ex = extract_code(text, FUNC)
    assert "print" not in ex.value and "assert" not in ex.value and "__main__" not in ex.value
    assert "import math" in ex.value
    assert run_fn(build_program(FUNC, ex.value), "squares")([2]) == [4]  # the wrong assert would have raised


def test_code_stdio_keeps_script_and_picks_longest():
    text = "```python\nprint(1)\n```\n```python\nn = int(input())\nprint(n * 2)\n```"
    ex = extract_code(text, STDIO)
    assert ex.value == "n = int(input())\nprint(n * 2)"
    assert build_program(STDIO, ex.value) == "n = int(input())\nprint(n * 2)\n"


def test_code_body_only_indented_goes_under_signature():
    ex = extract_code("    out = []\n    for x in xs:\n        out.append(x * x)\n    return out\n", FUNC)
    assert ex.ok and any("function body" in n for n in ex.notes)
    program = build_program(FUNC, ex.value)
    assert program.startswith(FUNC.prompt.rstrip("\n"))
    assert run_fn(program, "squares")([1, 2]) == [1, 4]


def test_code_body_with_trailing_toplevel_garbage_is_cut():
    program = build_program(FUNC, "    return [x * x for x in xs]\n\nprint(squares([2]))\ndef check(): pass")
    assert "print" not in program and run_fn(program, "squares")([5]) == [25]


def test_code_body_unindented():
    program = build_program(FUNC, "return [x * x for x in xs]")
    assert run_fn(program, "squares")([4]) == [16]


def test_code_that_does_not_parse_is_kept_with_note():
    ex = extract_code("```python\ndef squares(xs)\n    return xs\n```", FUNC)
    assert ex.ok and "code does not parse" in ex.notes
    with pytest.raises(SyntaxError):
        ast.parse(build_program(FUNC, ex.value))  # the sandbox will report it as a syntax error


@pytest.mark.parametrize("text", ["", "   ", None, "```python\n```", "```\n\n```"])
def test_code_empty_is_reason_not_exception(text):
    ex = extract_code(text, FUNC)
    assert not ex.ok and ex.reason


def test_code_garbage_never_raises():
    for text in ["```", "``````", "\x00", "def", ")))(((", "```python\n\x00\n```", "### Code\n", "<plan>1.</plan>"]:
        ex = extract_code(text, FUNC)
        assert ex.ok or ex.reason
        build_program(FUNC, ex.value)


def test_build_program_prepends_prompt_imports_and_helpers():
    prompt = (
        "import math\n\n\ndef poly(xs: list, x: float):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n"
        '\n\ndef find_zero(xs: list):\n    """Find x with poly(xs, x) == 0."""\n'
    )
    p = Problem(task_id="t/poly", source="toy", prompt=prompt, entry_point="find_zero")
    code = textwrap.dedent("""\
        def find_zero(xs):
            lo, hi = -10.0, 10.0
            for _ in range(100):
                mid = (lo + hi) / 2
                if poly(xs, lo) * poly(xs, mid) <= 0:
                    hi = mid
                else:
                    lo = mid
            return lo""")
    program = build_program(p, code)
    assert program.index("import math") < program.index("def poly") < program.index("def find_zero")
    assert abs(run_fn(program, "find_zero")([-2, 1]) - 2) < 1e-6


def test_build_program_does_not_duplicate_helper_the_code_defines():
    prompt = 'def helper(x):\n    return x\n\n\ndef f(x):\n    """doc"""\n'
    p = Problem(task_id="t/h", source="toy", prompt=prompt, entry_point="f")
    program = build_program(p, "def helper(x):\n    return 2 * x\n\ndef f(x):\n    return helper(x)")
    assert program.count("def helper") == 1 and run_fn(program, "f")(3) == 6


def test_humaneval_canonical_solutions_survive_extraction_both_ways():
    """All 164 HumanEval canonical solutions, as a bare body and as a fenced full function with prose around it,
    extract and build into programs that pass the problem's own check (trusted code, run in-process)."""
    for p in load_humaneval():
        body = p.reference_solution[len(p.prompt) :]
        for text in (body, f"Solution:\n```python\n{p.reference_solution}\n```\nDone."):
            program = build_program(p, extract_code(text, p).value)
            ns: dict = {}
            exec(compile(program + "\n" + p.check_code, p.task_id, "exec"), ns)
            ns["check"](ns[p.entry_point])


def test_code_closing_fence_glued_to_last_line():
    ex = extract_code("```python\ndef squares(xs):\n    return [x*x for x in xs]```\nDone.", FUNC)
    assert ex.value == "def squares(xs):\n    return [x*x for x in xs]"


def test_code_unfenced_script_with_prose_around():
    ex = extract_code("Here is a program that doubles n.\nn = int(input())\nprint(n * 2)\nThis reads n first.", STDIO)
    assert ex.value == "n = int(input())\nprint(n * 2)"


def test_code_one_word_preamble_that_parses_is_still_dropped():
    ex = extract_code("Sure\nn = int(input())\nprint(n * 2)", STDIO)
    assert ex.value == "n = int(input())\nprint(n * 2)" and "stray prose before code" in ex.notes


def test_random_token_soup_never_raises():
    """Extraction must never raise, whatever an untrained model emits (seeded fuzz over format tokens)."""
    import random

    from corecode.agents.debugging import docstring_examples

    rng = random.Random(0)
    pieces = [
        "```",
        "```python",
        "<plan>",
        "</plan>",
        "<think>",
        "def ",
        "squares",
        "(xs)",
        ":",
        "\n",
        "    ",
        "\t",
        "return ",
        "x",
        "1.",
        "Step 2:",
        "### Code",
        "'''",
        '"',
        "(",
        ")",
        "[",
        "]",
        ">>>",
        "==",
        "-",
        "\x00",
        "print(",
        "assert ",
        "if __name__",
        "@",
        "class ",
        "import os",
        "é",
        "\\",
    ]
    for _ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        plan, code = extract_plan(text), extract_code(text, FUNC)
        assert plan.ok or plan.reason
        assert code.ok or code.reason
        assert isinstance(build_program(FUNC, code.value), str)
        assert isinstance(build_program(STDIO, extract_code(text, STDIO).value), str)
        docstring_examples(Problem(task_id="f", source="s", prompt=text, entry_point="squares"))
