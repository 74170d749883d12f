"""Plain-data results of running one program against one problem's tests.

These types are the contract between the sandbox, the evaluation layer and the GRPO reward functions.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class Verdict(str, Enum):
    passed = "passed"
    wrong_answer = "wrong_answer"
    runtime_error = "runtime_error"
    timeout = "timeout"
    memory_exceeded = "memory_exceeded"
    syntax_error = "syntax_error"
    sandbox_error = "sandbox_error"


class TestOutcome(BaseModel):
    """What happened on one test case."""

    __test__ = False
    verdict: Verdict
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0
    peak_memory_mb: float = 0.0
    detail: str = ""


class SampleResult(BaseModel):
    """What happened to one program on one problem: overall verdict, per-test outcomes, soft score."""

    task_id: str
    verdict: Verdict
    passed: bool
    tests: list[TestOutcome] = Field(default_factory=list)
    pass_fraction: float = 0.0
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0
    peak_memory_mb: float = 0.0
    detail: str = ""
