"""Debugging agent: wraps any team, runs its code on the *visible* tests in the sandbox and repairs it.

Visible tests are what a contestant would see: the examples in the problem statement (``>>> f(1)`` doctest lines,
``f(1) == 2`` / ``f(1) ➞ 2`` examples), or, where the statement has none, the first ``k`` tests of the problem. The
hidden evaluation tests (``check_code`` and the tests beyond those ``k``) are never run and never shown.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from corecode import pysource
from corecode.agents import prompts as P
from corecode.agents.extract import build_program, extract_code
from corecode.agents.teams import Attempt, Team
from corecode.data.schema import Problem, TestCase
from corecode.generation.base import Generator, SamplingParams
from corecode.sandbox.types import SampleResult

# A bare "=" or "is" is left out on purpose: "tri(1) = 3" in a statement defines a recurrence, not an example.
_RESULT_RE = re.compile(r"^\s*(?:==|➞|->|=>|→|should return|returns?)\s*(?P<exp>\S.*)$", re.I)
_MAX_LITERAL = 300


class SandboxLike(Protocol):
    """What the debugging agent needs of ``corecode.sandbox.Sandbox``."""

    def run(self, problem: Problem, program: str, **kw: Any) -> SampleResult: ...


def _call_end(text: str, open_paren: int) -> int | None:
    """Index of the parenthesis closing the one at ``open_paren`` (string literals skipped), or None."""
    depth, quote, i = 0, None, open_paren
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
        elif ch == "\n" and depth == 1 and text[open_paren:i].count("\n") > 3:
            return None
        i += 1
    return None


def _literal_prefix(src: str) -> tuple[bool, Any]:
    """The longest prefix of ``src`` that is a Python literal ("3 because ..." -> 3)."""
    src = src.strip()[:_MAX_LITERAL]
    if re.search(r"\s=\s", src):  # "1 + 9 + 0 + 0 = 10": the worked result is the last one
        src = re.split(r"\s=\s", src)[-1].strip()
    for end in range(len(src), 0, -1):
        chunk = src[:end].rstrip().rstrip(".,;")
        if not chunk:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = pysource.literal_eval(chunk)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        # The literal must end at a word boundary: '""abc"' is a typo, not the empty string followed by prose.
        rest = src[end:]
        if rest and not rest[0].isspace() and rest[0] not in ".,;":
            return False, None
        return True, value
    return False, None


def docstring_examples(problem: Problem) -> list[TestCase]:
    """Input/output examples stated in a function problem's prompt, as ``TestCase`` s (literal arguments only)."""
    entry = problem.entry_point
    if problem.io_mode != "function" or not entry:
        return []
    text, tests, seen = problem.prompt, [], set()
    for m in re.finditer(rf"(?<![\w.]){re.escape(entry)}\s*\(", text):
        if text[: m.start()].rstrip().endswith("def"):
            continue
        close = _call_end(text, m.end() - 1)
        if close is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call = pysource.parse(text[m.start() : close + 1], mode="eval").body
            if not isinstance(call, ast.Call) or call.keywords:
                continue
            args = [pysource.literal_eval(a) for a in call.args]
        except (ValueError, SyntaxError, TypeError, RecursionError):
            continue
        line_end = text.find("\n", close)
        rest = text[close + 1 : line_end if line_end >= 0 else len(text)]
        exp_src = None
        if mr := _RESULT_RE.match(rest):
            exp_src = mr.group("exp")
        elif text[: m.start()].rsplit("\n", 1)[-1].strip() == ">>>" and not rest.strip() and line_end >= 0:
            nxt = text[line_end + 1 :].split("\n", 1)[0].strip()  # doctest: the expected value is the next line
            if nxt and not nxt.startswith(">>>") and not nxt.startswith(('"""', "'''")):
                exp_src = nxt
        if exp_src is None:
            continue
        ok, expected = _literal_prefix(exp_src)
        if not ok:
            continue
        case = TestCase(input=repr(args), output=repr(expected))
        if (case.input, case.output) not in seen:
            seen.add((case.input, case.output))
            tests.append(case)
    return tests


def visible_tests(problem: Problem, k: int) -> list[TestCase]:
    """Statement examples if there are any, else the first ``k`` tests that have an expected output."""
    examples = docstring_examples(problem)
    if examples:
        return examples[:k]
    return [t for t in problem.tests if t.output is not None][:k]


def _call_text(problem: Problem, test: TestCase) -> str:
    if problem.io_mode == "function" and problem.entry_point:
        try:
            args = pysource.literal_eval(test.input)
            return f"{problem.entry_point}({', '.join(repr(a) for a in args)})"
        except (ValueError, SyntaxError, TypeError):
            pass
        return f"{problem.entry_point}(*{test.input})"
    return f"stdin:\n{test.input.rstrip()}"


def feedback_text(
    result: SampleResult, max_chars: int, problem: Problem | None = None, tests: Sequence[TestCase] = ()
) -> str:
    """What the repair role is told: the verdict, the failing visible test's input and its detail (bounded)."""
    lines = [f"verdict: {result.verdict.value}"]
    k = next((i for i, t in enumerate(result.tests) if t.verdict.value != "passed"), None)
    if k is not None and problem is not None and k < len(tests):
        lines.append(f"failing test: {_call_text(problem, tests[k])}")
    if result.detail:
        lines.append(result.detail.strip())
    if k is not None and result.tests[k].detail and result.tests[k].detail.strip() not in result.detail:
        lines.append(result.tests[k].detail.strip())
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 15] + "\n...[truncated]"


class DebuggingTeam(Team):
    """Any team + up to ``max_rounds`` rounds of: run on visible tests; if failing, repair with the error shown."""

    type = "debugging"
    roles = ("repair",)

    def __init__(
        self,
        inner: Team,
        generators: Mapping[str, Generator],
        sampling: Mapping[str, SamplingParams] | None = None,
        name: str | None = None,
        *,
        sandbox: SandboxLike,
        max_rounds: int = 2,
        visible_k: int = 3,
        feedback_chars: int = 1500,
    ):
        super().__init__(generators, sampling, name)
        self.inner, self.sandbox = inner, sandbox
        self.max_rounds, self.visible_k, self.feedback_chars = max_rounds, visible_k, feedback_chars

    def _check(self, items: list[tuple[Problem, str]]) -> list[SampleResult]:
        """Run programs on their visible problems; expected values are revealed (they are public examples)."""
        kw = dict(stop_on_first_failure=True, reveal_expected=True)
        run_batch = getattr(self.sandbox, "run_batch", None)
        if run_batch is not None:
            return run_batch(items, **kw)
        return [self.sandbox.run(p, prog, **kw) for p, prog in items]

    @staticmethod
    def visible_problem(problem: Problem, tests: list[TestCase]) -> Problem:
        """The problem as the debugging agent may test it: only the visible tests; no check_code, no reference."""
        return problem.model_copy(update={"tests": tests, "check_code": None, "reference_solution": None})

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        attempts = self.inner.solve(problems, n)
        tests = [visible_tests(p, self.visible_k) for p in problems]
        visible = [self.visible_problem(p, t) for p, t in zip(problems, tests)]
        for i, row in enumerate(attempts):
            for att in row:
                att.meta.update(visible_tests=len(tests[i]), visible_verdicts=[], repair_rounds=0)
        pending = [(i, j) for i, row in enumerate(attempts) for j in range(len(row)) if tests[i]]
        for rnd in range(self.max_rounds + 1):
            failing = []
            results = self._check([(visible[i], attempts[i][j].program) for i, j in pending])
            for (i, j), res in zip(pending, results):
                att = attempts[i][j]
                att.meta["visible_verdicts"].append(res.verdict.value)
                att.meta["visible_passed"] = res.passed
                if not res.passed:
                    failing.append((i, j, res))
            if rnd == self.max_rounds or not failing:
                break
            prompts = [
                P.repair_prompt(
                    problems[i],
                    attempts[i][j].code or attempts[i][j].raw.get("coder", ""),
                    feedback_text(res, self.feedback_chars, problems[i], tests[i]),
                    attempts[i][j].plan,
                )
                for i, j, res in failing
            ]
            outs = self._generate("repair", prompts, 1)
            for (i, j, _), prompt, cs in zip(failing, prompts, outs):
                old, c = attempts[i][j], cs[0]
                ex = extract_code(c.text, problems[i])
                role = f"repair_{rnd + 1}"
                old.prompts[role], old.raw[role], old.completions[role] = prompt, c.text, c
                old.tokens["repair"] = old.tokens.get("repair", 0) + c.num_tokens
                old.meta["repair_rounds"] = rnd + 1
                if ex.notes:
                    old.notes[role] = list(ex.notes)
                if ex.ok:  # a failed extraction keeps the previous code: nothing better to run
                    old.code, old.program = ex.value, build_program(problems[i], ex.value)
                else:
                    old.failures[role] = ex.reason or "extraction failed"
            pending = [(i, j) for i, j, _ in failing]
        return attempts
