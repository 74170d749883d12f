"""corecode.pysource: host-side parsing from several threads at once. Four threads parse while garbage collections run
Python finalizers; with plain ``ast.parse`` this raises CPython's ``SystemError: AST constructor recursion depth
mismatch`` within a fraction of a second on the interpreters that have the bug (3.11, 3.12: python/cpython#106905),
which the test checks first, so that it can fail; through ``corecode.pysource`` it never does."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HARNESS = r"""
import ast, gc, sys, threading, time
from corecode import pysource
parse = {"plain": ast.parse, "pysource": pysource.parse, "literal": pysource.literal_eval}[sys.argv[1]]
SRC = "\n".join(f"def f{i}(x):\n    return [y * {i} for y in range(x) if y % 3 == {i % 3}]" for i in range(200))
if sys.argv[1] == "literal":
    SRC = repr([[i, str(i), (i, [i] * 3)] for i in range(300)])
sys.setswitchinterval(1e-6)
gc.set_threshold(50, 5, 5)

class Cycle:  # a collected cycle whose finalizer runs Python code: a point where another thread gets the GIL
    def __init__(self):
        self.me = self
    def __del__(self):
        sum(range(50))

errors = []
def work():
    end = time.time() + float(sys.argv[2])
    while time.time() < end and not errors:
        try:
            for _ in range(20):
                Cycle()
            parse(SRC)
        except SystemError as e:
            errors.append(str(e))
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors[0] if errors else "ok")
"""


def _run(kind: str, seconds: float) -> str:
    out = subprocess.run(
        [sys.executable, "-c", HARNESS, kind, str(seconds)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_parsing_from_several_threads_never_raises_the_ast_depth_error():
    if sys.version_info < (3, 13):  # the harness reproduces the bug where the interpreter has it
        assert "recursion depth mismatch" in _run("plain", 10)
    assert _run("pysource", 2) == "ok"
    assert _run("literal", 2) == "ok"


def test_host_code_parses_only_through_pysource():
    # judge_server.py and zygote.py run in their own single-threaded processes (the judge, the sandboxed candidate)
    own_process = {"pysource.py", "judge_server.py", "zygote.py"}
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "corecode").rglob("*.py"))
        if path.name not in own_process
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if ("ast.parse(" in line or "ast.literal_eval(" in line) and not line.lstrip().startswith(("#", '"', "``"))
    ]
    assert not offenders, f"parse through corecode.pysource (thread-safe) instead of ast: {offenders}"
