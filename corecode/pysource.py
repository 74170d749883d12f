"""Python source parsed in the host process, safely from any thread.

CPython 3.11 and 3.12 keep the AST constructor's recursion depth in interpreter-wide state. When two threads build
AST objects at once, and a garbage collection in one runs Python code that lets the other in, that state is corrupted:
``ast.parse`` (and ``ast.literal_eval`` of a string, which parses) then raises ``SystemError: AST constructor recursion
depth mismatch`` on valid input (python/cpython#106905). The host parses from several threads: the sandbox's preparing
and grading threads read checks and expected values while the caller extracts code from model output. So every
host-side parse goes through this module, under one re-entrant lock. A parse is of one program or one value, so the
lock costs nothing measurable. (`corecode/sandbox/judge_server.py` is stdlib-only and runs alone in the judge process;
its helpers that parse are wrapped here for their host callers, by `corecode.sandbox.judge`.)
"""

from __future__ import annotations

import ast
import functools
import threading
from collections.abc import Callable
from typing import TypeVar

AST_LOCK = threading.RLock()
T = TypeVar("T")


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse`` under the lock."""
    with AST_LOCK:
        return ast.parse(source, mode=mode)


def literal_eval(node_or_string: str | ast.AST):
    """``ast.literal_eval`` under the lock."""
    with AST_LOCK:
        return ast.literal_eval(node_or_string)


def locked(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` run under the lock: for a helper that parses but cannot import this module."""

    @functools.wraps(fn)
    def run(*args, **kwargs) -> T:
        with AST_LOCK:
            return fn(*args, **kwargs)

    return run
