"""Trusted side of grading: output comparison on plain data, and the client of the trusted judge process.

Nothing here ever runs candidate code; it only reads what came back from the sandbox as text, parses it with
``ast.literal_eval`` (so only plain data can come out) and compares.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import subprocess
import sys
import threading
from pathlib import Path

from corecode import pysource
from corecode.sandbox import judge_server
from corecode.sandbox.judge_server import is_plain  # noqa: F401  (re-exported)

# The judge server's parsing helpers, for host callers in any thread (corecode.pysource says why).
parse_literal = pysource.locked(judge_server.parse_literal)
literal = pysource.locked(judge_server.literal)

_JUDGE_FILE = Path(__file__).with_name("judge_server.py")


class JudgeError(RuntimeError):
    """The trusted judge could not record / replay a problem (broken benchmark data, or it timed out)."""


def values_equal(got, expected, tol: float | None) -> bool:
    """Python ``==`` on plain data, with floats compared within ``tol`` (absolute and relative) when given."""
    if tol is not None:
        num = (int, float)
        if type(got) in num and type(expected) in num and (type(got) is float or type(expected) is float):
            if math.isnan(got) or math.isnan(expected):
                return math.isnan(got) and math.isnan(expected)
            return math.isclose(got, expected, rel_tol=tol, abs_tol=tol)
        if type(got) in (list, tuple) and type(got) is type(expected):
            return len(got) == len(expected) and all(values_equal(a, b, tol) for a, b in zip(got, expected))
        if type(got) is dict and type(expected) is dict:
            return got.keys() == expected.keys() and all(values_equal(got[k], expected[k], tol) for k in got)
    try:
        return bool(got == expected)
    except Exception:
        return False


def strictly_equal(a, b) -> bool:
    """Same types all the way down and equal values: the candidate behaves exactly like the reference."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(strictly_equal(a[k], b[k]) for k in a)
    return a == b


def _lines(text: str) -> list[list[str]]:
    lines = [line.split() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def _token_equal(a: str, b: str, tol: float | None) -> bool:
    if a == b:
        return True
    if tol is None:
        return False
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


def stdout_equal(got: str, expected: str, tol: float | None) -> bool:
    """Line by line, token by token after whitespace normalisation; a prefix or extra lines are wrong."""
    g, e = _lines(got), _lines(expected)
    if len(g) != len(e):
        return False
    return all(len(x) == len(y) and all(_token_equal(s, t, tol) for s, t in zip(x, y)) for x, y in zip(g, e))


def short(text: str, n: int = 120) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


class JudgeClient:
    """One trusted judge process (``python -I judge_server.py``), restarted after a timeout or crash."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def start(self) -> None:
        """Start the judge process now (``call`` starts it on demand otherwise)."""
        with self.lock:
            if self.proc is None:
                self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(_JUDGE_FILE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                f.close()
            self.proc = None

    def call(self, request: dict) -> dict:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.close()
                self._start()
            data = json.dumps(request).encode()
            try:
                self.proc.stdin.write(struct.pack(">I", len(data)) + data)
                self.proc.stdin.flush()
                head = self._read(4)
                reply = json.loads(self._read(struct.unpack(">I", head)[0]))
            except (OSError, JudgeError, ValueError) as e:
                self.close()
                raise JudgeError(f"trusted judge failed on {request.get('op')}: {e}") from None
            if "error" in reply:
                raise JudgeError(reply["error"])
            return reply

    def _read(self, n: int) -> bytes:
        fd = self.proc.stdout.fileno()
        buf = b""
        while len(buf) < n:
            ready, _, _ = select.select([fd], [], [], self.timeout_s)
            if not ready:
                raise JudgeError(f"no answer within {self.timeout_s}s")
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise JudgeError("judge process exited")
            buf += chunk
        return buf
