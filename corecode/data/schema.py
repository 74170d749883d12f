"""One problem schema for every source (HumanEval, MBPP, composite, CodeContests, ...).

Function-call and stdin/stdout problems both fit it; the sandbox reads nothing else.
Values in ``TestCase.input`` / ``TestCase.output`` are plain Python literals (what ``ast.literal_eval`` accepts),
stored as their ``repr`` strings so tuples, sets and dicts with int keys survive a JSON round trip.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

IOMode = Literal["function", "stdio"]


class TestCase(BaseModel):
    """One test. For ``function`` problems ``input`` is ``repr`` of the argument list; for ``stdio`` it is stdin.

    ``output`` is the expected value (``repr`` for functions, expected stdout for stdio), or ``None`` when it must be
    computed by running the trusted reference solution.
    """

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    input: str
    output: str | None = None


class Problem(BaseModel):
    """A programming problem with its tests. ``prompt`` is what a model is shown."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    source: str
    split: str = "test"
    prompt: str
    io_mode: IOMode = "function"
    entry_point: str | None = None
    # Trusted human-eval style test code defining ``check(candidate)``; run only outside the untrusted process.
    check_code: str | None = None
    tests: list[TestCase] = Field(default_factory=list)
    reference_solution: str | None = None
    # A correct but slower program beside the reference (composite's efficiency family: quadratic against linear).
    naive_solution: str | None = None
    # Gold plan in the project's plan format, where a source has one (composite does).
    plan: str | None = None
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    # Float tolerance for comparing outputs (absolute and relative); None means exact comparison.
    float_tol: float | None = None
    time_limit_s: float | None = None
    memory_limit_mb: int | None = None


def count_tests(p: Problem) -> int:
    """The tests of ``p``: its test cases plus the ``assert`` lines of its check code."""
    asserts = sum(line.lstrip().startswith("assert") for line in (p.check_code or "").splitlines())
    return len(p.tests) + asserts


def judgeable(p: Problem) -> bool:
    """Whether the sandbox can judge a program for ``p``: test cases with expected outputs (or a reference solution
    to compute them), or check code (run against the reference, so that needs one too)."""
    if p.check_code:
        return bool(p.reference_solution)
    return bool(p.tests) and (bool(p.reference_solution) or all(t.output is not None for t in p.tests))
