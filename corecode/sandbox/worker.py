"""Host side of one pool worker: starts a jailed zygote, sends it samples, collects what comes back.

A worker holds up to ``DEPTH`` samples: the one its zygote runs and the next, sent ahead, so the zygote starts the
next sample the moment the last one is over instead of waiting for the host to read the result, grade it and send
another (that wait idled each zygote about a tenth of the time on HumanEval; now 2%). Each held sample has its
own result pipe. One I/O thread per worker does all the reading, sending, watchdog work and restarting; callers of
``execute`` just wait. A worker that dies, hangs or floods is killed and restarted; the sample it was running still
gets a result, and the one waiting behind it comes back empty (``Sandbox.run`` retries it).
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from corecode.sandbox.cgroup import MemoryCgroup
from corecode.sandbox.config import SandboxParams
from corecode.sandbox.isolation import SandboxUnavailable, run_as, zygote_command

_ZYGOTE_SRC = Path(__file__).with_name("zygote.py").read_text()
_sids = itertools.count(1)
DEPTH = 2  # samples a worker holds at once: the running one and the next, sent ahead (one result pipe each)
_SCAN = json.scanner.c_make_scanner(json.decoder.JSONDecoder()) if json.scanner.c_make_scanner else None


def _decode(body: bytes):
    """A record frame's JSON value, or None for anything else (the sandbox writes these frames: any bytes at all).
    json's C scanner straight away: ``json.loads`` wraps it in Python that costs more than the parse."""
    try:
        text = body.decode()
        return _SCAN(text, 0)[0] if _SCAN else json.loads(text)
    except (ValueError, StopIteration, RecursionError):
        return None


def descendants(root: int) -> list[int]:
    """Host pids of every process under ``root`` (bwrap's: the zygote), from ``/proc/PID/stat``'s parent field."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


@dataclass
class Execution:
    """Raw result of one sample: the harness's records by test position, and the zygote's final report."""

    records: dict[int, dict] = field(default_factory=dict)
    load: dict | None = None
    final: dict | None = None  # None: the worker died or hung (see error)
    error: str = ""
    overflow: bool = False
    host_timeout: bool = False
    stalled: bool = False  # no test finished within the per-test limit: the host stopped the sample
    rss0_kb: float = 0.0  # the sample's process's size when it started (its "compiled" record), 0 if unknown


class _Done:
    """Set once by the I/O thread, waited for by the sample's one caller: a bare lock, not ``threading.Event``, whose
    Python-level Condition is work the host repeats for every sample."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        try:
            self._lock.release()
        except RuntimeError:  # already set
            pass

    def wait(self) -> None:
        self._lock.acquire()


@dataclass
class _Job:
    """One sample held by a worker: its request, what came back so far, and the host's clocks for it."""

    request: dict
    on_record: Callable[[dict], bool] | None
    slot: int  # its result pipe
    ex: Execution = field(default_factory=Execution)
    sent: bool = False
    buf: bytes = b""  # unparsed bytes of its result pipe
    received: int = 0
    stopped: bool = False  # a stop was sent
    started: float = 0.0  # when the zygote began it, by the host's clock (0: still waiting behind another)
    progress: float = 0.0  # its last record (or its start)
    done: _Done = field(default_factory=_Done)

    @property
    def sid(self) -> int:
        return self.request["sid"]


class Worker:
    def __init__(self, params: SandboxParams, index: int, spawner=None):
        self.params = params
        self.spawner = spawner
        self.index = index
        self.proc: subprocess.Popen | None = None
        self.stderr = None  # the jail's stderr: a temporary file (_start)
        self.res_fds: list[int] = []
        self.scratch: str | None = None
        self.cgroup: MemoryCgroup | None = None
        self.served = 0
        self._cond = threading.Condition()  # guards _line, _closing, _io
        self._line: list[_Job] = []  # held samples in the order the zygote runs them (the first one runs)
        self._closing = False
        self._io: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1  # a byte on it wakes the I/O thread (new sample, closing)
        self._ctrl = b""  # unparsed bytes of the zygote's control pipe

    # -------------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the jail. bwrap's --die-with-parent is tied to the *thread* that forks it, so all starts go
        through the owner's long-lived ``spawner`` executor, never a caller's short-lived thread."""
        if self.spawner is not None:
            self.spawner.submit(self._start).result()
        else:
            self._start()

    def _start(self) -> None:
        p = self.params
        drop = run_as(p, self.index)
        if p.isolation != "bwrap":
            self.scratch = tempfile.mkdtemp(prefix=f"corecode-sbx{self.index}-")
            if drop:
                os.chown(self.scratch, drop["user"], drop["group"])
        pipes = [os.pipe() for _ in range(DEPTH)]
        cmd = zygote_command(p, _ZYGOTE_SRC, [w for _, w in pipes], self.scratch or "/tmp")
        # The jail's own stderr (never a sample's: the harness points fds 0-2 at /dev/null) goes to a file, which
        # never blocks or breaks it, and whose end says why a jail died (_exit_status).
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                pass_fds=tuple(w for _, w in pipes),
                start_new_session=True,
                cwd="/",
                **drop,
            )
        finally:
            for _, w in pipes:
                os.close(w)
        self.res_fds = [r for r, _ in pipes]
        self._ctrl = b""
        for r in self.res_fds:
            os.set_blocking(r, False)
            try:  # room for a whole sample's records, so the host need not wake up for each one
                fcntl.fcntl(r, 1031, min(1 << 20, max(1 << 16, self.params.max_output_bytes)))  # F_SETPIPE_SZ
            except OSError:
                pass
        ready = self._read_control(time.monotonic() + 30)
        if not ready or not ready.get("ready"):
            try:
                self.proc.wait(timeout=2)
                err = self._stderr_tail(4000)
            except subprocess.TimeoutExpired:
                err = "no ready message within 30s"
            self._stop_process()
            raise SandboxUnavailable(f"sandbox worker {self.index} did not start ({p.isolation}): {err.strip()}")
        if p.cgroup:
            self.cgroup = MemoryCgroup((p.memory_limit_mb + p.scratch_size_mb + 128) * 1024 * 1024)
            for pid in [self.proc.pid, *descendants(self.proc.pid)]:
                self.cgroup.add(pid)

    def close(self) -> None:
        """Stop the I/O thread (held samples come back empty) and the jail."""
        with self._cond:
            self._closing = True
            io = self._io
        if io is not None:
            os.write(self._wake_w, b"x")
            io.join()
        self._stop_process()
        with self._cond:
            self._fail_all("sandbox worker closed")
            self._closing, self._io = False, None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def _stop_process(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if f and not f.closed:
                    try:
                        f.close()
                    except BrokenPipeError:  # a request left in stdin's buffer by a failed send: the jail is gone
                        pass  # close() has closed the pipe all the same
            self.proc = None
        if self.stderr is not None:  # also where Popen failed and there is no process
            self.stderr.close()
            self.stderr = None
        for fd in self.res_fds:
            os.close(fd)
        self.res_fds = []
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        if self.cgroup is not None:
            for _ in range(50):  # rmdir fails while the killed jail is still being torn down
                self.cgroup.close()
                if not self.cgroup.available:
                    break
                time.sleep(0.01)
            self.cgroup = None

    def _stderr_tail(self, limit: int) -> str:
        """The last ``limit`` bytes the jail wrote to its stderr. Read at an offset (pread): the file's position is
        shared with the jail's processes, which may still be writing, so it is left where they write."""
        if self.stderr is None:
            return ""
        fd = self.stderr.fileno()
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, max(0, size - limit)).decode(errors="replace")

    def _exit_status(self) -> str:
        """(I/O thread) How the jail that closed its control pipe ended, for the sample's error: killed by which
        signal, or its exit status and the last line it wrote to stderr (a traceback's exception, say)."""
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "still running"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        last = [line for line in self._stderr_tail(2000).splitlines() if line.strip()][-1:]
        return f"exit status {code}" + (f": {last[0].strip()[:200]}" if last else "")

    def _restart(self, head_error: str, host_timeout: bool = False) -> None:
        """(I/O thread) Kill the jail, end every held sample (the running one with ``head_error``), start anew."""
        with self._cond:
            if self._line:
                head = self._line[0]
                head.ex.error, head.ex.host_timeout = head_error, host_timeout
            self._fail_all("sandbox worker lost")
        self._stop_process()
        if not self._closing:
            try:
                self.start()
            except Exception:  # SandboxUnavailable: the next sample tries again (and reports it)
                self._stop_process()

    def _fail_all(self, error: str) -> None:
        """(under _cond) End every held sample as it stands; ``error`` for those without one."""
        for job in self._line:
            job.ex.error = job.ex.error or error
            job.done.set()
        self._line.clear()
        self._cond.notify_all()

    # ------------------------------------------------------------------------------------------------------ frames
    def _read_control(self, deadline: float) -> dict | None:
        fd = self.proc.stdout.fileno()
        buf = b""
        need = 4
        while True:
            while len(buf) < need:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    continue
                chunk = os.read(fd, need - len(buf))
                if not chunk:
                    return None
                buf += chunk
            if need == 4:
                need = 4 + struct.unpack(">I", buf)[0]
                continue
            return json.loads(buf[4:])

    def _send(self, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.proc.stdin.write(struct.pack(">I", len(data)) + data)
        self.proc.stdin.flush()

    # ----------------------------------------------------------------------------------------------------- execute
    def execute(self, request: dict, on_record=None) -> Execution:
        """Run one sample. ``on_record(rec) -> bool`` may ask to stop early by returning True (it is called on the
        worker's I/O thread). Up to ``DEPTH`` callers may wait on one worker at once; more wait for room."""
        with self._cond:
            while len(self._line) >= DEPTH and not self._closing:
                self._cond.wait()
            if self._closing:
                return Execution(error="sandbox worker closed")
            used = {job.slot for job in self._line}
            slot = next(s for s in range(DEPTH) if s not in used)
            job = _Job(dict(request, sid=next(_sids), out=slot), on_record, slot)
            self._line.append(job)
            if self._io is None:
                self._wake_r, self._wake_w = os.pipe()
                os.set_blocking(self._wake_r, False)
                self._io = threading.Thread(target=self._io_loop, name=f"sandbox-io-{self.index}", daemon=True)
                self._io.start()
            os.write(self._wake_w, b"x")
        job.done.wait()
        return job.ex

    def _io_loop(self) -> None:
        """The worker's I/O thread: send held samples, read records and reports, watch the running sample."""
        while True:
            try:
                if not self._io_round():
                    return
            except Exception as e:  # never leave a caller waiting: end what is held, start afresh
                try:
                    self._restart(f"sandbox failure: {type(e).__name__}: {e}")
                except Exception:  # even the restart failed: end what is held; the next sample starts a new jail
                    with self._cond:
                        self._fail_all(f"sandbox failure: {type(e).__name__}: {e}")
                    self.proc = None

    def _io_round(self) -> bool:
        """One turn of the I/O thread; False when the worker is closing."""
        with self._cond:
            if self._closing:
                return False
            line = list(self._line)
        if line and self.proc is None:
            try:
                self.start()
            except Exception as e:  # SandboxUnavailable & co: every held sample reports it
                with self._cond:
                    self._fail_all(f"sandbox failure: {type(e).__name__}: {e}")
                return True
        now = time.monotonic()
        try:
            for job in line:
                if not job.sent:
                    self._send(job.request)
                    job.sent = True
        except OSError as e:
            self._restart(f"sandbox worker unavailable: {e}")
            return True
        head = line[0] if line else None
        if head is not None and not head.started:
            head.started = head.progress = now
        self._pump(head, now)
        return True

    def _pump(self, head: _Job | None, now: float) -> None:
        """One round: wait for something (or a deadline), then read what came, watch and report the running one."""
        ctrl_fd = self.proc.stdout.fileno() if self.proc is not None else -1
        wait = [self._wake_r] + ([ctrl_fd] if ctrl_fd >= 0 else [])
        timeout = None
        if head is not None:
            lim = head.request["limits"]
            deadline = head.started + lim["sample_s"] + 5.0
            if now >= deadline:
                self._restart("sandbox worker did not finish in time; restarted", host_timeout=True)
                return
            # Per-test wall limit enforced from outside (a candidate can swallow the harness's SIGALRM): stop the
            # sample when no record has arrived for time_s (+ slack); the load step counts as one test.
            if not head.stopped and now - head.progress > lim["time_s"] + 0.25:
                self._read_results(head)
                if now - head.progress > lim["time_s"] + 0.25:
                    head.ex.stalled = True
                    self._stop(head)
            # Without an early-stop hook, records are only drained every 20 ms (the pipe holds them meanwhile).
            if head.on_record is not None and not head.ex.overflow:
                wait.append(self.res_fds[head.slot])
            timeout = min(deadline - now, 0.05 if head.on_record is not None else 0.02)
        ready, _, _ = select.select(wait, [], [], timeout)
        if self._wake_r in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        if head is not None:
            self._read_results(head)
        if ctrl_fd in ready:
            chunk = os.read(ctrl_fd, 1 << 16)
            if not chunk:
                if head is not None:
                    self._restart(f"sandbox worker died ({self._exit_status()}); restarted")
                else:  # died while idle: the next sample starts a fresh one
                    self._stop_process()
                return
            self._ctrl += chunk
            with self._cond:
                held = {job.sid: job for job in self._line}
            while len(self._ctrl) >= 4 and len(self._ctrl) >= 4 + struct.unpack_from(">I", self._ctrl)[0]:
                n = struct.unpack_from(">I", self._ctrl)[0]
                msg, self._ctrl = _decode(self._ctrl[4 : 4 + n]), self._ctrl[4 + n :]
                if isinstance(msg, dict) and msg.get("sid") in held:  # the running sample, or the next if quick
                    held[msg["sid"]].ex.final = msg
        while head is not None and head.ex.final is not None:
            self._finish(head)
            with self._cond:
                head = self._line[0] if self._line else None

    def _stop(self, job: _Job) -> None:
        job.stopped = True
        try:
            self._send({"stop": job.sid})
        except OSError:
            pass  # a dead worker shows up on its control pipe

    def _read_results(self, job: _Job) -> None:
        """Read what is in ``job``'s result pipe now; parse its frames."""
        cap = self.params.max_output_bytes
        fd = self.res_fds[job.slot]
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            job.received += len(chunk)
            if job.received > cap and not job.ex.overflow:
                job.ex.overflow = True
                self._stop(job)
            if not job.ex.overflow:
                job.buf += chunk
                self._parse_results(job)

    def _parse_results(self, job: _Job) -> None:
        """Take the whole frames off ``job.buf`` (by offset: cutting the buffer after each frame copied the rest of it,
        quadratic in the records of one read)."""
        cap = self.params.max_output_bytes
        ex, buf, sid = job.ex, job.buf, job.sid
        at, end, seen = 0, len(buf), False
        while end - at >= 4:
            n = struct.unpack_from(">I", buf, at)[0]
            if n > cap + 4096:
                ex.overflow = True
                job.buf = b""
                return
            if end - at < 4 + n:
                break
            rec = _decode(buf[at + 4 : at + 4 + n])
            at += 4 + n
            if not isinstance(rec, dict) or rec.get("sid") != sid:
                continue
            seen = True
            if "load" in rec:
                if ex.load is None:  # "compiled", sent before any code of the candidate runs: a later one may be forged
                    ex.rss0_kb = float(rec.get("rss0_kb", 0) or 0)
                ex.load = rec
            elif isinstance(rec.get("i"), int) and rec["i"] not in ex.records:
                ex.records[rec["i"]] = rec
                if job.on_record is not None and not job.stopped and job.on_record(rec):
                    self._stop(job)
        job.buf = buf[at:] if at else buf
        if seen:
            job.progress = time.monotonic()

    def _finish(self, job: _Job) -> None:
        """The zygote reported ``job`` over: everything of it is dead, so all it wrote is in its pipe. Read that to
        the end (the pipe is free for another sample only after), hand the result over, start the next clock."""
        self._read_results(job)
        self.served += 1
        with self._cond:
            self._line.remove(job)
            self._cond.notify_all()
        job.done.set()
