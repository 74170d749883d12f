"""Isolated, parallel execution of untrusted generated code against a problem's tests.

    from corecode.sandbox import Sandbox, SandboxParams
    with Sandbox(SandboxParams(workers=2)) as sb:
        result = sb.run(problem, program)

See docs/sandbox.md for the design and the threat model.
"""

from corecode.sandbox.config import SandboxParams
from corecode.sandbox.isolation import SandboxUnavailable
from corecode.sandbox.prepare import PreparedProblem
from corecode.sandbox.sandbox import Sandbox
from corecode.sandbox.types import SampleResult, TestOutcome, Verdict

__all__ = [
    "Sandbox",
    "SandboxParams",
    "SandboxUnavailable",
    "PreparedProblem",
    "SampleResult",
    "TestOutcome",
    "Verdict",
]
