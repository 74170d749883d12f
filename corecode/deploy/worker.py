"""One DVC stage in a worker's own checkout, sharing nothing with other workers but the DVC remote, the MLflow
server and the git server.

:func:`run_stage` checks out the flow's commit in ``<worker dir>/checkout`` (a clone of the git URL, fetched as
needed), writes the ``dvc.lock`` entries of the stages before it (handed over by the flow), brings in the outputs
those entries record that the stage reads, runs ``dvc repro --single-item <stage>``, pushes the stage's outputs and
returns its new ``dvc.lock`` entry with what the transfers cost.

Two kinds of output travel differently:

- cached outputs (DVC's default) with ``dvc pull <path>`` / ``dvc push <stage>``;
- ``cache: false`` outputs (reports, the params sections, training logs), which ``dvc push`` leaves out, are copied
  through the remote's own filesystem (DVC's fsspec filesystem for that remote, e.g. dvc-ssh) to
  ``<remote>/corecode-uncached/<md5>``: content-addressed by the md5 dvc.lock records, so a copy is written once and
  ``dvc status`` checks what came back. Hand-written because DVC has no transfer for outputs it does not cache.

GRPO's resumable checkpoints go the same way: the worker sets ``CORECODE_RUN_STATE_SYNC`` for the stage process, and
``corecode.training.checkpointing.save_checkpoint`` calls :func:`push_checkpoint` after each save, which copies the
new ``step-N`` directory to ``<remote>/corecode-run-state/<run key>/<stage>/<checkpoint dir>/``. Before the stage
runs, :func:`restore_run_state` copies back what an earlier attempt (on any worker) pushed, so the trainer resumes
from it. The resumed run must be recognised as the same run: its fingerprint identifies the start models by the md5s
dvc.lock records (``CORECODE_START_MODELS_ID``), not by file times, which differ on every host.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

REMOTE = (
    "corecode"  # the remote a worker's checkout pushes to (in .dvc/config.local; the committed config keeps its own)
)
UNCACHED_PREFIX = "corecode-uncached"
RUN_STATE_PREFIX = "corecode-run-state"
SYNC_ENV = "CORECODE_RUN_STATE_SYNC"  # "<remote prefix>" of the running stage's checkpoints
START_ID_ENV = "CORECODE_START_MODELS_ID"  # content identity of the stage's inputs (dvc.lock md5s)
PUSH_LOG_ENV = "CORECODE_RUN_STATE_PUSH_LOG"  # JSON lines {step, seconds, bytes}, one per checkpoint push
# A stage command exiting 2 is a usage/input error (corecode's `error:` lines): retrying cannot fix it.
PERMANENT_EXIT = "exited with 2"


class ServiceUnavailable(RuntimeError):
    """A shared service does not answer (connection refused, timeout): transient, worth a retry."""


class StageError(RuntimeError):
    """The stage's command failed; ``permanent`` when it reported bad input (exit 2)."""

    def __init__(self, stage: str, message: str, permanent: bool):
        self.stage, self.permanent = stage, permanent
        super().__init__(f"stage {stage!r}: {message}")


# ------------------------------------------------------------------------------------------------------ services


def service_endpoints(env: dict[str, str] | None = None, git_url: str | None = None) -> list[tuple[str, str]]:
    """``(service name, URL)`` of each network service a stage needs, from the worker's environment."""
    env = os.environ if env is None else env
    found = []
    if env.get("MLFLOW_TRACKING_URI", "").startswith(("http://", "https://")):
        found.append(("MLflow tracking server", env["MLFLOW_TRACKING_URI"]))
    if env.get("CORECODE_DVC_REMOTE_URL", "").startswith(("ssh://", "http://", "https://")):
        found.append(("DVC remote (SSH server)", env["CORECODE_DVC_REMOTE_URL"]))
    if git_url and git_url.startswith(("ssh://", "http://", "https://", "git://")):
        found.append(("git server", git_url))
    return found


def check_services(endpoints: list[tuple[str, str]], timeout: float = 5.0) -> None:
    """Open a TCP connection to each service; the first that does not answer raises :class:`ServiceUnavailable`
    naming it (before any output is touched, so the message says what is down, not what failed next)."""
    default_ports = {"ssh": 22, "http": 80, "https": 443, "git": 9418}
    for name, url in endpoints:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or default_ports.get(parts.scheme, 22)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as e:
            raise ServiceUnavailable(
                f"{name} at {host}:{port} is unreachable ({e.strerror or e}): is it running?"
            ) from e


# ------------------------------------------------------------------------------------------------------ checkout


def _git(args: list[str], cwd: Path) -> str:
    res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ServiceUnavailable(f"git {' '.join(args)} in {cwd} failed: {res.stderr.strip()[-500:]}")
    return res.stdout.strip()


def checkout(worker_dir: str | Path, git_url: str, commit: str, name: str = "checkout") -> Path:
    """``<worker_dir>/<name>`` at ``commit`` of ``git_url`` (cloned once, fetched when the commit is new), with the
    DVC remote of the environment (``CORECODE_DVC_REMOTE_URL``, ``..._KEYFILE``) as its default remote.

    Untracked files git ignores (``data/``, ``.dvc/cache``) stay: they are this worker's cache, and DVC checks every
    output it uses against dvc.lock.
    """
    root = Path(worker_dir) / name
    if not (root / ".git").is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "-q", "--no-checkout", git_url, str(root)], root.parent)
    if subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root, capture_output=True).returncode:
        _git(["fetch", "-q", "origin", commit], root)
    _git(["checkout", "-q", "--force", "--detach", commit], root)
    _git(["clean", "-q", "-fd"], root)
    url = os.environ.get("CORECODE_DVC_REMOTE_URL")
    if url:
        local = [
            "[core]",
            f"    remote = {REMOTE}",
            "    analytics = false",
            f"['remote \"{REMOTE}\"']",
            f"    url = {url}",
        ]
        if os.environ.get("CORECODE_DVC_REMOTE_KEYFILE"):
            local.append(f"    keyfile = {os.environ['CORECODE_DVC_REMOTE_KEYFILE']}")
        (root / ".dvc" / "config.local").write_text("\n".join(local) + "\n")
    return root


def _dvc(args: list[str], root: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``dvc ARGS`` in ``root``, with the SSH remote's host key checked (corecode.deploy.dvc_cli)."""
    cmd = [sys.executable, "-m", "corecode.deploy.dvc_cli", *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)


def _transfer(args: list[str], root: Path) -> None:
    """``dvc pull|push ARGS``; a failure is a service problem (:class:`ServiceUnavailable`) carrying DVC's message."""
    res = _dvc(args, root)
    if res.returncode != 0:
        raise ServiceUnavailable(f"dvc {' '.join(args)} failed: {(res.stdout + res.stderr).strip()[-1500:]}")


@contextlib.contextmanager
def _host_key_is_permanent(stage: str):
    """A refused SSH host key (from DVC's output or asyncssh in this process) fails ``stage`` for good: a retry would
    meet the same server. Other errors pass through as they are."""
    from corecode.deploy.dvc_cli import KNOWN_HOSTS_ENV, is_host_key_error

    try:
        yield
    except Exception as e:
        if isinstance(e, StageError) or not is_host_key_error(f"{type(e).__name__}: {e}"):
            raise
        known = os.environ.get(KNOWN_HOSTS_ENV)
        message = f"the DVC remote's SSH host key is not the one {KNOWN_HOSTS_ENV} ({known}) holds: {e}"
        raise StageError(stage, message, permanent=True) from e


@contextlib.contextmanager
def _repo(root: Path):
    """DVC's Repo of the checkout, opened from inside it: DVC names stages relative to the cwd."""
    from dvc.repo import Repo

    cwd = os.getcwd()
    os.chdir(root)
    try:
        with Repo(".") as repo:
            yield repo
    finally:
        os.chdir(cwd)


def _remote(root: Path):
    """(fsspec filesystem, base path) of the checkout's default DVC remote: the filesystem DVC's wrapper holds (the
    wrapper copies directories only one way)."""
    from corecode.deploy.dvc_cli import check_remote_host_key

    check_remote_host_key()
    with _repo(root) as repo:
        remote = repo.cloud.get_remote()
        return remote.fs.fs, remote.path


def _put_tree(fs, local: Path, dst: str) -> None:
    """Copy a file or directory to ``dst`` on the remote, file by file (the same on every fsspec filesystem)."""
    if local.is_file():
        fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
        fs.put_file(str(local), dst)
        return
    for f in sorted(p for p in local.rglob("*") if p.is_file()):
        target = f"{dst}/{f.relative_to(local).as_posix()}"
        fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
        fs.put_file(str(f), target)


def _get_tree(fs, src: str, local: Path) -> None:
    """Copy a remote file or directory ``src`` to ``local``."""
    if not fs.isdir(src):
        local.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(src, str(local))
        return
    base = src.rstrip("/")
    for f in fs.find(base):
        target = local / Path(f).relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(f, str(target))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0


# ---------------------------------------------------------------------------------------------- outputs and deps


def stage_outputs(root: Path) -> dict[str, list[tuple[str, bool]]]:
    """``{stage: [(output path, cached)]}`` of the checkout's pipeline, as DVC reads it (foreach expanded)."""
    with _repo(root) as repo:
        return {s.addressing: [(o.def_path, o.use_cache) for o in s.outs] for s in repo.index.stages if s.cmd}


def stage_deps(root: Path, stage: str) -> list[str]:
    with _repo(root) as repo:
        (found,) = [s for s in repo.index.stages if s.addressing == stage]
        return [d.def_path for d in found.deps]


def _covers(out: str, dep: str) -> bool:
    """The output ``out`` holds (part of) what the dependency ``dep`` reads."""
    return out == dep or out.startswith(dep.rstrip("/") + "/") or dep.startswith(out.rstrip("/") + "/")


def inputs_of(stage: str, root: Path, lock: dict[str, Any]) -> list[dict[str, Any]]:
    """The outputs recorded in ``lock`` that ``stage`` reads: ``[{path, md5, cached, stage}]``."""
    outs = stage_outputs(root)
    deps = stage_deps(root, stage)
    found = []
    for producer, entry in lock.items():
        cached = dict(outs.get(producer, []))
        for out in entry.get("outs", []):
            if out["path"] in cached and any(_covers(out["path"], d) for d in deps):
                found.append({"path": out["path"], "md5": out["md5"], "cached": cached[out["path"]], "stage": producer})
    return found


def start_models_id(inputs: list[dict[str, Any]]) -> str:
    """Content identity of a stage's inputs: a hash of the md5s dvc.lock records for them."""
    blob = json.dumps(sorted((i["path"], i["md5"]) for i in inputs))
    return hashlib.sha256(blob.encode()).hexdigest()


def pull_inputs(root: Path, inputs: list[dict[str, Any]]) -> dict[str, float]:
    """Bring the stage's inputs into the checkout; returns ``{seconds, bytes}``."""
    start = time.monotonic()
    cached = [i["path"] for i in inputs if i["cached"]]
    if cached:
        _transfer(["pull", *cached], root)
    uncached = [i for i in inputs if not i["cached"]]
    if uncached:
        fs, base = _remote(root)
        for i in uncached:
            local = root / i["path"]
            if local.is_dir():
                shutil.rmtree(local)
            else:
                local.unlink(missing_ok=True)
            local.parent.mkdir(parents=True, exist_ok=True)
            src = f"{base}/{UNCACHED_PREFIX}/{i['md5']}"
            if not fs.exists(src):
                raise StageError(i["stage"], f"{i['path']} ({i['md5']}) is not on the DVC remote", permanent=True)
            _get_tree(fs, src, local)
    return {"seconds": round(time.monotonic() - start, 2), "bytes": sum(_size(root / i["path"]) for i in inputs)}


def push_outputs(root: Path, stage: str, entry: dict[str, Any]) -> dict[str, float]:
    """``dvc push`` the stage's cached outputs, copy its uncached ones (once per md5); returns ``{seconds, bytes}``."""
    start = time.monotonic()
    cached = dict(stage_outputs(root)[stage])
    _transfer(["push", stage], root)
    uncached = [o for o in entry.get("outs", []) if not cached.get(o["path"], True)]
    if uncached:
        fs, base = _remote(root)
        for o in uncached:
            dst = f"{base}/{UNCACHED_PREFIX}/{o['md5']}"
            if fs.exists(dst):
                continue
            tmp = f"{dst}.partial-{os.getpid()}"
            _put_tree(fs, root / o["path"], tmp)
            fs.mv(tmp, dst, recursive=True)
    size = sum(int(o.get("size", 0)) for o in entry.get("outs", []))
    return {"seconds": round(time.monotonic() - start, 2), "bytes": size}


# ------------------------------------------------------------------------------------------------------ run state


def _run_state_base(root: Path, prefix: str) -> tuple[Any, str]:
    fs, base = _remote(root)
    return fs, f"{base}/{RUN_STATE_PREFIX}/{prefix}"


def push_checkpoint(checkpoint_root: str | Path, step_dir: str | Path) -> None:
    """Copy a just-saved ``step-N`` checkpoint (and the run's fingerprint) to the remote's run state (``SYNC_ENV``).

    Written under a temporary name and renamed, so a worker that dies mid-copy leaves nothing a restore would take.
    """
    start = time.monotonic()
    root = Path.cwd()
    rel = Path(checkpoint_root).resolve().relative_to(root)
    fs, base = _run_state_base(root, os.environ[SYNC_ENV])
    dst = f"{base}/{rel}"
    fs.makedirs(dst, exist_ok=True)
    marker = Path(checkpoint_root) / "fingerprint.txt"
    if marker.is_file():
        fs.put_file(str(marker), f"{dst}/fingerprint.txt")
    name = Path(step_dir).name
    tmp = f"{dst}/.partial-{name}"
    if fs.exists(tmp):
        fs.rm(tmp, recursive=True)
    _put_tree(fs, Path(step_dir), tmp)
    if fs.exists(f"{dst}/{name}"):
        fs.rm(f"{dst}/{name}", recursive=True)
    fs.mv(tmp, f"{dst}/{name}", recursive=True)
    keep = {p.name for p in Path(checkpoint_root).glob("step-*")}  # the trainer pruned locally: prune the same
    for old in fs.ls(dst, detail=False):
        if Path(old).name.startswith("step-") and Path(old).name not in keep:
            fs.rm(old, recursive=True)
    if os.environ.get(PUSH_LOG_ENV):  # what the stage's run spent on these pushes (run_stage reports it apart)
        record = {"step": name, "seconds": round(time.monotonic() - start, 2), "bytes": _size(Path(step_dir))}
        with open(os.environ[PUSH_LOG_ENV], "a") as fh:
            fh.write(json.dumps(record) + "\n")


def restore_run_state(root: Path, prefix: str) -> list[str]:
    """Copy the checkpoints an earlier attempt pushed under ``prefix`` into the checkout; returns what came back."""
    fs, base = _run_state_base(root, prefix)
    if not fs.exists(base):
        return []
    restored = []
    for f in fs.find(base):
        rel = Path(f).relative_to(base)
        if any(p.startswith(".partial-") for p in rel.parts):
            continue
        local = root / rel
        local.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(f, str(local))
        restored.append(str(rel))
    return sorted({str(Path(r).parent) for r in restored if Path(r).parent.name.startswith("step-")})


# ---------------------------------------------------------------------------------------------------------- stage


def run_stage(
    stage: str,
    git_url: str,
    commit: str,
    lock: dict[str, Any],
    run_key: str,
    worker_dir: str | Path | None = None,
    parent_run_id: str | None = None,
    log=print,
) -> dict[str, Any]:
    """Run ``stage`` at ``commit`` in this worker's checkout; returns ``{stage, lock, pull, run, push,
    checkpoint_push, restored}`` (``checkpoint_push``: seconds, bytes and count of the checkpoint pushes during the
    run, which ``run`` includes).

    ``lock``: the dvc.lock entries of the stages already run (``{stage: entry}``). ``run_key`` names this pipeline
    run on the remote (its GRPO checkpoints). ``worker_dir``: this worker's own directory (``CORECODE_WORKER_DIR``).
    """
    with _host_key_is_permanent(stage):
        return _run_stage(stage, git_url, commit, lock, run_key, worker_dir, parent_run_id, log)


def _run_stage(stage, git_url, commit, lock, run_key, worker_dir, parent_run_id, log) -> dict[str, Any]:
    from corecode.deploy.dvc_cli import is_host_key_error
    from corecode.pipeline.dag import stage_env

    worker_dir = worker_dir or os.environ.get("CORECODE_WORKER_DIR")
    if not worker_dir:
        raise StageError(stage, "CORECODE_WORKER_DIR is not set: each worker needs its own directory", permanent=True)
    check_services(service_endpoints(git_url=git_url))
    root = checkout(worker_dir, git_url, commit)
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": lock}, sort_keys=False))
    if stage not in stage_outputs(root):
        raise StageError(stage, f"no such stage in dvc.yaml at {commit[:12]}", permanent=True)
    inputs = inputs_of(stage, root, lock)
    pulled = pull_inputs(root, inputs)
    prefix = f"{run_key}/{stage}"
    restored = restore_run_state(root, prefix)
    if restored:
        log(f"{stage}: restored checkpoints {restored} from the remote")
    push_log = Path(worker_dir).resolve() / f"checkpoint-pushes-{stage}.jsonl"
    push_log.unlink(missing_ok=True)
    env = stage_env(
        parent_run_id, **{SYNC_ENV: prefix, START_ID_ENV: start_models_id(inputs), PUSH_LOG_ENV: str(push_log)}
    )
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])  # the commit's code
    start = time.monotonic()
    res = _dvc(["repro", "--single-item", stage], root, env)
    seconds = round(time.monotonic() - start, 2)
    for line in (res.stdout + res.stderr).splitlines()[-30:]:
        log(f"{stage} | {line}")
    if res.returncode != 0:
        out = res.stdout + res.stderr
        check_services(service_endpoints(git_url=git_url))  # a service that went down names itself
        permanent = PERMANENT_EXIT in out or is_host_key_error(out)  # a checkpoint push met a refused host key
        raise StageError(stage, f"dvc repro exited with {res.returncode}:\n{out[-3000:]}", permanent)
    entry = (yaml.safe_load((root / "dvc.lock").read_text()) or {}).get("stages", {}).get(stage)
    if entry is None:
        raise StageError(stage, "dvc repro left no dvc.lock entry", permanent=True)
    pushed = push_outputs(root, stage, entry)
    ckpt = [json.loads(line) for line in push_log.read_text().splitlines()] if push_log.is_file() else []
    return {
        "stage": stage,
        "lock": entry,
        "pull": pulled,
        "run": {"seconds": seconds},
        "push": pushed,
        "checkpoint_push": {  # inside "run": GRPO's resumable checkpoints pushed at each save
            "seconds": round(sum(c["seconds"] for c in ckpt), 2),
            "bytes": sum(c["bytes"] for c in ckpt),
            "count": len(ckpt),
        },
        "restored": restored,
    }
