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


# Peak memory (``peak_memory_mb``) is what the program's process added over the size it was forked at: the sandbox's
# zygote, whose own size grows with its caches, is not the program's. Programs that add less than this many MiB count
# as adding this much wherever two are compared (a ratio): below it the figure is page-fault noise, and a program that
# adds nothing would otherwise divide by zero.
MEMORY_FLOOR_MB = 1.0


def comparable_memory_mb(peak_memory_mb: float) -> float:
    """``peak_memory_mb`` as it enters a ratio against another program's: at least :data:`MEMORY_FLOOR_MB`."""
    return max(peak_memory_mb, MEMORY_FLOOR_MB)


def added_memory_mb(maxrss_kb: float, rss0_kb: float) -> float:
    """MiB a process's high-water mark (``maxrss_kb``) rose above its size when it started (``rss0_kb``)."""
    return max(0.0, float(maxrss_kb) - float(rss0_kb)) / 1024


class TestOutcome(BaseModel):
    """What happened on one test case."""

    __test__ = False
    verdict: Verdict
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0
    peak_memory_mb: float = 0.0  # added over the process's start size (MEMORY_FLOOR_MB)
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
    peak_memory_mb: float = 0.0  # added over the process's start size (MEMORY_FLOOR_MB)
    detail: str = ""
