"""The repository's own dvc.yaml files: every stage command writes the pipeline's places, and DVC (real `dvc` in a
scratch git repo) sees the optional baselines only when params.yaml's `baselines` opts in, hanging off the main
pipeline then."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = [ROOT / "dvc.yaml", ROOT / "baselines" / "dvc.yaml"]


def _stages(path: Path) -> dict:
    stages = yaml.safe_load(path.read_text())["stages"]
    out = {}
    for name, st in stages.items():
        if "foreach" not in st:
            out[name] = st
        elif isinstance(st["foreach"], dict):
            out.update({f"{name}@{k}": st["do"] for k in st["foreach"]})
        else:  # a templated list (the baselines): one stage, whatever the list holds
            out[f"{name}@*"] = st["do"]
    return out


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stage_command_writes_the_pipelines_places(pipeline):
    """A corecode command run by hand writes under data/work/manual/; dvc.yaml's pass --pipeline-outputs."""
    for name, st in _stages(pipeline).items():
        cmds = st["cmd"] if isinstance(st["cmd"], list) else [st["cmd"]]
        for cmd in cmds:
            assert cmd.startswith("corecode --pipeline-outputs "), f"{name}: {cmd}"


def test_dvc_analytics_are_off_in_the_committed_config():
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    assert config["core"]["analytics"] == "false"


def test_baselines_are_opt_in_and_hang_off_the_main_pipeline(tmp_path):
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    for rel in ("dvc.yaml", "params.yaml", "baselines/dvc.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    env = {"DVC_NO_ANALYTICS": "1", "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    run = lambda *a: subprocess.run(a, cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout  # noqa: E731
    run("git", "init", "-q")
    run(dvc, "init", "-q")
    # By default (baselines: []) no dvc command sees a baseline stage: not `dvc status`, `dvc repro`, `dvc exp run`
    # nor the Prefect flow (all read DVC's index of every dvc.yaml).
    every = run(dvc, "stage", "list", "--all", "--name-only")
    assert "evaluate@planner_coder_grpo" in every and "pta" not in every, every
    assert "pta" not in run(dvc, "status")
    # Opted in, its stages join, upstream of nothing in the main pipeline.
    params = tmp_path / "params.yaml"
    params.write_text(params.read_text().replace("\nbaselines: []\n", "\nbaselines:\n- pta\n"))
    dag = run(dvc, "dag", "--md", "baselines/dvc.yaml:report_pta@pta")
    for stage in ("params", "build_data", "init_model", "sft_pta@pta", "pta_grpo@pta", "evaluate_pta@pta"):
        assert stage in dag, dag
    assert "report_pta@pta" in run(dvc, "stage", "list", "--all", "--name-only")
    upstream = run(dvc, "dag", "--md", "dvc.yaml:promote")
    assert "report" in upstream and "pta" not in upstream, upstream
