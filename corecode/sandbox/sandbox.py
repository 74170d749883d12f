"""``Sandbox``: run candidate programs against a problem's tests in a pool of jailed, pre-started interpreters.

Flow of one sample: ``prepare`` (trusted, cached) turns the problem into test inputs + hidden expected outputs; a
pool worker's zygote forks a child that runs the candidate on the inputs and streams back ``repr``s / stdout; the
host parses them as literals and decides every verdict here, outside the sandbox (``_Grader``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from corecode.data.schema import Problem
from corecode.sandbox.config import SandboxParams
from corecode.sandbox.isolation import claim_uid_block, interpreter_paths
from corecode.sandbox.judge import (
    JudgeClient,
    JudgeError,
    parse_literal,
    short,
    stdout_equal,
    strictly_equal,
    values_equal,
)
from corecode.sandbox.judge_server import describe, exception_from
from corecode.sandbox.prepare import PrepareCache, PreparedProblem, literal_check_calls, materialise, problem_key
from corecode.sandbox.types import SampleResult, TestOutcome, Verdict, added_memory_mb
from corecode.sandbox.worker import DEPTH, Execution, Worker

T = TypeVar("T")
R = TypeVar("R")


class Sandbox:
    """Pool of sandboxed workers. Use as a context manager; workers start on first use and stop on ``close``."""

    def __init__(self, params: SandboxParams | None = None, **overrides):
        """``Sandbox(SandboxParams(...))``; keyword overrides (``Sandbox(workers=4)``) are validated like params."""
        params = params or SandboxParams()
        self.params = SandboxParams.model_validate({**params.model_dump(), **overrides}) if overrides else params
        self._by_identity: dict[int, tuple[Problem, PreparedProblem]] = {}
        self._derived: dict[int, _Derived] = {}  # id(prepared problem) -> what grading derives from it once
        self._workers: queue.Queue[Worker] = queue.Queue()
        self._judges = _Judges()
        self._all_workers: list[Worker] = []
        self._all_judges: list[JudgeClient] = []
        self._started = False
        self._lock = threading.Lock()
        self._cache = PrepareCache(self.params.cache_dir)
        self._recording: dict[str, threading.Lock] = {}  # problem key -> lock held while its tests are recorded
        self._recording_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._spawner: ThreadPoolExecutor | None = None
        self._preparer: ThreadPoolExecutor | None = None  # prepare_ahead's recordings, one thread per judge
        self._uid_base, self._uid_lock = self.params.uid_base, None  # as root: the pool's own uid block

    # -------------------------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def callers(self) -> int:
        """How many ``run`` calls at once keep every worker busy: each worker holds ``DEPTH`` samples (the running
        one and the next, sent ahead), and one more call per worker grades a finished sample meanwhile."""
        return (DEPTH + 1) * self.params.workers

    def start(self) -> None:
        """Start the pool in the background and return at once; the first ``run`` or ``prepare`` waits for it.

        For callers with other work to do first (the CLI reads the benchmark and the sample file meanwhile): the jails
        boot on the other cores (the judges at their first call). A start that fails is retried, and raises, at first
        use.
        """

        def start_quietly() -> None:
            try:
                self._ensure_started()
            except Exception:  # SandboxUnavailable & co: raised again by the caller's _ensure_started
                pass

        threading.Thread(target=start_quietly, name="sandbox-start", daemon=True).start()

    def _ensure_started(self) -> None:
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            # Jails are (re)started only from these threads, which live as long as the pool (see Worker.start);
            # the first start is in parallel: each jail spends most of it waiting for its interpreter.
            self._spawner = ThreadPoolExecutor(self.params.workers, thread_name_prefix="sandbox-spawn")
            worker_params = self.params
            if os.geteuid() == 0:
                self._uid_base, self._uid_lock = claim_uid_block(self.params.uid_base)
                worker_params = self.params.model_copy(update={"uid_base": self._uid_base})
            workers = [Worker(worker_params, i, self._spawner) for i in range(self.params.workers)]
            judges = [JudgeClient(self.params.judge_timeout_s) for _ in range(self.params.workers)]
            try:
                interpreter_paths(self.params.python)  # once, before the workers that need it start in parallel
                # The judges start at their first call (a recording or a replay), not here: a run whose tests are
                # cached and whose samples pass never needs one, and the jails boot sooner without them.
                list(self._spawner.map(Worker._start, workers))
            except Exception:
                for w in workers:
                    w.close()
                for j in judges:
                    j.close()
                self._spawner.shutdown()
                self._spawner = None
                self._release_uid_block()
                raise
            self._all_workers = workers
            for _ in range(DEPTH):  # a worker is in the queue once per sample it can still take
                for w in workers:
                    self._workers.put(w)
            atexit.register(self.close)  # a pool left open still releases its jails, judges and cgroups
            for j in judges:
                self._judges.add(j)
                self._all_judges.append(j)
            self._executor = ThreadPoolExecutor(self.callers, thread_name_prefix="sandbox")
            self._preparer = ThreadPoolExecutor(self.params.workers, thread_name_prefix="sandbox-prepare")
            self._started = True

    def close(self) -> None:
        """Stop the workers and judges (idempotent); a later ``run`` starts a fresh pool."""
        atexit.unregister(self.close)
        with self._lock:
            if self._preparer is not None:
                self._preparer.shutdown(wait=True, cancel_futures=True)
                self._preparer = None
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            for w in self._all_workers:
                w.close()
            if self._spawner is not None:
                self._spawner.shutdown(wait=True)
                self._spawner = None
            for j in self._all_judges:
                j.close()
            self._all_workers, self._all_judges = [], []
            self._workers, self._judges = queue.Queue(), _Judges()
            self._release_uid_block()
            self._started = False

    @property
    def worker_uids(self) -> set[int]:
        """The host uids this pool's workers run as when started as root (its own block, :func:`claim_uid_block`)."""
        return {self._uid_base + i for i in range(self.params.workers)}

    def _release_uid_block(self) -> None:
        if self._uid_lock is not None:
            os.close(self._uid_lock)  # the flock goes with it: another pool may take the block
        self._uid_base, self._uid_lock = self.params.uid_base, None

    def _judge(self, request: dict) -> dict:
        j = self._judges.take()
        try:
            return j.call(request)
        finally:
            self._judges.give_back(j)

    # ---------------------------------------------------------------------------------------------------- prepare
    def prepare(self, problem: Problem) -> PreparedProblem:
        """Trusted tests of ``problem`` (inputs + expected outputs), computed once and cached.

        Cached by content hash (memory + ``cache_dir``) and, for speed, by object identity: do not mutate a
        ``Problem`` after it has been run; make a copy (``model_copy``) instead.
        """
        return self._prepare(problem, background=False)

    def _prepare(self, problem: Problem, background: bool) -> PreparedProblem:
        hit = self._by_identity.get(id(problem))
        if hit is not None and hit[0] is problem:  # the same object again (batches, GRPO groups): skip hashing
            return hit[1]
        key = problem_key(problem, self.params.seed)
        prep = self._cache.get(key)
        if prep is None:
            prep = self._record(problem, key, background)
        if len(self._by_identity) > 100_000:
            self._by_identity.clear()
        self._by_identity[id(problem)] = (problem, prep)
        return prep

    def _record(self, problem: Problem, key: str, background: bool) -> PreparedProblem:
        """Record ``problem``'s tests in a judge (once: callers that want the same problem meanwhile wait for it).
        A background recording (``prepare_ahead``) waits for a judge no sample is waiting for before it holds the
        problem, so a sample that needs the problem now records it itself, ahead of the queue (``_Judges``)."""
        self._ensure_started()
        judge = self._judges.take(background=True) if background else None
        try:
            with self._recording_lock:
                recording = self._recording.setdefault(key, threading.Lock())
            with recording:  # samples of one problem arriving together wait for one recording, not one each
                prep = self._cache.get(key)
                if prep is None:
                    call = judge.call if judge is not None else self._judge
                    prep = materialise(problem, call, self.params.seed, self.params.judge_timeout_s)
                    self._cache.put(key, prep)
            with self._recording_lock:
                self._recording.pop(key, None)
        finally:
            if judge is not None:
                self._judges.give_back(judge)
        return prep

    def prepare_all(self, problems: Iterable[Problem]) -> list[PreparedProblem]:
        """``prepare`` many problems in parallel (the judge pool)."""
        self._ensure_started()
        return list(self._executor.map(self.prepare, problems))

    def prepare_ahead(self, problems: Iterable[Problem]) -> None:
        """Record the tests of ``problems`` in the background, in order, and return at once, so that their samples
        find them ready: the judges record while the workers run. A ``run`` that needs a recording under way waits
        for it instead of starting another, and reports a failure itself (``sandbox_error``). Without it, a file
        that groups samples by problem kept every caller waiting on one recording at a time, the workers idle."""
        self._ensure_started()
        for problem in {id(p): p for p in problems}.values():
            self._preparer.submit(self._prepare_quietly, problem)

    def _prepare_quietly(self, problem: Problem) -> None:
        try:
            self._prepare(problem, background=True)
        except Exception:  # JudgeError, ValueError: the sample's run() prepares again and scores it
            pass

    # -------------------------------------------------------------------------------------------------------- run
    def run(
        self,
        problem: Problem,
        program: str,
        tests: Sequence[int] | None = None,
        stop_on_first_failure: bool | None = None,
        reveal_expected: bool = False,
    ) -> SampleResult:
        """Run ``program`` (whole source) on ``problem``'s tests (all, or the positions in ``tests``).

        ``reveal_expected``: put "expected X got Y" into details (only for tests whose outputs are public, e.g. a
        debugging agent's visible tests). Details never reach the sandboxed process either way.
        """
        if not isinstance(program, str):
            raise TypeError(f"{problem.task_id}: program must be source text (str), got {type(program).__name__}")
        try:
            prep = self.prepare(problem)
        except (JudgeError, ValueError) as e:
            return _error_result(problem.task_id, f"could not prepare tests: {e}")
        self._ensure_started()
        stop = self.params.early_stop if stop_on_first_failure is None else stop_on_first_failure
        n = len(prep.inputs)
        idx = list(range(n)) if tests is None else list(tests)
        bad = [i for i in idx if not 0 <= i < n]
        if bad:
            raise IndexError(f"{problem.task_id}: test positions {bad} out of range (problem has {n} tests)")
        time_s = problem.time_limit_s or self.params.time_limit_s
        memory_mb = problem.memory_limit_mb or self.params.memory_limit_mb
        request = self._request(prep, program, idx, stop, time_s, memory_mb)
        grader = _Grader(self._derived_of(prep), idx, self.params, reveal_expected, memory_mb, stop, time_s)
        # Early stop on wrong answers is only sound where each test is judged on its own (not replayed check()s).
        ex = self._execute(request, grader.fails_alone if stop else None)
        return grader.grade(ex, self._judge)

    def _request(
        self, prep: PreparedProblem, program: str, idx: list[int], stop: bool, time_s: float, memory_mb: int
    ) -> dict:
        """The worker's request for one sample: the program, the chosen tests' inputs and the jail's limits."""
        sample_s = min(self.params.sample_time_limit_s, time_s * max(1, len(idx)) + 1.0)
        sample_s = max(sample_s, time_s + 1.0)
        return {
            "mode": prep.mode,
            "program": program,
            "entry": prep.entry,
            "cls": prep.cls,
            "inputs": [prep.inputs[i] for i in idx],
            "stop_early": stop,
            "limits": {
                "time_s": time_s,
                "sample_s": sample_s,
                "cpu_s": sample_s,
                "memory_mb": memory_mb,
                "file_size_mb": self.params.max_file_size_mb,
                "processes": self.params.max_processes,
                "open_files": self.params.max_open_files,
                "output_bytes": self.params.max_output_bytes,
                "strict_types": self.params.strict_return_types,
            },
        }

    def _derived_of(self, prep: PreparedProblem) -> _Derived:
        """What grading derives from ``prep`` (``_Derived``), made once for as long as ``prep`` lives (keyed by id)."""
        derived = self._derived.get(id(prep))
        if derived is None or derived.prep is not prep:
            if len(self._derived) > 100_000:
                self._derived.clear()
            derived = self._derived[id(prep)] = _Derived(prep)
        return derived

    def _execute(self, request: dict, on_record):
        """Run ``request`` on a pooled worker, once more on a fresh jail if the worker was lost mid-sample."""
        worker = self._workers.get()
        try:
            for _attempt in range(2):
                ex = worker.execute(request, on_record)  # a failing worker restarts itself (worker.py)
                # A worker lost before the sample ended (killed from outside, even while the sample ran, or dead
                # with the sample ahead of it) runs the sample once more, restarted. A sample that kills its jail
                # kills the second one too and is reported; one the host timed out is not run again.
                if ex.final is not None or ex.host_timeout:
                    break
        finally:
            self._workers.put(worker)
        return ex

    def run_batch(self, items: Sequence[tuple[Problem, str]], **kwargs) -> list[SampleResult]:
        """``run`` every (problem, program) over the pool; results in input order."""
        self._ensure_started()
        unique = {id(p): p for p, _ in items}  # prepare() then dedupes equal copies by content hash
        self.prepare_all(unique.values())
        return self.map(lambda it: self.run(it[0], it[1], **kwargs), items)

    async def arun(self, problem: Problem, program: str, **kwargs) -> SampleResult:
        import asyncio  # here, not at the top: the command line (eval-samples) never needs it

        self._ensure_started()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: self.run(problem, program, **kwargs))

    async def arun_batch(self, items: Sequence[tuple[Problem, str]], **kwargs) -> list[SampleResult]:
        """``run`` every item, awaitable, so reward scoring overlaps generation in an event loop; results in input
        order, a problem whose tests cannot be prepared scores ``sandbox_error`` (as with ``arun``). The batch is one
        wait for the event loop (a helper thread hands it to the pool), not one wake-up of the loop per sample: that
        cost the host more than grading did."""
        import asyncio

        return await asyncio.to_thread(self._run_all, list(items), kwargs)

    def _run_all(self, items: list[tuple[Problem, str]], kwargs: dict) -> list[SampleResult]:
        self.prepare_ahead(p for p, _ in items)
        return self.map(lambda it: self.run(it[0], it[1], **kwargs), items)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(item) for item in items]`` on ``callers`` of the pool's threads at once (the number that keeps every
        worker busy when ``fn`` calls ``run``), results in input order; the first exception is raised at the end.

        Each thread takes the next item when it is done with one, so a batch costs one ``Future`` per thread, not one
        per item as ``Executor.map``'s does: a Future's Condition and its wake-ups cost the host more than grading
        did, and the host shares the cores with the workers."""
        self._ensure_started()
        results: list = [None] * len(items)
        positions = itertools.count()  # next() on it is atomic: each position is taken by one thread

        def take() -> None:
            for i in positions:
                if i >= len(items):
                    return
                results[i] = fn(items[i])

        threads = [self._executor.submit(take) for _ in range(min(self.callers, len(items)))]
        for t in threads:
            t.result()
        return results


class _Judges:
    """The trusted judge processes, lent for one call at a time. A call a sample waits for (its problem's recording,
    a check() replay) goes first: background recordings (``prepare_ahead``) take a judge only while nobody waits and
    another judge stays free. While the judges recorded a whole benchmark ahead of the samples, a wrong answer's
    replay queued behind them held its caller up to half a second, and with it a share of the workers (cold runs of
    wrong answers)."""

    def __init__(self):
        self._free: list[JudgeClient] = []
        self._count = 0
        self._cond = threading.Condition(threading.Lock())
        self._wanted = 0  # callers for samples that wait for a judge

    def take(self, background: bool = False) -> JudgeClient:
        with self._cond:
            if background:
                while len(self._free) < min(2, self._count) or self._wanted:
                    self._cond.wait()
                return self._free.pop()
            self._wanted += 1
            try:
                while not self._free:
                    self._cond.wait()
                return self._free.pop()
            finally:
                self._wanted -= 1
                self._cond.notify_all()  # background recordings may go on once nobody is waiting

    def add(self, judge: JudgeClient) -> None:
        with self._cond:
            self._count += 1
        self.give_back(judge)

    def give_back(self, judge: JudgeClient) -> None:
        with self._cond:
            self._free.append(judge)
            self._cond.notify_all()


def _error_result(task_id: str, detail: str) -> SampleResult:
    return SampleResult(task_id=task_id, verdict=Verdict.sandbox_error, passed=False, detail=short(detail, 300))


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


_UNPARSED = object()


class _Derived:
    """What grading derives once per prepared problem, from trusted data only: the expected values parsed from their
    reprs, and the lines of a check() that is nothing but ``assert candidate(<literals>) == <literal>`` lines.

    Such a check() is replayed here, without a judge round trip: its verdict on the candidate's outputs is the
    first line whose comparison is false or whose call raised, exactly as running it would give (same ``==`` on the
    same parsed values, same error text). 142 of HumanEval's 164 checks are of this form; any other check (loops,
    helpers, tolerances, property tests) is replayed by the trusted judge.
    """

    def __init__(self, prep: PreparedProblem):
        self.prep = prep
        self._values = [_UNPARSED] * len(prep.expected)
        self.asserts = _literal_asserts(prep)

    def expected_value(self, i: int):
        value = self._values[i]
        if value is _UNPARSED:
            value = self._values[i] = parse_literal(self.prep.expected[i])
        return value

    def replay(self, outputs: list[dict], parsed: dict[int, object] | None = None) -> dict:
        """The judge's ``replay`` reply for a check of ``asserts`` (see judge_server.op_replay); ``parsed``: values
        of ``outputs`` already parsed (by position)."""
        parsed = parsed or {}
        for j, ((literal, message, call_left), out) in enumerate(zip(self.asserts, outputs, strict=True)):
            try:
                if "v" not in out:
                    raise exception_from(out.get("exc", "RuntimeError"), out.get("err", "no result"))
                if j in parsed:
                    got = parsed[j]
                elif out["v"] == self.prep.expected[j]:
                    got = self.expected_value(j)
                else:
                    got = parse_literal(out["v"])
                if not (got == literal if call_left else literal == got):
                    raise AssertionError(message)
            except Exception as e:
                return {"ok": False, "fail_index": j, "err": describe(e)}
        return {"ok": True, "fail_index": None, "err": ""}


def _literal_asserts(prep: PreparedProblem) -> list[tuple] | None:
    """(literal, message, call on the left) per recorded call when ``prep``'s check() is only ``assert candidate(
    <literals>) == <literal>[, "message"]`` lines (``prepare.literal_check_calls``) whose arguments are the recorded
    calls' in order; else None."""
    if not prep.n_check or not prep.check_code or prep.cls:
        return None
    calls = literal_check_calls(prep.check_code)
    if calls is None or len(calls) != prep.n_check or any(c[0] != i for c, i in zip(calls, prep.inputs)):
        return None
    return [c[1:] for c in calls]


class _Grader:
    """Turns an ``Execution`` (untrusted text) into a ``SampleResult`` (trusted verdicts)."""

    def __init__(
        self,
        derived: _Derived,
        idx: list[int],
        params: SandboxParams,
        reveal: bool,
        memory_mb: int,
        stop: bool,
        time_s: float,
    ):
        prep = derived.prep
        self.derived, self.prep, self.idx, self.params = derived, prep, idx, params
        self.reveal, self.memory_mb = reveal, memory_mb
        self.stop, self.time_s = stop, time_s
        self.tol = prep.float_tol
        self._first_fail: Verdict | None = None
        self._parsed: dict[int, object] = {}  # test position -> the candidate's value, where it was parsed
        self.rss0_kb = 0.0  # the sample's process's start size (Execution.rss0_kb), set by grade

    def _expected(self, k: int):
        return self.prep.expected[self.idx[k]]

    def _is_check(self, k: int) -> bool:
        return self.idx[k] < self.prep.n_check

    def _tol(self, k: int) -> float | None:
        return self.tol if self.tol is not None else (self.params.float_tol if self._is_check(k) else None)

    def judge_record(self, k: int, rec: dict) -> TestOutcome:
        wall, cpu = float(rec.get("wall", 0) or 0), float(rec.get("cpu", 0) or 0)
        rss_kb = float(rec.get("maxrss_kb", 0) or 0)  # the process's whole size: what the memory limit sees
        # a stdio test's own process starts at the harness's size then; its record comes from the harness, which no
        # candidate code runs in (a function-mode record may be the candidate's forgery: only "compiled" counts there)
        rss0_kb = (rec.get("rss0_kb") or self.rss0_kb) if self.prep.mode == "stdio" else self.rss0_kb
        mem = added_memory_mb(rss_kb, rss0_kb)

        def out(v: Verdict, detail: str = "") -> TestOutcome:
            # validated: pydantic-core's check is about half the cost of model_construct's Python loop (1.3 vs 2.4 us)
            return TestOutcome(verdict=v, wall_time_s=wall, cpu_time_s=cpu, peak_memory_mb=mem, detail=detail)

        if rec.get("timeout") or wall > self.time_s:  # also a result returned after catching the alarm
            if rss_kb / 1024 > 0.9 * self.memory_mb:  # it was thrashing against the memory limit, not computing
                return out(Verdict.memory_exceeded, "time limit exceeded at the memory limit")
            return out(Verdict.timeout, "time limit exceeded")
        if "mem" in rec:
            return out(Verdict.memory_exceeded, short(str(rec["mem"])))
        if rec.get("over"):
            return out(Verdict.wrong_answer, "output limit exceeded")
        if self.prep.mode == "stdio":
            if "signal" in rec:
                return out(Verdict.runtime_error, f"killed by {_signal_name(int(rec['signal']))}")
            if rec.get("exit"):
                err = short(str(rec.get("err") or f"exit code {rec['exit']}"))
                return out(Verdict.memory_exceeded if err.startswith("MemoryError") else Verdict.runtime_error, err)
            got = str(rec.get("out", ""))
            if stdout_equal(got, self._expected(k), self.tol):
                return out(Verdict.passed)
            detail = "wrong output"
            if self.reveal:
                detail = f"expected {short(self._expected(k), 60)!r} got {short(got, 60)!r}"
            return out(Verdict.wrong_answer, detail)
        if "err" in rec:
            return out(Verdict.runtime_error, short(str(rec["err"])))
        if "bad_type" in rec:
            return out(Verdict.wrong_answer, f"returned a non-plain {short(str(rec['bad_type']), 40)} object")
        text = str(rec.get("v"))
        if text == self._expected(k):  # identical repr of plain data: equal, and of the same types
            return out(Verdict.passed)
        try:
            got = self._parsed[k] = parse_literal(text)
        except (KeyError, ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return out(Verdict.wrong_answer, "returned a value that is not a plain literal")
        expected = self.derived.expected_value(self.idx[k])
        if strictly_equal(got, expected) or values_equal(got, expected, self._tol(k)):
            return out(Verdict.passed)
        detail = "wrong answer"
        if self.reveal:
            detail = f"expected {short(repr(expected), 60)} got {short(repr(got), 60)}"
        return out(Verdict.wrong_answer, detail)

    def fails_alone(self, rec: dict) -> bool:
        """Early-stop hook: True when this record alone fails the sample (not a check() call open to replay)."""
        k = rec.get("i")
        if not isinstance(k, int) or not 0 <= k < len(self.idx):
            return False
        if self._is_check(k) and self.prep.n_check and len(self.idx) == len(self.prep.inputs):
            return False
        return self.judge_record(k, rec).verdict != Verdict.passed

    def _missing(self, ex: Execution, k: int, first_missing: bool) -> TestOutcome:
        """Outcome of a test that produced no record: the process ended (or was stopped) before it."""
        f = ex.final or {}
        load = ex.load or {}
        if load.get("load") == "syntax_error":
            return TestOutcome(verdict=Verdict.syntax_error, detail=short(load.get("err", "")))
        lv = {"timeout": Verdict.timeout, "memory": Verdict.memory_exceeded, "error": Verdict.runtime_error}
        if load.get("load") in lv:
            return TestOutcome(verdict=lv[load["load"]], detail=short(load.get("err", "")))
        if ex.overflow:
            return TestOutcome(verdict=Verdict.wrong_answer, detail="output limit exceeded")
        if not first_missing:
            return TestOutcome(verdict=self._first_fail or Verdict.runtime_error, detail="not run")
        if self._first_fail == Verdict.timeout:
            return TestOutcome(verdict=Verdict.timeout, detail="not run (an earlier test timed out)")
        if f.get("reason") == "timeout" or ex.host_timeout or ex.stalled:
            if float(f.get("maxrss_kb", 0)) / 1024 > 0.9 * self.memory_mb:
                return TestOutcome(verdict=Verdict.memory_exceeded, detail="time limit exceeded at the memory limit")
            return TestOutcome(verdict=Verdict.timeout, detail="time limit exceeded")
        if f.get("reason") == "stopped" or (self.stop and self._first_fail is not None and "exit" in f):
            return TestOutcome(verdict=self._first_fail or Verdict.runtime_error, detail="not run")
        if ex.final is None:
            return TestOutcome(verdict=Verdict.runtime_error, detail=short(ex.error or "sandbox worker lost"))
        maxrss_mb = float(f.get("maxrss_kb", 0)) / 1024
        if "signal" in f:
            name = _signal_name(int(f["signal"]))
            if f["signal"] in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT) and maxrss_mb > 0.9 * self.memory_mb:
                return TestOutcome(verdict=Verdict.memory_exceeded, detail=f"killed by {name} near the memory limit")
            if f["signal"] == signal.SIGXCPU:
                return TestOutcome(verdict=Verdict.timeout, detail="CPU time limit exceeded")
            return TestOutcome(verdict=Verdict.runtime_error, detail=f"process killed by {name}")
        return TestOutcome(
            verdict=Verdict.runtime_error, detail=f"process exited (code {f.get('exit')}) before finishing the tests"
        )

    def grade(self, ex: Execution, call_judge) -> SampleResult:
        tid = self.prep.task_id
        if ex.final is None and not ex.records and not ex.host_timeout:
            return _error_result(tid, ex.error or "sandbox worker lost")
        outcomes: list[TestOutcome | None] = [None] * len(self.idx)
        self._first_fail = None
        self.rss0_kb = ex.rss0_kb
        for k in range(len(self.idx)):
            rec = ex.records.get(k)
            if rec is not None:
                outcomes[k] = self.judge_record(k, rec)
                if outcomes[k].verdict != Verdict.passed and self._first_fail is None:
                    self._first_fail = outcomes[k].verdict
        first = True
        for k in range(len(self.idx)):
            if outcomes[k] is None:
                outcomes[k] = self._missing(ex, k, first)
                first = False
                if self._first_fail is None:
                    self._first_fail = outcomes[k].verdict
        self._replay(ex, outcomes, call_judge)
        n_pass = sum(o.verdict == Verdict.passed for o in outcomes)
        failed = [o for o in outcomes if o.verdict != Verdict.passed]
        f = ex.final or {}
        verdict = failed[0].verdict if failed else Verdict.passed
        return SampleResult(
            task_id=tid,
            verdict=verdict,
            passed=not failed and bool(outcomes),
            tests=outcomes,
            pass_fraction=n_pass / len(outcomes) if outcomes else 0.0,
            wall_time_s=float(f.get("wall", 0.0)),
            cpu_time_s=float(f.get("cpu", 0.0)),
            peak_memory_mb=added_memory_mb(f.get("maxrss_kb", 0.0), ex.rss0_kb),
            detail=failed[0].detail if failed else "",
        )

    def _replay(self, ex: Execution, outcomes: list[TestOutcome], call_judge) -> None:
        """check()-style problems: let the trusted check decide on the candidate's outputs (whole check only)."""
        p = self.prep
        if not p.n_check or len(self.idx) != len(p.inputs):
            return
        check_out = outcomes[: p.n_check]
        if all(o.verdict == Verdict.passed for o in check_out):
            # Exactly-equal values behave exactly like the reference's under check(): no replay needed.
            if all(
                ex.records[k]["v"] == p.expected[k]
                or strictly_equal(self._parsed.get(k, _UNPARSED), self.derived.expected_value(k))
                for k in range(p.n_check)
            ):
                return
        # Replay only when every call produced a value or an exception in time (a timeout, memory failure or
        # non-plain value fails regardless of what check() would say): it may overrule only wrong answers (e.g.
        # within check()'s tolerance, another valid root) and exceptions (a check may expect one).
        if any(o.verdict not in (Verdict.passed, Verdict.wrong_answer, Verdict.runtime_error) for o in check_out):
            return
        outs = []
        for k in range(p.n_check):
            rec = ex.records.get(k) or {}
            if "v" in rec and check_out[k].detail != "returned a value that is not a plain literal":
                outs.append({"v": str(rec["v"])})
            elif "err" in rec and p.mode == "function":
                outs.append({"exc": str(rec.get("exc", "RuntimeError")), "err": str(rec["err"])})
            else:
                return
        if self.derived.asserts is not None:
            rep = self.derived.replay(outs, self._parsed)
        else:
            rep = self._judge_replay(outs, call_judge)
        self._apply_replay(rep, outcomes)

    def _judge_replay(self, outs: list[dict], call_judge) -> dict:
        p = self.prep
        try:
            return call_judge(
                {
                    "op": "replay",
                    "program": p.program,
                    "check_code": p.check_code,
                    "seed": p.seed,
                    "calls": p.inputs[: p.n_check],
                    "outputs": outs,
                }
            )
        except JudgeError as e:
            return {"ok": False, "fail_index": 0, "err": f"check() could not be replayed: {e}"}

    def _apply_replay(self, rep: dict, outcomes: list[TestOutcome]) -> None:
        p = self.prep
        if rep["ok"]:
            for k in range(p.n_check):
                if outcomes[k].verdict != Verdict.passed:
                    outcomes[k] = outcomes[k].model_copy(update={"verdict": Verdict.passed, "detail": ""})
            return
        j = min(int(rep.get("fail_index") or 0), p.n_check - 1)
        if outcomes[j].verdict == Verdict.passed:
            err = str(rep.get("err", ""))
            detail = f"check() failed: {short(err, 100) if self.reveal else err.split(':')[0]}"
            outcomes[j] = outcomes[j].model_copy(update={"verdict": Verdict.wrong_answer, "detail": detail})
