"""LeetCode-style LiveCodeBench problems (``class Solution``) through the real bwrap sandbox.

The problem comes from a LiveCodeBench row in the dataset's own schema (public tests as JSON, private tests
zlib+base64-compressed), converted by the real loader; the runner must call ``Solution().<func_name>(*args)``.
"""

from __future__ import annotations

import ast
import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

import corecode.sandbox
from corecode.data.loaders.livecodebench import lcb_problem
from corecode.data.schema import Problem, TestCase
from corecode.sandbox import Sandbox, SandboxParams
from corecode.sandbox.prepare import solution_class
from corecode.sandbox.types import Verdict

STARTER = "class Solution:\n    def pairSums(self, nums: List[int], k: int) -> List[int]:\n        "


def _functional(args: list, out) -> dict:
    # LCB's functional format: one JSON value per argument, newline-separated; the output as JSON.
    return {"input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(out), "testtype": "functional"}


def _pair_sums(nums: list[int], k: int) -> list[int]:
    return [a + b for a, b in zip(nums, nums[1:]) if (a + b) % k == 0]


PUBLIC = [([1, 2, 3, 4], 3), ([5, 5, 5], 5)]
PRIVATE = [([7, -1, 3, 9, 11], 2), ([], 7), ([3], 1), ([4, 8, 12, 16], 4)]
ROW = {
    "question_title": "Pair Sums",
    "question_content": "Given nums and k, return the sums of adjacent pairs that are divisible by k, in order.",
    "platform": "leetcode",
    "question_id": "9001",
    "contest_id": "weekly-contest-9001",
    "contest_date": "2025-01-05T00:00:00",
    "starter_code": STARTER,
    "difficulty": "easy",
    "public_test_cases": json.dumps([_functional(list(a), _pair_sums(*a)) for a in PUBLIC]),
    # The compressed encoding of code_generation_lite: base64(zlib(pickle(json string))).
    "private_test_cases": base64.b64encode(
        zlib.compress(pickle.dumps(json.dumps([_functional(list(a), _pair_sums(*a)) for a in PRIVATE])))
    ).decode(),
    "metadata": json.dumps({"func_name": "pairSums"}),
}

# The starter's annotations use List without an import, as LeetCode solutions do: the runner provides typing names.
CORRECT = """
class Solution:
    def __init__(self):
        self.calls = 0

    def pairSums(self, nums: List[int], k: int) -> List[int]:
        self.calls += 1
        assert self.calls == 1, "one fresh Solution per test"
        return [a + b for a, b in pairwise(nums) if (a + b) % k == 0]
"""
WRONG = """
class Solution:
    def pairSums(self, nums: List[int], k: int) -> List[int]:
        return [a + b for a, b in zip(nums, nums[1:]) if (a + b) % k == 0][:1]
"""
NO_CLASS = """
def pairSums(nums, k):
    return [a + b for a, b in zip(nums, nums[1:]) if (a + b) % k == 0]
"""
WRONG_METHOD = """
class Solution:
    def pair_sums(self, nums, k):
        return []
"""


@pytest.fixture(scope="module")
def problem() -> Problem:
    p = lcb_problem(ROW)
    assert p.io_mode == "function" and p.entry_point == "pairSums" and "class_solution" in p.tags
    assert len(p.tests) == len(PUBLIC) + len(PRIVATE)
    return p


@pytest.fixture(scope="module")
def sandbox():
    params = SandboxParams(workers=1, time_limit_s=2.0, memory_limit_mb=256, cache_dir=None, sample_time_limit_s=8)
    assert params.isolation == "bwrap"
    with Sandbox(params) as sb:
        yield sb


def test_correct_solution_passes(sandbox, problem):
    r = sandbox.run(problem, CORRECT)
    assert r.verdict == Verdict.passed and r.passed, r
    assert len(r.tests) == 6 and r.pass_fraction == 1.0


def test_wrong_solution_is_wrong_answer(sandbox, problem):
    r = sandbox.run(problem, WRONG, stop_on_first_failure=False)
    assert r.verdict == Verdict.wrong_answer and not r.passed
    # Tests whose answer has at most one element pass; the others are wrong (graded on the host).
    assert [t.verdict for t in r.tests] == [
        Verdict.passed,  # [3]
        Verdict.wrong_answer,  # [10, 10]
        Verdict.wrong_answer,  # [6, 2, 12, 20]
        Verdict.passed,  # []
        Verdict.passed,  # []
        Verdict.wrong_answer,  # [12, 20, 28]
    ]


@pytest.mark.parametrize(
    "program, reason",
    [(NO_CLASS, "class 'Solution' is not defined"), (WRONG_METHOD, "class 'Solution' has no method 'pairSums'")],
    ids=["no_class", "no_method"],
)
def test_missing_class_or_method_is_a_runtime_error(sandbox, problem, program, reason):
    r = sandbox.run(problem, program)
    assert r.verdict == Verdict.runtime_error and not r.passed
    assert reason in r.detail and all(t.verdict == Verdict.runtime_error for t in r.tests)


def test_plain_function_problems_are_unchanged(sandbox, problem):
    # Without the tag or a class Solution prompt, the same program is a plain-function problem again.
    plain = problem.model_copy(update={"tags": ["leetcode"], "prompt": "Pair sums.\n", "task_id": "plain/pairSums"})
    assert solution_class(plain) is None
    assert sandbox.run(plain, NO_CLASS).passed
    assert sandbox.run(plain, CORRECT).verdict == Verdict.runtime_error


def test_detected_from_the_prompt_and_missing_outputs_use_the_reference(sandbox):
    # No tag: the prompt's class Solution with the entry method is enough. Outputs are computed by the trusted
    # judge from a class-style reference solution.
    p = Problem(
        task_id="lc/double",
        source="test",
        prompt="Double it.\n\nclass Solution:\n    def double(self, x: int) -> int:\n        ",
        entry_point="double",
        tests=[TestCase(input="[3]"), TestCase(input="[-4]"), TestCase(input="[0]")],
        # Annotated with an unimported typing name, as LeetCode code is: the judge provides it too.
        reference_solution="class Solution:\n    def double(self, x: Optional[int]):\n        return 2 * x + 1\n",
    )
    assert solution_class(p) == "Solution"
    assert sandbox.prepare(p).expected == ["7", "-7", "1"]
    good = "class Solution:\n    def double(self, x: int) -> int:\n        return x + x + 1\n"
    assert sandbox.run(p, good).passed
    assert sandbox.run(p, good.replace("+ 1", "- 1")).verdict == Verdict.wrong_answer


def test_jail_and_judge_give_class_code_the_same_names():
    # zygote.py and judge_server.py are standalone scripts (no shared import): their preludes must stay equal.
    def prelude(name: str) -> str:
        tree = ast.parse((Path(corecode.sandbox.__file__).parent / name).read_text())
        node = next(
            n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "CLASS_PRELUDE"
        )
        return ast.literal_eval(node.value)

    assert prelude("zygote.py") == prelude("judge_server.py") and "from typing import *" in prelude("zygote.py")
