"""The repository's own dvc.yaml files: every params key they name exists in params.yaml, and DVC (a real `dvc dag`
in a scratch git repo) sees the optional baselines pipeline hanging off the main one without `dvc repro` running it."""

from __future__ import annotations

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
        out.update({f"{name}@{k}": st["do"] for k in st["foreach"]} if "foreach" in st else {name: st})
    return out


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stage_param_exists_in_params_yaml(pipeline):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    missing = []
    for name, st in _stages(pipeline).items():
        for key in st.get("params", []):
            if not isinstance(key, str):
                continue
            node = params
            for part in key.split("."):
                if not isinstance(node, dict) or part not in node:
                    missing.append(f"{name}: {key}")
                    break
                node = node[part]
    assert not missing, missing


def test_baselines_pipeline_depends_on_the_main_one_and_stays_out_of_plain_repro(tmp_path):
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    for rel in ("dvc.yaml", "params.yaml", "baselines/dvc.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    env = {"DVC_NO_ANALYTICS": "1", "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    run = lambda *a: subprocess.run(a, cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout  # noqa: E731
    run("git", "init", "-q")
    run(dvc, "init", "-q")
    dag = run(dvc, "dag", "--md", "baselines/dvc.yaml:evaluate_pta")
    for stage in ("build_data", "init_model", "sft_pta", "pta_grpo", "evaluate_pta"):
        assert stage in dag, dag
    main = run(dvc, "stage", "list", "--name-only")
    assert "evaluate@planner_coder_grpo" in main and "sft_pta" not in main
    # What `make run` runs: nothing of the optional pipeline is upstream of the main one (a directory dep such as
    # data/reports/eval would pull evaluate_pta in, as it did once). `dvc dag dvc.yaml` is the main file's graph
    # plus everything upstream of it.
    upstream = run(dvc, "dag", "--md", "dvc.yaml")
    assert "report" in upstream and "promote" in upstream
    assert "pta" not in upstream, upstream
    assert "dvc repro dvc.yaml" in (ROOT / "Makefile").read_text()
