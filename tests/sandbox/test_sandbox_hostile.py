"""Hostile programs: every attack must be scored as a failure, leave the host untouched, and the pool serving.

Where an attack can be made to "pay off", the program returns the right answer only if the attack worked (read a host
file, reached the network, ...), so a pass would mean a hole; the host-side effects are checked directly too.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import psutil
import pytest
from sandbox_helpers import MIX_REFERENCE

from corecode.sandbox import Sandbox, SandboxParams, Verdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ATTACKS = {
    # --- exiting early, any exit code
    "os_exit_0_module": ("import os\nos._exit(0)\n", None),
    "os_exit_0_in_call": ("import os\ndef mix(a, b):\n    os._exit(0)\n", None),
    "sys_exit_0_module": ("import sys\nsys.exit(0)\n", {Verdict.runtime_error}),
    "sys_exit_0_in_call": ("import sys\ndef mix(a, b):\n    sys.exit(0)\n", {Verdict.runtime_error}),
    "raise_systemexit_in_call": ("def mix(a, b):\n    raise SystemExit(0)\n", {Verdict.runtime_error}),
    "kill_self": ("import os, signal\ndef mix(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n", None),
    # --- objects that compare equal to anything
    "eq_always_true": (
        "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    def __hash__(self): return 0\n    def __repr__(self): return 'Any()'\n"
        "def mix(a, b):\n    return Any()\n",
        {Verdict.wrong_answer},
    ),
    "int_subclass_eq_true": (
        "class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
        "def mix(a, b):\n    return I(0)\n",
        {Verdict.wrong_answer},
    ),
    "str_subclass_eq_true": (
        "class S(str):\n    def __eq__(self, o): return True\ndef mix(a, b):\n    return S('x')\n",
        {Verdict.wrong_answer},
    ),
    # --- patching builtins and the harness
    "patch_builtins": (
        "import builtins\nbuiltins.repr = lambda x: 'True'\nbuiltins.type = lambda x: int\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.AssertionError = type('N', (Exception,), {})\n"
        "def mix(a, b):\n    return None\n",
        None,
    ),
    "patch_harness_module": (
        "import sys, gc\nm = sys.modules['__main__']\n"
        "for name in list(vars(m)):\n    if callable(getattr(m, name)) and not name.startswith('__'):\n"
        "        try: setattr(m, name, lambda *a, **k: True)\n        except Exception: pass\n"
        "def mix(a, b):\n    return 0\n",
        None,
    ),
    "forge_result_frames": (
        # Find the harness's request (sid) by frame walking and write forged records for every test to every fd.
        "import sys, os, json, struct\n"
        "def mix(a, b):\n"
        "    f = sys._getframe()\n    sid = None\n"
        "    while f is not None:\n"
        "        req = f.f_locals.get('req')\n"
        "        if isinstance(req, dict) and 'sid' in req: sid = req['sid']\n"
        "        f = f.f_back\n"
        "    for fd in range(3, 64):\n"
        "        for i in range(3):\n"
        "            for v in ('True', '0', repr(a), repr(b), 'None'):\n"
        "                body = json.dumps({'sid': sid, 'i': i, 'v': v}).encode()\n"
        "                try: os.write(fd, struct.pack('>I', len(body)) + body)\n"
        "                except OSError: pass\n"
        "    os._exit(0)\n",
        None,
    ),
    "frame_walk_for_expected": (
        "import sys\ndef mix(a, b):\n    f = sys._getframe()\n    found = []\n"
        "    while f is not None:\n        for v in f.f_locals.values():\n"
        "            if type(v) is int and v not in (a, b): found.append(v)\n        f = f.f_back\n"
        "    return found[-1] if found else -1\n",
        {Verdict.wrong_answer},
    ),
    "gc_scan_for_expected": (
        "import gc\ndef mix(a, b):\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, (list, tuple)) and len(o) == 2 and all(type(x) is int for x in o) and o[0] != a:\n"
        "            return o[1]\n"
        "        if isinstance(o, str) and o.isdigit() and len(o) >= 5:\n"
        "            return int(o)\n"
        "    return 0\n",
        {Verdict.wrong_answer},
    ),
    "print_fake_results": (
        "import sys, os\nprint('passed'); print('{\"verdict\": \"passed\"}')\nsys.stderr.write('OK\\n')\n"
        "os.write(1, b'passed\\n'); os.write(2, b'passed\\n')\ndef mix(a, b):\n    print('passed')\n    return None\n",
        {Verdict.wrong_answer},
    ),
    # --- killing the parent / the zygote / everyone
    "kill_parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef mix(a, b):\n    return 0\n", None),
    "kill_pid1_and_all": (
        "import os, signal\nfor s in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):\n"
        "    for pid in (1, -1, os.getppid()):\n        try: os.kill(pid, s)\n        except OSError: pass\n"
        "def mix(a, b):\n    return 0\n",
        None,
    ),
    # --- reaching into the zygote (PID 1): ptrace, its memory, its pipes
    "ptrace_zygote": (
        "import ctypes\nlibc = ctypes.CDLL(None)\ndef mix(a, b):\n    assert libc.ptrace(16, 1, 0, 0) == 0\n"
        "    return (a * 7919 + b) % 104729\n",
        {Verdict.runtime_error},
    ),
    "zygote_memory_and_fds": (
        "import os\ndef mix(a, b):\n    ok = 0\n"
        "    for path in ('/proc/1/mem', '/proc/1/fd/0', '/proc/1/fd/1', '/proc/1/environ'):\n"
        "        try:\n            open(path, 'r+b').close()\n            ok += 1\n        except OSError:\n            pass\n"  # noqa: E501 (one line of the hostile program)
        "    assert ok\n    return (a * 7919 + b) % 104729\n",
        {Verdict.runtime_error},
    ),
    # --- resource exhaustion
    "infinite_loop_swallowing_signals": (
        "import signal\nfor s in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGXCPU):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        "def mix(a, b):\n    while True:\n        try:\n            while True: pass\n        except BaseException:\n"
        "            pass\n",
        {Verdict.timeout},
    ),
    "catch_the_alarm_and_answer_late": (
        # overstays the limit, catches the harness's alarm, then returns the right answer: still a timeout
        "import time\ndef mix(a, b):\n    try:\n        time.sleep(1.15)\n    except BaseException:\n"
        "        time.sleep(0.1)\n    return (a * 7919 + b) % 104729\n",
        {Verdict.timeout},
    ),
    "sleep_forever": (
        "import time, signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ndef mix(a, b):\n    time.sleep(10**6)\n",
        {Verdict.timeout},
    ),
    "memory_bomb_alloc": ("def mix(a, b):\n    x = bytearray(8 * 1024**3)\n    return a\n", {Verdict.memory_exceeded}),
    "memory_bomb_grow": (
        "def mix(a, b):\n    l = []\n    while True:\n        l.append(' ' * 10**6)\n",
        {Verdict.memory_exceeded},
    ),
    "disk_bomb_one_file": (
        "def mix(a, b):\n    with open('big', 'wb') as f:\n        while True:\n            f.write(b'x' * 2**20)\n",
        {Verdict.runtime_error},
    ),
    "disk_bomb_many_files": (
        "import os\ndef mix(a, b):\n    i = 0\n    while True:\n"
        "        with open(f'f{i}', 'wb') as f: f.write(b'x' * 2**20)\n        i += 1\n",
        {Verdict.runtime_error},
    ),
    "fork_bomb": (
        "import os\ndef mix(a, b):\n    while True:\n        try: os.fork()\n        except OSError: pass\n",
        None,
    ),
    "thread_bomb": (
        "import threading, time\ndef mix(a, b):\n    while True:\n"
        "        threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\n",
        None,
    ),
    "deep_recursion": (
        "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1) + 1\n"
        "def mix(a, b):\n    return f(0)\n",
        {Verdict.runtime_error, Verdict.memory_exceeded, Verdict.timeout},
    ),
    "segfault": ("import ctypes\ndef mix(a, b):\n    return ctypes.string_at(0)\n", {Verdict.runtime_error}),
    "too_many_open_files": (
        "def mix(a, b):\n    fs = [open('/dev/null') for _ in range(100000)]\n    return a * 7919 + b\n",
        {Verdict.runtime_error},
    ),
    # --- leftover processes: daemons and double forks outliving the sample
    "double_fork_daemon": (
        "import os, time\ndef mix(a, b):\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(600)\n        os._exit(0)\n    return 0\n",
        {Verdict.wrong_answer},
    ),
    "non_plain_return": ("def mix(a, b):\n    return (lambda: 0)\n", {Verdict.wrong_answer}),
    "syntax_error": ("def mix(a, b)\n    return 0\n", {Verdict.syntax_error}),
}


def _procs_of(uids: set[int]) -> set[int]:
    """Our own descendants running as a sandbox uid (other test runs may share the uids)."""
    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if p.uids().real in uids:
                out.add(p.pid)
        except psutil.Error:
            pass
    return out


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_fails_and_pool_survives(sandbox, mix_problem, name):
    program, verdicts = ATTACKS[name]
    sandbox.run(mix_problem, MIX_REFERENCE)  # pool started
    before = _procs_of(sandbox.worker_uids)
    result = sandbox.run(mix_problem, program)
    assert not result.passed, f"{name} passed: {result}"
    assert result.pass_fraction == 0.0
    assert result.verdict != Verdict.passed
    if verdicts is not None:
        assert result.verdict in verdicts, (name, result.verdict, result.detail)
    # the pool still serves, and a correct program still passes right after
    ok = sandbox.run(mix_problem, MIX_REFERENCE)
    assert ok.passed, ok
    if os.geteuid() == 0:
        # nothing the attack started is left on the host: same sandbox processes as before (restarts aside)
        time.sleep(0.05)
        after = _procs_of(sandbox.worker_uids)
        assert len(after) <= len(before), (name, before, after)


@pytest.mark.parametrize(
    "path",
    [
        os.path.join(REPO, "pyproject.toml"),
        "/etc/passwd",
        "/etc/hostname",
        "/root/.bashrc",
        "/proc/1/environ",
        "/usr/lib/python3/dist-packages",
    ],
)
def test_reading_host_files_fails(sandbox, mix_problem, path):
    # Right answer only if the host path can be read (or listed).
    program = (
        "import os\ndef mix(a, b):\n"
        f"    p = {path!r}\n"
        "    data = os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read()\n"
        "    assert data\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    result = sandbox.run(mix_problem, program)
    assert not result.passed, f"{path} readable from the sandbox"
    assert result.verdict == Verdict.runtime_error


def test_benchmark_data_not_visible(sandbox, mix_problem):
    from corecode.data.loaders.humaneval import humaneval_path

    program = f"def mix(a, b):\n    open({str(humaneval_path())!r}, 'rb').read()\n    return (a * 7919 + b) % 104729\n"
    assert not sandbox.run(mix_problem, program).passed


def test_host_files_cannot_be_deleted_or_written(sandbox, mix_problem, tmp_path):
    canary = tmp_path / "canary.txt"
    canary.write_text("alive")
    os.chmod(tmp_path, 0o777)
    os.chmod(canary, 0o666)  # even world-writable host files are out of reach
    pwned = tmp_path / "pwned.txt"
    program = (
        "import os, shutil\ndef mix(a, b):\n"
        f"    try: os.remove({str(canary)!r})\n    except OSError: pass\n"
        f"    try: shutil.rmtree({str(tmp_path)!r})\n    except OSError: pass\n"
        f"    try: open({str(pwned)!r}, 'w').write('x')\n    except OSError: pass\n"
        "    for p in ('/usr/lib/python3.11/os.py', '/usr/bin/python3.11'):\n"
        "        try: open(p, 'a').write('#')\n        except OSError: pass\n"
        "    return 0\n"
    )
    result = sandbox.run(mix_problem, program)
    assert not result.passed
    assert canary.read_text() == "alive"
    assert not pwned.exists()
    assert sandbox.run(mix_problem, MIX_REFERENCE).passed  # the interpreter inside is intact too


def test_scratch_writes_work_and_are_wiped_between_samples(sandbox, mix_problem):
    writer = (
        "def mix(a, b):\n    open('note.txt', 'w').write(str(a))\n    open('/dev/shm/note', 'w').write('1')\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    assert sandbox.run(mix_problem, writer).passed  # a private scratch dir (and /dev/shm) is writable
    # ... nothing else is, so nothing can be left for a later sample (e.g. a zip on the stdlib's sys.path)
    planter = (
        "def mix(a, b):\n"
        "    for p in ('/note', '/usr/lib/python311.zip', '/usr/note', '/dev/note', '/proc/note'):\n"
        "        try:\n            open(p, 'w').write('x')\n            return (a * 7919 + b) % 104729\n"
        "        except OSError:\n            pass\n    return -1\n"
    )
    assert not sandbox.run(mix_problem, planter).passed
    reader = (
        "import os\ndef mix(a, b):\n    assert not os.path.exists('note.txt') and not os.listdir('.')\n"
        "    assert not os.listdir('/dev/shm')\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    for _ in range(sandbox.params.workers * 2):  # whichever worker it lands on
        assert sandbox.run(mix_problem, reader).passed


def test_memory_of_all_processes_together_is_capped(mix_problem):
    """RLIMIT_AS is per process; a fork-and-allocate attack is stopped by the worker's memory cgroup."""
    from corecode.sandbox.cgroup import MemoryCgroup

    probe = MemoryCgroup(1 << 30)
    if not probe.available:
        pytest.skip("no memory cgroup can be created here (not root / no cgroup fs)")
    probe.close()
    # 6 children x 200 MB each (under the 256 MB per-process limit) = 1.2 GB; the answer is right only if all of
    # them got their memory.
    program = (
        "import os, time, select\ndef mix(a, b):\n    r, w = os.pipe()\n"
        "    for _ in range(6):\n        if os.fork() == 0:\n            x = b'x' * (200 * 2**20)\n"
        "            os.write(w, b'1')\n            time.sleep(3)\n            os._exit(0)\n"
        "    got, end = b'', time.time() + 4\n"
        "    while len(got) < 6 and time.time() < end:\n"
        "        if select.select([r], [], [], 0.1)[0]: got += os.read(r, 6)\n"
        "    return (a * 7919 + b) % 104729 if len(got) >= 6 else -1\n"
    )
    params = SandboxParams(workers=1, time_limit_s=6, memory_limit_mb=256, cache_dir=None)
    with Sandbox(params) as sb:
        r = sb.run(mix_problem, program, tests=[0])
        assert not r.passed, r
        assert sb.run(mix_problem, MIX_REFERENCE).passed
    # the same attack does get its 1.2 GB without the cgroup: the cgroup is what stops it
    with Sandbox(params.model_copy(update={"cgroup": False})) as sb:
        assert sb.run(mix_problem, program, tests=[0]).passed


def test_network_is_unreachable(sandbox, mix_problem):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    hits = []

    def accept():
        end = time.time() + 5
        while time.time() < end:
            try:
                conn, _ = server.accept()
                hits.append(1)
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=accept)
    t.start()
    program = (
        "import socket\ndef mix(a, b):\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=0.5).close()\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    try:
        result = sandbox.run(mix_problem, program)
        dns = sandbox.run(
            mix_problem,
            "import socket\ndef mix(a, b):\n    socket.getaddrinfo('pypi.org', 443)\n    return (a * 7919 + b) % 104729\n",  # noqa: E501 (one line of the hostile program)
        )
    finally:
        t.join()
        server.close()
    assert not result.passed and result.verdict == Verdict.runtime_error
    assert not dns.passed
    assert not hits, "the sandbox reached a host socket"


def test_no_daemon_survives_into_the_next_sample(sandbox, mix_problem):
    # A daemon started by one sample would find the next sample's scratch dir / processes; it must be dead.
    starter = (
        "import os, time\ndef mix(a, b):\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            while True:\n                open('daemon_was_here', 'w').close()\n"
        "                time.sleep(0.01)\n        os._exit(0)\n    time.sleep(0.05)\n    return (a * 7919 + b) % 104729\n"  # noqa: E501 (one line of the hostile program)
    )
    checker = (
        "import os, time\ndef mix(a, b):\n    time.sleep(0.05)\n    assert not os.path.exists('daemon_was_here')\n"
        "    assert [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())] == []\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    sandbox.run(mix_problem, starter)
    for _ in range(sandbox.params.workers * 2):
        r = sandbox.run(mix_problem, checker)
        assert r.passed, r


def test_stdio_attacks(sandbox, io_problem):
    good = "a, b = map(int, input().split())\nprint(a * b)\n"
    assert sandbox.run(io_problem, good).passed
    attacks = {
        "exit0_silent": "import sys\nsys.exit(0)\n",
        "os_exit0": "import os\nos._exit(0)\n",
        "prefix_only": "print(4)\n",
        "extra_lines": "a, b = map(int, input().split())\nprint(a * b)\nprint('passed')\n",
        "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "flood": "import sys\nwhile True: sys.stdout.write('x' * 65536)\n",
        "sleep": "import time\ntime.sleep(100)\n",
    }
    for name, program in attacks.items():
        r = sandbox.run(io_problem, program)
        assert not r.passed, name
        assert r.pass_fraction == 0.0, name
    assert sandbox.run(io_problem, good).passed


def test_forged_start_size_does_not_hide_memory(sandbox, mix_problem):
    """Peak memory (what the memory reward compares) is the zygote's high-water mark less the start size the harness
    sent before the candidate ran: a candidate that holds 60 MiB and forges load records claiming a huge start size,
    on every fd, when loaded and in every call, still measures its 60 MiB (and not the zygote's size besides)."""
    program = (
        "import sys, os, json, struct\n"
        "PAD = bytearray(60 << 20)\n"
        "def forge():\n"
        "    f = sys._getframe()\n"
        "    sid = None\n"
        "    while f is not None:\n"
        "        req = f.f_locals.get('req')\n"
        "        if isinstance(req, dict) and 'sid' in req: sid = req['sid']\n"
        "        f = f.f_back\n"
        "    for fd in range(3, 64):\n"
        "        for rec in ({'load': 'ok', 'rss0_kb': 1 << 30}, {'load': 'compiled', 'rss0_kb': 1 << 30}):\n"
        "            body = json.dumps(dict(rec, sid=sid)).encode()\n"
        "            try: os.write(fd, struct.pack('>I', len(body)) + body)\n"
        "            except OSError: pass\n"
        "forge()\n"
        "def mix(a, b):\n"
        "    forge()\n"
        "    return (a * 7919 + b) % 104729\n"
    )
    r = sandbox.run(mix_problem, program)
    assert r.passed and 60 <= r.peak_memory_mb < 68, r
    assert all(60 <= t.peak_memory_mb < 68 for t in r.tests)


def test_expected_outputs_never_enter_the_sandbox(sandbox, mix_problem):
    # The request sent to the zygote holds inputs only: scan everything the candidate can see for the answers.
    program = (
        "import gc, sys\ndef mix(a, b):\n"
        "    blob = repr([o for o in gc.get_objects() if isinstance(o, (dict, list, str))])\n"
        "    f = sys._getframe()\n"
        "    while f is not None:\n        blob += repr(f.f_locals)\n        f = f.f_back\n"
        "    return 1 if ('31676' in blob or '%d' % ((1234 * 7919 + 99) % 104729) in blob) else 0\n"
    )
    r = sandbox.run(mix_problem, program)
    assert all(t.verdict == Verdict.wrong_answer for t in r.tests)


def test_sample_held_behind_a_hung_or_forging_one_is_scored_on_its_own(mix_problem):
    """A worker holds the next sample while one runs: a hung sample must not eat the next one's time, and bytes a
    sample leaves in its result pipe (a forged half frame claiming a huge body) must not reach the next one."""
    hung = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ndef mix(a, b):\n    while True: pass\n"
    half_frame = (
        "import os, struct\ndef mix(a, b):\n"
        "    for fd in range(3, 64):\n"
        "        try: os.write(fd, struct.pack('>I', 900000) + b'{\"sid\": ')\n"
        "        except OSError: pass\n"
        "    os._exit(0)\n"
    )
    params = SandboxParams(workers=1, time_limit_s=1.0, cache_dir=None, sample_time_limit_s=6)
    # the two held samples alternate between two result pipes: the fifth sample gets the forger's pipe
    programs = (hung, MIX_REFERENCE, half_frame, MIX_REFERENCE, MIX_REFERENCE, hung, MIX_REFERENCE)
    with Sandbox(params) as sb:
        results = sb.run_batch([(mix_problem, prog) for prog in programs])
    assert [r.passed for r in results] == [prog == MIX_REFERENCE for prog in programs], results
    assert results[0].verdict == results[5].verdict == Verdict.timeout


def test_killed_zygote_is_replaced(sandbox, mix_problem):
    """Even if a worker dies from outside (host kill), the sample is scored and the pool recovers."""
    for w in list(sandbox._all_workers):
        os.kill(w.proc.pid, 9)
    time.sleep(0.1)
    # a sample that finds its worker already dead is retried once on a fresh one
    results = [sandbox.run(mix_problem, MIX_REFERENCE) for _ in range(sandbox.params.workers + 2)]
    assert all(r.passed for r in results), results


def test_jail_killed_from_outside_while_the_sample_runs_is_run_again(sandbox, mix_problem):
    """A jail killed from outside after the sample has begun (its "compiled" record is in) runs it again, restarted:
    under load, a kill's end reaches the jail's processes only after the next sample has begun."""
    program = "import time\ntime.sleep(0.3)\n" + MIX_REFERENCE
    killed = []

    def kill_once_begun() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for w in list(sandbox._all_workers):
                with w._cond:
                    begun = bool(w._line) and w._line[0].ex.load is not None
                if begun:
                    killed.append(w.proc.pid)
                    os.kill(w.proc.pid, 9)
                    return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_once_begun)
    killer.start()
    result = sandbox.run(mix_problem, program)
    killer.join()
    assert killed, "the sample never began"
    assert result.passed, result


def test_workers_restarted_from_a_short_lived_thread_stay_up(sandbox, mix_problem):
    # bwrap --die-with-parent follows the forking *thread*; restarts must not die with the caller's thread.
    for w in list(sandbox._all_workers):
        os.kill(w.proc.pid, 9)
    results = []
    t = threading.Thread(target=lambda: results.extend(sandbox.run(mix_problem, MIX_REFERENCE) for _ in range(4)))
    t.start()
    t.join()
    assert all(r.passed for r in results), results
    pids = sorted(w.proc.pid for w in sandbox._all_workers)
    time.sleep(0.3)
    assert all(w.proc.poll() is None for w in sandbox._all_workers)
    assert all(sandbox.run(mix_problem, MIX_REFERENCE).passed for _ in range(4))
    assert sorted(w.proc.pid for w in sandbox._all_workers) == pids  # no further restarts were needed
