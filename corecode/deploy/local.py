"""The share-nothing deployment on one machine, for the end-to-end test (tests/deploy/test_share_nothing.py) and the
transfer benchmark (benchmarks/share_nothing_transfers.py): the services of deploy/services.sh in a state directory
of their own on free ports, a bare git origin holding a snapshot of a working tree, the deployments of prefect.yaml,
and Prefect workers each in its own directory and process group.

Only the standard library at import: a caller sets the services' environment before anything imports Prefect.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SERVICES = REPO / "deploy" / "services.sh"
BIN = Path(sys.executable).parent
GIT_IDENT = ["-c", "user.name=corecode", "-c", "user.email=corecode@localhost"]  # the snapshot's commits, anywhere


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the OS chooses; the socket is closed, so a server started next can bind it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_run_services() -> str | None:
    """None when deploy/services.sh can start here, else why not."""
    if shutil.which("sshd") or Path("/usr/sbin/sshd").exists():
        if list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
            return None
    if os.geteuid() == 0 and shutil.which("apt-get"):
        return None
    return "needs PostgreSQL and openssh-server (Debian packages), or root with apt to install them"


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a services.env (comments and blank lines skipped)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def snapshot_origin(
    dest: Path, edit_params: Callable[[Path], None] | None = None, repo: Path = REPO
) -> tuple[str, Path]:
    """A bare git origin ``dest/origin.git`` holding ``repo``'s working tree (tracked and untracked-not-ignored
    files) as one commit on ``main``, after ``edit_params(<snapshot>/params.yaml)``; returns (origin, snapshot)."""
    src = dest / "src"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        if (repo / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, src / rel)
    if edit_params:
        edit_params(src / "params.yaml")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=src, check=True)
    subprocess.run(["git", "add", "-A"], cwd=src, check=True)
    subprocess.run(["git", *GIT_IDENT, "commit", "-q", "-m", "snapshot"], cwd=src, check=True)
    origin = dest / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(origin)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(origin)], cwd=src, check=True)
    return str(origin), src


@contextlib.contextmanager
def services(git_url: str, extra_env: dict[str, str] | None = None, keep: bool = False) -> Iterator[dict[str, Any]]:
    """deploy/services.sh's services on free ports in a fresh state directory under /tmp (the postgres user must be
    able to enter it), with ``git_url``'s ``main`` as the code; stopped (and the directory removed unless ``keep``)
    on the way out, also when starting them failed.

    Yields ``state`` (the directory), ``env`` (services.sh's environment: pass it to its other commands) and
    ``worker_env`` (this process's environment with services.env, for workers and in-process flows).
    """
    state = Path(tempfile.mkdtemp(prefix="corecode-services-", dir="/tmp"))
    env = dict(os.environ)
    env.update(
        CORECODE_SERVICES_DIR=str(state),
        CORECODE_PG_PORT=str(free_port()),
        CORECODE_MLFLOW_PORT=str(free_port()),
        CORECODE_PREFECT_PORT=str(free_port()),
        CORECODE_SSH_PORT=str(free_port()),
        CORECODE_GIT_URL=git_url,
        CORECODE_GIT_BRANCH="main",
        **(extra_env or {}),
    )
    try:
        subprocess.run(["bash", str(SERVICES), "start"], env=env, check=True, timeout=1200)
        worker_env = {**os.environ, **read_env_file(state / "services.env")}
        worker_env.update(
            PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
            PREFECT_WORKER_QUERY_SECONDS="2",
            PREFECT_WORKER_PREFETCH_SECONDS="2",
        )
        worker_env.pop("CORECODE_PARENT_RUN_ID", None)
        yield {"state": state, "env": env, "worker_env": worker_env}
    finally:
        subprocess.run(["bash", str(SERVICES), "stop"], env=env, timeout=300)
        if not keep:
            shutil.rmtree(state, ignore_errors=True)


def deploy(src: Path, worker_env: dict[str, str], names: list[str]) -> None:
    """``prefect deploy`` the named deployments of ``src``'s prefect.yaml; RuntimeError with Prefect's output if not."""
    cmd = [str(BIN / "prefect"), "--no-prompt", "deploy", *(a for n in names for a in ("--name", n))]
    res = subprocess.run(cmd, cwd=src, env=worker_env, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"prefect deploy {' '.join(names)} failed:\n{res.stdout}{res.stderr}")


def start_worker(worker_env: dict[str, str], wdir: Path, pool: str, limit: int, log: Path) -> subprocess.Popen:
    """``prefect worker start`` in ``wdir`` (its ``CORECODE_WORKER_DIR``: its clone and checkout live there), in its
    own process group, output appended to ``log``."""
    wdir.mkdir(parents=True, exist_ok=True)
    env = {**worker_env, "CORECODE_WORKER_DIR": str(wdir)}
    cmd = [str(BIN / "prefect"), "worker", "start", "--pool", pool, "--limit", str(limit), "--name", wdir.name]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=wdir, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop_worker(proc: subprocess.Popen, grace_s: float = 60) -> None:
    """SIGTERM the worker's process group; SIGKILL it if it outlives ``grace_s`` (a worker busy shutting down its
    runs on a loaded machine)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
