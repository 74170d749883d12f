"""Host side of one pool worker: starts a jailed zygote, sends it a sample, collects what comes back.

A worker that dies, hangs or floods is killed and restarted; the sample it was running still gets a result.
"""

from __future__ import annotations

import errno
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
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from corecode.sandbox.cgroup import MemoryCgroup
from corecode.sandbox.config import SandboxParams
from corecode.sandbox.isolation import SandboxUnavailable, run_as, zygote_command

_ZYGOTE_SRC = Path(__file__).with_name("zygote.py").read_text()
_sids = itertools.count(1)


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


class Worker:
    def __init__(self, params: SandboxParams, index: int, spawner=None):
        self.params = params
        self.spawner = spawner
        self.index = index
        self.proc: subprocess.Popen | None = None
        self.res_fd = -1
        self.scratch: str | None = None
        self.cgroup: MemoryCgroup | None = None
        self.served = 0

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
        r, w = os.pipe()
        cmd = zygote_command(p, _ZYGOTE_SRC, w, self.scratch or "/tmp")
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(w,),
                start_new_session=True,
                cwd="/",
                **drop,
            )
        finally:
            os.close(w)
        self.res_fd = r
        os.set_blocking(r, False)
        try:  # room for a whole sample's records, so the host need not wake up for each one
            fcntl.fcntl(r, 1031, min(1 << 20, max(1 << 16, self.params.max_output_bytes)))  # F_SETPIPE_SZ
        except OSError:
            pass
        ready = self._read_control(time.monotonic() + 30)
        if not ready or not ready.get("ready"):
            try:
                self.proc.wait(timeout=2)
                err = self.proc.stderr.read(4000).decode(errors="replace")
            except subprocess.TimeoutExpired:
                err = "no ready message within 30s"
            self.close()
            raise SandboxUnavailable(f"sandbox worker {self.index} did not start ({p.isolation}): {err.strip()}")
        self.proc.stderr.close()
        if p.cgroup:
            self.cgroup = MemoryCgroup((p.memory_limit_mb + p.scratch_size_mb + 128) * 1024 * 1024)
            try:
                tree = [self.proc.pid] + [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
            except psutil.Error:
                tree = [self.proc.pid]
            for pid in tree:
                self.cgroup.add(pid)

    def close(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if f and not f.closed:
                    f.close()
            self.proc = None
        if self.res_fd >= 0:
            os.close(self.res_fd)
            self.res_fd = -1
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

    def restart(self) -> None:
        self.close()
        self.start()

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
        """Run one sample. ``on_record(rec) -> bool`` may ask to stop early by returning True."""
        if self.proc is None:
            self.start()
        sid = next(_sids)
        request = dict(request, sid=sid)
        ex = Execution()
        cap = self.params.max_output_bytes
        try:
            self._send(request)
        except OSError as e:
            ex.error = f"sandbox worker unavailable: {e}"
            self.restart()
            return ex
        deadline = time.monotonic() + request["limits"]["sample_s"] + 5.0
        # Per-test wall limit enforced from outside (a candidate can swallow the harness's SIGALRM): stop the
        # sample when no record has arrived for time_s (+ slack); the load step counts as one test.
        per_test = request["limits"]["time_s"] + 0.25
        progress = [time.monotonic(), 0]
        ctrl_fd = self.proc.stdout.fileno()
        ctrl, res = b"", b""
        received, stopped = 0, False

        def parse_results() -> None:
            nonlocal res, stopped
            while len(res) >= 4:
                n = struct.unpack(">I", res[:4])[0]
                if n > cap + 4096:
                    ex.overflow = True
                    res = b""
                    return
                if len(res) < 4 + n:
                    return
                body, res = res[4 : 4 + n], res[4 + n :]
                try:
                    rec = json.loads(body)
                except ValueError:
                    continue
                if not isinstance(rec, dict) or rec.get("sid") != sid:
                    continue
                progress[0] = time.monotonic()
                if "load" in rec:
                    ex.load = rec
                elif isinstance(rec.get("i"), int) and rec["i"] not in ex.records:
                    ex.records[rec["i"]] = rec
                    if on_record is not None and not stopped and on_record(rec):
                        stopped = True
                        self._send({"stop": sid})

        while ex.final is None:
            left = deadline - time.monotonic()
            if left <= 0:
                ex.host_timeout = True
                ex.error = "sandbox worker did not finish in time; restarted"
                self.restart()
                return ex
            # Without an early-stop hook, records are only drained every 20 ms (the pipe holds them meanwhile).
            if on_record is None:
                ready, _, _ = select.select([ctrl_fd], [], [], min(left, 0.02))
                ready = ready + [self.res_fd]
            else:
                ready, _, _ = select.select([ctrl_fd, self.res_fd], [], [], min(left, 0.05))
            if self.res_fd in ready:
                try:
                    chunk = os.read(self.res_fd, 1 << 16)
                except BlockingIOError:
                    chunk = b""
                received += len(chunk)
                if received > cap and not ex.overflow:
                    ex.overflow = True
                    self._send({"stop": sid})
                if not ex.overflow:
                    res += chunk
                    parse_results()
            if not stopped and time.monotonic() - progress[0] > per_test and ex.final is None:
                ex.stalled = stopped = True
                self._send({"stop": sid})
            if ctrl_fd in ready:
                chunk = os.read(ctrl_fd, 1 << 16)
                if not chunk:
                    ex.error = "sandbox worker died; restarted"
                    self.restart()
                    return ex
                ctrl += chunk
                while len(ctrl) >= 4 and len(ctrl) >= 4 + struct.unpack(">I", ctrl[:4])[0]:
                    n = struct.unpack(">I", ctrl[:4])[0]
                    msg, ctrl = json.loads(ctrl[4 : 4 + n]), ctrl[4 + n :]
                    if msg.get("sid") == sid:
                        ex.final = msg
        # Everything of this sample is dead now; whatever it wrote is already in the pipe.
        while not ex.overflow:
            try:
                chunk = os.read(self.res_fd, 1 << 16)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
                raise
            if not chunk:
                break
            received += len(chunk)
            if received > cap:
                ex.overflow = True
                break
            res += chunk
            parse_results()
        if ex.overflow:  # drain and drop the rest so the next sample starts clean
            try:
                while os.read(self.res_fd, 1 << 16):
                    pass
            except BlockingIOError:
                pass
        self.served += 1
        return ex
