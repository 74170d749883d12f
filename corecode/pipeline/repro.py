"""``corecode repro``: the DVC pipeline with its independent stages running side by side.

``dvc repro`` runs one stage at a time. DVC's documented way to run independent branches in parallel is several
``dvc repro --single-item <stage>`` processes: each releases the repository lock while its command runs and waits
for it (``--wait-for-lock``) to record its outputs and its dvc.lock entry. DVC does not schedule them itself, and the
Prefect flow runs one stage at a time, so this module does: it starts each stage once every stage it depends on is
done, up to ``jobs`` at once, ties in dvc.yaml order. It starts only the stages ``dvc status`` reports changed and
those downstream of them (:func:`stages_to_run`); a stage no change reaches is not started at all.

Like the Prefect flow, it opens one MLflow parent run for the stages it runs (when params.yaml's ``tracking`` is
enabled) and hands it to them in ``CORECODE_PARENT_RUN_ID``. Every stage gets the same number of torch threads
(``OMP_NUM_THREADS``) whatever runs beside it, so what a stage computes does not depend on the schedule. When a stage
fails no new stage starts; the running ones finish and keep their outputs, and the error names the failed stage and
what did not start.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from corecode.pipeline.dag import DvcStatusFailed, stage_env, stage_graph, stage_order, stages_changed
from corecode.tracking.runs import parent_run

POLL_S = 0.2
TAIL_LINES = 40  # lines of a failed stage's output that its error repeats


@dataclass
class StageRun:
    """One ``dvc repro --single-item`` process: its stage, when it started, how long it ran and its last lines."""

    stage: str
    proc: subprocess.Popen
    start: float
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    seconds: float = 0.0
    reader: threading.Thread | None = None


class ReproFailed(RuntimeError):
    """A stage's ``dvc repro`` exited non-zero: which stage, its exit code, its last lines and what never started."""

    def __init__(self, stage: str, returncode: int, tail: list[str], not_started: list[str]):
        self.stage, self.returncode, self.tail, self.not_started = stage, returncode, tail, not_started
        rest = f"; not started: {', '.join(not_started)}" if not_started else ""
        super().__init__(f"stage {stage!r} failed (dvc repro exit {returncode}){rest}")


def _last_frame(segment: bytes) -> str:
    r"""A progress bar redraws itself with ``\r`` within one line: keep what it showed last."""
    return segment.rsplit(b"\r", 1)[-1].decode(errors="replace").rstrip()


def _relay(run: StageRun, width: int, echo: Callable[[str], None]) -> None:
    """Echo a stage's output line by line, prefixed with its name, and keep its tail for an error message."""
    assert run.proc.stdout is not None
    for raw in run.proc.stdout:
        line = _last_frame(raw.rstrip(b"\n"))
        if line:
            run.tail.append(line)
            echo(f"{run.stage:<{width}} | {line}")


def _start(
    stage: str, repo_dir: Path, env: dict[str, str], width: int, echo: Callable[[str], None], force: bool = False
) -> StageRun:
    flags = ["--single-item", "--force"] if force else ["--single-item"]
    cmd = [sys.executable, "-m", "dvc", "--wait-for-lock", "repro", *flags, stage]
    proc = subprocess.Popen(cmd, cwd=repo_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    run = StageRun(stage, proc, time.monotonic())
    run.reader = threading.Thread(target=_relay, args=(run, width, echo), daemon=True)
    run.reader.start()
    echo(f"{stage:<{width}} | started")
    return run


def _finish(run: StageRun) -> int:
    run.seconds = time.monotonic() - run.start
    if run.reader is not None:
        run.reader.join(timeout=5)  # a child the stage left running may hold the pipe open
    return run.proc.returncode


def repro(
    repo_dir: str | Path,
    targets: list[str] | None = None,
    jobs: int = 1,
    threads: int = 1,
    echo: Callable[[str], None] = print,
    force: bool = False,
) -> dict[str, float]:
    """Reproduce the pipeline at ``repo_dir`` (or ``targets`` and what they depend on), ``jobs`` stages at a time,
    each with ``threads`` torch threads; returns ``{stage: seconds}`` in the order the stages ended.

    Only the stages of :func:`stages_to_run` start, and each one's ``dvc repro`` still decides whether it runs;
    ``force`` runs every selected stage (``dvc repro --force``). Raises :class:`ReproFailed` after the running stages
    have finished if any stage failed, and ``ValueError`` for an unknown target or ``jobs``/``threads`` below 1.
    """
    if jobs < 1 or threads < 1:
        raise ValueError(f"jobs and threads must be at least 1 (got jobs={jobs}, threads={threads})")
    root = Path(repo_dir).resolve()
    graph = stage_graph(root)
    pending = [run.stage for run in stages_to_run(root, targets, force, graph)]
    if not pending:
        echo("every stage is up to date (dvc status)")
        return {}
    with parent_run(root, orchestrator="corecode-repro") as (parent, uri):
        # the stages' MLflow runs nest under the parent (corecode.tracking.runs)
        env = stage_env(parent, uri if parent else None, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        return _run_stages(root, graph, pending, jobs, env, echo, force)


class ToRun(NamedTuple):
    """A stage :func:`repro` starts: what ``dvc status`` says changed in it, and the started stages it waits for."""

    stage: str
    changed: tuple[str, ...]
    after: tuple[str, ...]


def stages_to_run(
    repo_dir: str | Path,
    targets: list[str] | None = None,
    force: bool = False,
    graph: dict[str, list[str]] | None = None,
) -> list[ToRun]:
    """The stages a :func:`repro` starts, in the order it would start them one at a time.

    A stage starts when ``dvc status`` reports it changed, or after a stage it depends on. In the second case its own
    ``dvc repro`` runs its command only if what ran before it changed its inputs, which no one can know beforehand.
    When ``dvc status`` itself fails, or with ``force``, every selected stage starts.
    """
    root = Path(repo_dir).resolve()
    graph = graph if graph is not None else stage_graph(root)
    order = stage_order(root, targets, graph=graph)
    if force:
        return [ToRun(stage, ("forced",), ()) for stage in order]
    try:
        changed = stages_changed(root, order)
    except DvcStatusFailed as e:
        return [ToRun(stage, (f"dvc status failed (exit {e.returncode})",), ()) for stage in order]
    runs: dict[str, ToRun] = {}
    for stage in order:  # dependency order: a stage's upstream stages are decided before it
        after = tuple(u for u in graph[stage] if u in runs)
        if stage in changed or after:
            runs[stage] = ToRun(stage, tuple(_what_changed(changed.get(stage, []))), after)
    return list(runs.values())


def _what_changed(entries: list) -> list[str]:
    """``dvc status --json``'s entries of one stage (``{"changed deps": {...}}``, ``"always changed"``) as words."""
    return [key for entry in entries for key in ([entry] if isinstance(entry, str) else entry)]


def _run_stages(
    root: Path,
    graph: dict[str, list[str]],
    pending: list[str],
    jobs: int,
    env: dict[str, str],
    echo: Callable[[str], None],
    force: bool = False,
) -> dict[str, float]:
    """Start each of ``pending`` once its upstream stages are done, ``jobs`` at a time; see :func:`repro`."""
    wanted = set(pending)
    width = max(map(len, pending), default=0)
    running: list[StageRun] = []
    done: dict[str, float] = {}
    failed: list[StageRun] = []
    try:
        while pending or running:
            while not failed and len(running) < jobs:
                ready = [s for s in pending if all(u in done for u in graph[s] if u in wanted)]
                if not ready:
                    break
                pending.remove(ready[0])
                running.append(_start(ready[0], root, env, width, echo, force))
            if not running:  # only after a failure: what is left waits on it
                break
            time.sleep(POLL_S)
            for run in [r for r in running if r.proc.poll() is not None]:
                running.remove(run)
                if _finish(run) == 0:
                    done[run.stage] = run.seconds
                    echo(f"{run.stage:<{width}} | done in {run.seconds:.0f} s")
                else:
                    failed.append(run)
                    echo(f"{run.stage:<{width}} | FAILED (exit {run.proc.returncode}) after {run.seconds:.0f} s")
    except KeyboardInterrupt:
        for run in running:  # DVC stops a stage's command on SIGINT and leaves dvc.lock as it was
            run.proc.send_signal(signal.SIGINT)
        for run in running:
            run.proc.wait()
            _finish(run)
        raise
    if failed:
        raise ReproFailed(failed[0].stage, failed[0].proc.returncode, list(failed[0].tail), pending)
    return done
