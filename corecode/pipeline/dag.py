"""The DVC pipeline's stage graph, read through DVC itself: which stages there are, what each waits for, which
differ from dvc.lock, and the environment a stage's ``dvc repro`` runs in.

Shared by ``corecode repro`` (independent stages side by side), the Prefect flows (one task per stage) and the
share-nothing worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from corecode.tracking.runs import PARENT_ENV


class DvcStatusFailed(RuntimeError):
    """``dvc status`` itself failed (a broken dvc.yaml, a lock it could not read), as opposed to reporting changes."""

    def __init__(self, returncode: int, output: str):
        self.returncode, self.output = returncode, output
        super().__init__(f"dvc status exited with {returncode}\n{output[-4000:]}")


def stage_graph(repo_dir: str | Path) -> dict[str, list[str]]:
    """``{stage: [upstream stages]}`` of the DVC pipeline at ``repo_dir``, in dvc.yaml order.

    Read through DVC's own index so that ``foreach``/``matrix`` stages (``evaluate@single_sft``), templating and
    dvc.yaml files in subdirectories resolve exactly as ``dvc repro`` sees them. ``.dvc`` data files are not stages
    to run and are left out.
    """
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    cwd = os.getcwd()
    os.chdir(repo_dir)  # DVC names stages relative to the cwd ("dvc.yaml:train" from elsewhere, "train" here)
    try:
        with Repo(".") as repo:
            index = repo.index
            stages = [s for s in index.stages if s.cmd]
            runnable = {s.addressing for s in stages}
            return {
                s.addressing: [u.addressing for u in index.graph.successors(s) if u.addressing in runnable]
                for s in stages
            }
    except DvcException as e:
        raise ValueError(f"{repo_dir}: cannot read the DVC pipeline: {e}") from e
    finally:
        os.chdir(cwd)


def stage_order(
    repo_dir: str | Path,
    targets: list[str] | None = None,
    upstream: bool = True,
    graph: dict[str, list[str]] | None = None,
) -> list[str]:
    """Stages in dependency order (ties keep dvc.yaml order); with ``targets``, those and (if ``upstream``) every
    stage they depend on.

    A target names a stage (``train``, ``evaluate@magrpo``) or a whole foreach group (``evaluate``). ``graph`` is
    :func:`stage_graph`'s result where the caller has it already (reading it loads DVC's index).
    """
    graph = graph if graph is not None else stage_graph(repo_dir)
    groups: dict[str, list[str]] = {}
    for name in graph:
        groups.setdefault(name, []).append(name)
        if "@" in name:
            groups.setdefault(name.split("@", 1)[0], []).append(name)
    unknown = sorted(set(targets or []) - set(groups))
    if unknown:
        raise ValueError(f"{repo_dir}: unknown stage(s) {unknown}; known: {list(graph)}")
    targets = [s for t in targets or [] for s in groups[t]]
    wanted = set(graph)
    if targets:
        wanted, todo = set(), list(targets)
        while todo:
            s = todo.pop()
            if s not in wanted:
                wanted.add(s)
                todo.extend(graph[s] if upstream else [])
    order, done = [], set()
    while len(order) < len(wanted):
        ready = [
            s for s in graph if s in wanted and s not in done and all(u in done or u not in wanted for u in graph[s])
        ]
        if not ready:
            raise ValueError(f"{repo_dir}: dependency cycle among {sorted(wanted - done)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


def stages_changed(repo_dir: str | Path, stages: list[str]) -> dict:
    """``dvc status --json`` of ``stages``: what differs from dvc.lock per stage, ``{}`` when every one matches.

    Runs the DVC of this Python environment (a worker's PATH need not contain the venv). Raises
    :class:`DvcStatusFailed` when DVC cannot answer; each caller decides what that means (the Prefect task retries,
    ``corecode repro`` runs the stages).
    """
    cmd = [sys.executable, "-m", "dvc", "status", "--json", *stages]
    res = subprocess.run(cmd, cwd=repo_dir, capture_output=True, text=True)
    if res.returncode != 0:
        raise DvcStatusFailed(res.returncode, res.stdout + res.stderr)
    return json.loads(res.stdout or "{}")


def stage_env(parent_run_id: str | None = None, tracking_uri: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of one stage's ``dvc repro``: this process's plus ``extra``, with this Python environment's
    bin directory first on PATH and, when given, the MLflow parent run the stage's run nests under.

    Stage commands call ``corecode``, ``dvc`` and ``python`` by name, and neither a Prefect worker nor
    ``.venv/bin/corecode repro`` needs the venv activated.
    """
    env = {**os.environ, **extra}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if parent_run_id:
        env[PARENT_ENV] = parent_run_id
    if tracking_uri:
        env["MLFLOW_TRACKING_URI"] = tracking_uri
    return env
