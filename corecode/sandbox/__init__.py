"""Isolated, parallel execution of untrusted generated code against a problem's tests.

    from corecode.sandbox import Sandbox, SandboxParams
    with Sandbox(SandboxParams(workers=2)) as sb:
        result = sb.run(problem, program)

See docs/sandbox.md for the design and the threat model.
"""

# Names are imported on first use (PEP 562), so that importing ``corecode.sandbox.cli`` (every ``corecode`` command
# does) or ``corecode.sandbox.types`` does not start up the whole sandbox and its pydantic models.
_MODULE_OF = {
    "SandboxParams": "corecode.sandbox.config",
    "SandboxUnavailable": "corecode.sandbox.isolation",
    "PreparedProblem": "corecode.sandbox.prepare",
    "Sandbox": "corecode.sandbox.sandbox",
    "SampleResult": "corecode.sandbox.types",
    "TestOutcome": "corecode.sandbox.types",
    "Verdict": "corecode.sandbox.types",
}


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_MODULE_OF[name]), name)


__all__ = [
    "Sandbox",
    "SandboxParams",
    "SandboxUnavailable",
    "PreparedProblem",
    "SampleResult",
    "TestOutcome",
    "Verdict",
]
