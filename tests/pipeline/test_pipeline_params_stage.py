"""The params stage under real `dvc repro` in scratch git + DVC repos: a bad params.yaml fails before DVC removes
any stage's outputs, cached or not; a valid change reruns exactly the stages that read the changed section."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from corecode.config import Params
from corecode.pipeline.params_stage import sections, write_sections

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# Two stages shaped like the pipeline's: `train` reads grpo.team (a cached checkpoint and an uncached training log),
# `report` reads the checkpoint and the report section. Each run appends a line to SIDE/<stage>.runs, outside the repo.
STEP = """\
import json, os, pathlib, sys
stage = sys.argv[1]
with open(pathlib.Path(os.environ["SIDE"]) / f"{stage}.runs", "a") as f:
    f.write("ran\\n")
data = pathlib.Path("data")
if stage == "train":
    team = json.loads((data / "params/grpo.team.json").read_text())
    (data / "checkpoint").mkdir(exist_ok=True)
    (data / "checkpoint/weights.txt").write_text(f"trained {team['max_steps']} steps\\n")
    (data / "train_log.json").write_text(json.dumps([{"step": 1, "loss": 1.0}]))
else:
    report = json.loads((data / "params/report.json").read_text())
    weights = (data / "checkpoint/weights.txt").read_text()
    (data / "report.md").write_text(f"{weights} n_resamples={report['n_resamples']}\\n")
"""


def _dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    return subprocess.run([str(BIN / "dvc"), *args], cwd=repo, env=env, capture_output=True, text=True)


def _stage_yaml() -> dict:
    """The repository's own params stage, and two small stages that depend on its files."""
    params_stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["params"]
    return {
        "stages": {
            "params": params_stage,
            "train": {
                "cmd": "python step.py train",
                "deps": ["step.py", "data/params/grpo.team.json"],
                "outs": ["data/checkpoint", {"data/train_log.json": {"cache": False}}],
            },
            "report": {
                "cmd": "python step.py report",
                "deps": ["step.py", "data/checkpoint", "data/params/report.json"],
                "outs": [{"data/report.md": {"cache": False}}],
            },
        }
    }


@pytest.fixture
def repo(tmp_path, monkeypatch):
    side = tmp_path / "side"
    side.mkdir()
    monkeypatch.setenv("SIDE", str(side))
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    assert _dvc(repo, "init", "-q").returncode == 0
    (repo / "dvc.yaml").write_text(yaml.safe_dump(_stage_yaml(), sort_keys=False))
    (repo / "step.py").write_text(STEP)
    shutil.copy(ROOT / "params.yaml", repo / "params.yaml")
    res = _dvc(repo, "repro")
    assert res.returncode == 0, res.stdout + res.stderr
    return repo


def _runs(repo: Path, stage: str) -> int:
    path = Path(os.environ["SIDE"]) / f"{stage}.runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _outputs(repo: Path) -> dict[str, str]:
    files = ["data/checkpoint/weights.txt", "data/train_log.json", "data/report.md"]
    return {f: (repo / f).read_text() for f in files if (repo / f).exists()}


def pipeline_repo(repo: Path) -> Path:
    """A scratch git + DVC repo holding the repository's own pipeline: dvc.yaml, params.yaml, baselines/dvc.yaml and
    a copy of corecode/ (the stages' code deps; the commands run the installed corecode) and the repository's
    .dvcignore."""
    shutil.copytree(ROOT / "corecode", repo / "corecode", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("dvc.yaml", "params.yaml", "baselines/dvc.yaml"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, repo / rel)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    assert _dvc(repo, "init", "-q").returncode == 0
    shutil.copy(ROOT / ".dvcignore", repo / ".dvcignore")
    return repo


def _edit_params(repo: Path, edit) -> None:
    raw = yaml.safe_load((repo / "params.yaml").read_text())
    edit(raw)
    (repo / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def _assert_rejected(repo, res, key, before, runs, args=("repro",)) -> None:
    out = res.stdout + res.stderr
    assert f"error: params.yaml: invalid parameters: {key} (line " in out, out  # one line naming key and line
    # --ignore-errors goes on past the failed stage, which left its last valid files: the others are unchanged
    assert res.returncode != 0 or "--ignore-errors" in args
    assert _outputs(repo) == before, args  # checkpoint (cached), log and report (uncached): all still there
    assert {s: _runs(repo, s) for s in runs} == runs, args  # no stage command ran


def test_bad_params_fail_before_any_output_is_removed(repo):
    before, runs = _outputs(repo), {s: _runs(repo, s) for s in ("train", "report")}
    assert len(before) == 3
    original = (repo / "params.yaml").read_text()
    _edit_params(repo, lambda raw: raw["grpo"]["team"].update(max_steps="abc"))
    for args in (["repro"], ["repro", "--keep-going"], ["repro", "train"], ["repro", "--ignore-errors"]):
        _assert_rejected(repo, _dvc(repo, *args), "grpo.team.max_steps", before, runs, args)
    for edit, key in [
        (lambda raw: raw["grpo"]["team"].update(max_stepz=5), "grpo.team.max_stepz"),  # an unknown key
        (lambda raw: raw["report"].update(n_resamples=-1), "report.n_resamples"),  # out of range
    ]:
        (repo / "params.yaml").write_text(original)
        _edit_params(repo, edit)
        _assert_rejected(repo, _dvc(repo, "repro"), key, before, runs)


@pytest.mark.slow  # seven `dvc repro` runs: ~20 s
def test_fixed_params_rerun_nothing_and_a_change_reruns_its_readers(repo):
    before = _outputs(repo)
    original = (repo / "params.yaml").read_text()
    _edit_params(repo, lambda raw: raw["grpo"]["team"].update(max_steps="abc"))
    assert _dvc(repo, "repro").returncode != 0
    (repo / "params.yaml").write_text(original)
    res = _dvc(repo, "repro")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (_runs(repo, "train"), _runs(repo, "report")) == (1, 1) and _outputs(repo) == before
    assert "Data and pipelines are up to date" in _dvc(repo, "status").stdout

    # A key left to its default changes nothing; a changed value reruns the stages that read its section, and only them.
    for edit, runs in [
        (lambda raw: raw["report"].pop("confidence"), (1, 1)),  # the default, no longer written out
        (lambda raw: raw["report"].update(n_resamples=200), (1, 2)),
        (lambda raw: raw["grpo"]["team"].update(max_steps=7), (2, 3)),
    ]:
        _edit_params(repo, edit)
        res = _dvc(repo, "repro")
        assert res.returncode == 0 and (_runs(repo, "train"), _runs(repo, "report")) == runs, res.stdout + res.stderr
    assert (repo / "data/report.md").read_text() == "trained 7 steps\n n_resamples=200\n"


def test_sections_are_every_key_once_and_deterministic(tmp_path):
    params = Params()
    assert set(sections(params)) == {
        *(name for name in Params.model_fields if name != "grpo"),
        "grpo.team",
        "grpo.magrpo",
        "grpo.single",
    }
    first = {p.name: p.read_bytes() for p in write_sections(params, tmp_path / "a")}
    again = {p.name: p.read_bytes() for p in write_sections(Params.model_validate({}), tmp_path / "b")}
    assert first == again and json.loads(first["seed.json"]) == 0


@pytest.mark.slow  # the repository's dvc.yaml up to sft@coder on tiny params, then three more `dvc repro`: ~2 min
def test_the_pipelines_own_stages_survive_a_typo(tmp_path, monkeypatch):
    """The real dvc.yaml and stage commands: after `dvc repro sft@coder`, a typo in params.yaml fails the params stage,
    every output (the cached checkpoints, the uncached training log and reports) stays, and the fixed file reruns
    nothing."""
    repo = pipeline_repo(tmp_path / "repo")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    tiny = {
        "data": {"composite": {"n_train": 40, "n_val": 8, "n_test": 10, "n_rl": 8}},
        "sft": {"max_steps": 2, "batch_size": 4, "check_n": 0, "logging_steps": 1, "torch_threads": 1},
        "tracking": {"log_system_metrics": False},
    }

    def merge(raw, over):
        for k, v in over.items():
            merge(raw[k], v) if isinstance(v, dict) else raw.__setitem__(k, v)

    _edit_params(repo, lambda raw: merge(raw, tiny))
    res = _dvc(repo, "repro", "sft@coder")
    assert res.returncode == 0, res.stdout + res.stderr
    produced = [
        "data/processed/coder.jsonl",
        "data/reports/gx/summary.json",
        "data/checkpoints/base/config.json",
        "data/checkpoints/sft_coder/model.safetensors",
        "data/reports/train/sft_coder.json",
        "data/reports/train/sft_coder_summary.json",
    ]
    before = {f: (repo / f).read_bytes() for f in produced}
    original = (repo / "params.yaml").read_text()
    for edit, key in [
        (lambda raw: raw["sft"].update(max_steps="abc"), "sft.max_steps"),
        (lambda raw: raw["sft"].update(max_stepz=3), "sft.max_stepz"),
    ]:
        (repo / "params.yaml").write_text(original)
        _edit_params(repo, edit)
        res = _dvc(repo, "repro", "sft@coder")
        assert res.returncode != 0 and f"error: params.yaml: invalid parameters: {key} (line " in res.stderr, res.stderr
        assert {f: (repo / f).read_bytes() for f in produced} == before
    (repo / "params.yaml").write_text(original)
    # Python's bytecode caches in the stages' code deps (written by any later import from the checkout) change nothing
    (repo / "corecode/data/__pycache__").mkdir(exist_ok=True)
    (repo / "corecode/data/__pycache__/efficiency.cpython-311.pyc").write_bytes(b"\x00" * 16)
    res = _dvc(repo, "repro", "sft@coder")  # the failed runs recorded nothing: the restored file is up to date
    assert res.returncode == 0 and "Running stage" not in res.stdout and "up to date" in res.stdout, res.stdout
    assert {f: (repo / f).read_bytes() for f in produced} == before
