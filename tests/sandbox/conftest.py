"""Shared fixtures: one real bwrap-isolated pool per test module, and a small function problem to attack."""

from __future__ import annotations

import pytest
from sandbox_helpers import MIX_CHECK, MIX_REFERENCE

from corecode.data.schema import Problem, TestCase
from corecode.sandbox import Sandbox, SandboxParams


@pytest.fixture(scope="module")
def sandbox():
    params = SandboxParams(workers=2, time_limit_s=1.0, memory_limit_mb=256, cache_dir=None, sample_time_limit_s=6)
    with Sandbox(params) as sb:
        yield sb


@pytest.fixture(scope="module")
def mix_problem() -> Problem:
    return Problem(
        task_id="hostile/mix",
        source="test",
        prompt="def mix(a, b):\n",
        entry_point="mix",
        check_code=MIX_CHECK,
        reference_solution=MIX_REFERENCE,
    )


@pytest.fixture(scope="module")
def io_problem() -> Problem:
    return Problem(
        task_id="hostile/io",
        source="test",
        prompt="read a b, print a*b",
        io_mode="stdio",
        tests=[TestCase(input="6 7\n"), TestCase(input="123 456\n")],
        reference_solution="a, b = map(int, input().split())\nprint(a * b)\n",
    )
