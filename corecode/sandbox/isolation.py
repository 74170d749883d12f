"""Command lines that start one zygote inside its jail: bubblewrap (default), ``unshare``, or nothing.

bwrap jail: new user, PID, network, IPC, UTS, cgroup and mount namespaces; the filesystem is an empty tmpfs root with
only the interpreter binary, its standard library and the shared libraries it links against bound read-only, plus a
private size-capped tmpfs scratch (``/tmp``); no capabilities; no nested user namespaces; dies with the host. When the
host runs as root the whole thing runs as an unprivileged host uid (worker i of the pool's own block of uids from
``uid_base``, :func:`claim_uid_block`), so RLIMIT_NPROC holds and host files are guarded by ordinary permissions too.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import shutil
import struct
import subprocess
import tempfile
import warnings
from pathlib import Path

from corecode.sandbox.config import SandboxParams

SCRATCH = "/tmp"
WIPED = (SCRATCH, "/dev/shm")  # writable places inside the bwrap jail, emptied after every sample


class SandboxUnavailable(RuntimeError):
    """The requested isolation cannot be set up on this machine (message says what is missing)."""


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str) -> tuple[str, tuple[str, ...]]:
    """(real interpreter path, directories to bind read-only) for ``python``: stdlib + linked shared libraries."""
    exe = shutil.which(python) or python
    if not os.path.exists(exe):
        raise SandboxUnavailable(f"sandbox.python: interpreter {python!r} not found")
    real = os.path.realpath(exe)
    probe = subprocess.run(
        [real, "-I", "-S", "-c", "import os, sys; print(os.path.dirname(os.__file__)); print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(f"sandbox.python: {real} does not run: {probe.stderr.strip()}")
    stdlib = probe.stdout.splitlines()[0]
    dirs = {stdlib}
    targets = [real] + [str(p) for p in Path(stdlib, "lib-dynload").glob("*.so")]
    for line in _linked_libraries(real, targets).splitlines():
        m = re.search(r"(/\S+\.so[^\s]*)", line)
        if m and os.path.exists(m.group(1)):
            dirs.add(os.path.dirname(os.path.realpath(m.group(1))))
            dirs.add(os.path.dirname(m.group(1)))
    return real, tuple(sorted(dirs))


def _elf_interpreter(path: str) -> str | None:
    """The program interpreter (``PT_INTERP``, the dynamic loader) of a 64-bit little-endian ELF file, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":
                return None
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                entry = f.read(phentsize)
                if struct.unpack_from("<I", entry, 0)[0] == 3:  # PT_INTERP
                    offset, size = struct.unpack_from("<Q", entry, 8)[0], struct.unpack_from("<Q", entry, 32)[0]
                    f.seek(offset)
                    return f.read(size).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _linked_libraries(real: str, targets: list[str]) -> str:
    """``ldd``'s listing of ``targets`` (``real`` first): the loader of ``real`` in trace mode (what ldd runs) once,
    on ``real`` with the other targets preloaded, so it lists their libraries too (the targets' own lines left out);
    where that cannot be used, one trace per file, all at once. One process instead of one per extension module
    (47 here) is most of a pool's start on a 2-core machine."""
    loader = _elf_interpreter(real)
    if loader is None or not os.access(loader, os.X_OK):
        return subprocess.run(["ldd", *targets], capture_output=True, text=True, timeout=30).stdout
    env = {**os.environ, "LD_TRACE_LOADED_OBJECTS": "1"}
    preload = targets[1:]
    if not any(c in t for t in preload for c in " :"):  # LD_PRELOAD's separators
        run = subprocess.run([loader, real], capture_output=True, env={**env, "LD_PRELOAD": " ".join(preload)})
        out = run.stdout.decode(errors="replace")
        if run.returncode == 0 and "not found" not in out and "ERROR" not in run.stderr.decode(errors="replace"):
            own = set(preload)
            return "".join(line for line in out.splitlines(True) if line.split(" (", 1)[0].strip() not in own)
    procs = [subprocess.Popen([loader, t], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) for t in targets]
    return "".join(p.communicate(timeout=30)[0].decode(errors="replace") for p in procs)


def _bwrap(params: SandboxParams, zygote_src: str, out_fds: list[int]) -> list[str]:
    if not shutil.which("bwrap"):
        raise SandboxUnavailable("isolation='bwrap' needs bubblewrap: apt-get install bubblewrap")
    real, dirs = interpreter_paths(params.python)
    cmd = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
    ]
    cmd += ["--cap-drop", "ALL", "--clearenv", "--setenv", "PATH", "/usr/bin", "--setenv", "LANG", "C.UTF-8"]
    # Merged-/usr systems: /lib, /lib64, /bin are symlinks into /usr; recreate them so the loader path works.
    bound = set()
    for top in ("/lib", "/lib64", "/bin"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
    for d in dirs:
        real_d = os.path.realpath(d)
        if any(real_d == b or real_d.startswith(b + "/") for b in bound):
            continue
        if os.path.islink(d) or any(d.startswith(t + "/") for t in ("/lib", "/lib64") if os.path.islink(t)):
            d = real_d
        cmd += ["--ro-bind", real_d, d]
        bound.add(real_d)
    cmd += ["--ro-bind", real, real]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--size", str(params.scratch_size_mb * 1024 * 1024), "--tmpfs", SCRATCH, "--chdir", SCRATCH]
    # /dev/shm (POSIX semaphores, multiprocessing) gets its own small tmpfs, wiped after each sample like /tmp;
    # everything else is read-only, so nothing written by one sample outlives it for the next.
    cmd += ["--size", str(16 * 1024 * 1024), "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/"]
    cmd += [real, "-I", "-S", "-B", "-c", zygote_src, ",".join(map(str, out_fds)), *WIPED]
    return cmd


def zygote_command(params: SandboxParams, zygote_src: str, out_fds: list[int], scratch: str) -> list[str]:
    """argv that starts a zygote under ``params.isolation``; its samples write test records to ``out_fds``."""
    if params.isolation == "bwrap":
        return _bwrap(params, zygote_src, out_fds)
    real, _ = interpreter_paths(params.python)
    py = [real, "-I", "-S", "-B", "-c", zygote_src, ",".join(map(str, out_fds)), scratch]
    if params.isolation == "unshare":
        if not shutil.which("unshare"):
            raise SandboxUnavailable("isolation='unshare' needs util-linux unshare")
        return ["unshare", "--user", "--pid", "--net", "--ipc", "--uts", "--mount", "--fork", "--kill-child", *py]
    warnings.warn(
        "sandbox isolation='none': untrusted code runs with only rlimits, in the host's filesystem and network. "
        "Use it for debugging only.",
        RuntimeWarning,
        stacklevel=3,
    )
    return py


# As root a pool's workers run as a block of host uids that no other live pool on the host uses: RLIMIT_NPROC counts a
# uid's processes host-wide, so pools sharing uids (two pipelines, the sandboxes of several DDP ranks) would spend
# each other's max_processes. Worker i of the pool holding block b runs as uid_base + b * UID_BLOCK + i; a pool holds
# its block by an flock on a file named after it, which the kernel drops when the pool closes it or its process ends.
UID_BLOCK = 256  # SandboxParams.workers <= 256
UID_BLOCKS = 64


def claim_uid_block(uid_base: int, lock_dir: str | None = None) -> tuple[int, int | None]:
    """(first uid of a block no other live pool holds, the descriptor that holds it; close it to give the block
    back). When every block is held: ``uid_base`` shared with the other pools, and no descriptor."""
    lock_dir = lock_dir or ("/run/lock" if os.access("/run/lock", os.W_OK) else tempfile.gettempdir())
    for block in range(UID_BLOCKS):
        base = uid_base + block * UID_BLOCK
        fd = os.open(os.path.join(lock_dir, f"corecode-sandbox-uid-{base}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return base, fd
    warnings.warn(
        f"sandbox: all {UID_BLOCKS} uid blocks are held by other pools on this host; sharing uids from {uid_base}",
        RuntimeWarning,
        stacklevel=2,
    )
    return uid_base, None


def run_as(params: SandboxParams, worker: int) -> dict:
    """Popen keyword arguments that drop root to an unprivileged per-worker uid (no-op when not root)."""
    if os.geteuid() != 0:
        return {}
    uid = params.uid_base + worker
    return {"user": uid, "group": uid, "extra_groups": []}
