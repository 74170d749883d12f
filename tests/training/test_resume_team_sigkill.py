"""A team GRPO run killed with SIGKILL and started again ends bit-for-bit where an unbroken run ends (CPU)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import build_team, team_params  # noqa: E402

from corecode.config import Params  # noqa: E402
from corecode.sandbox import SandboxParams  # noqa: E402
from corecode.training.grpo_config import GRPOParams, TeamGRPOParams  # noqa: E402

SCRIPT = """
import sys, torch
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_team_fixtures import PROBLEMS
from corecode.config import Params
from corecode.training.team_grpo import run_team_grpo
run_team_grpo(Params.model_validate_json(Path(sys.argv[1]).read_text()), train_problems=PROBLEMS,
              val_problems=[], progress=False)
"""


def _ptx_data(root: Path) -> dict[str, str]:
    """Both roles' SFT rows for the ptx term: its batch must also come back to the same place after a resume."""
    from test_team_fixtures import sft_texts

    out = {}
    for role, pairs in zip(("planner", "coder"), sft_texts()):
        path = root / f"{role}_sft.jsonl"
        path.write_text("".join(json.dumps({"prompt": a, "completion": b}) + "\n" for a, b in pairs))
        out[role] = str(path)
    return out


def _write_params(root: Path, team: tuple[Path, Path], name: str) -> tuple[Path, TeamGRPOParams]:
    # Efficiency terms stay off (their default): measured run times would make rewards non-deterministic.
    g = team_params(
        planner_model=str(team[0]),
        coder_model=str(team[1]),
        planner_output=str(root / name / "planner"),
        coder_output=str(root / name / "coder"),
        checkpoint_dir=str(root / name / "state"),
        log_path=str(root / name / "log.json"),
        problems_per_step=2,
        num_plans=2,
        num_programs=2,
        max_plan_tokens=32,
        max_code_tokens=40,
        max_steps=4,
        save_steps=1,
        eval_problems=0,
        learning_rate=1e-3,
        temperature=1.2,
        beta=0.04,
        ptx_coef=0.5,
        ptx_batch_size=3,
        ptx_data=_ptx_data(root),
    )
    # Generous time limits: on a loaded 2-core box a slow test must not turn into a (non-deterministic) timeout.
    sandbox = SandboxParams(workers=2, cache_dir=None, time_limit_s=20, sample_time_limit_s=120)
    params = Params(seed=7, grpo=GRPOParams(team=g), sandbox=sandbox)
    path = root / f"{name}.json"
    path.write_text(params.model_dump_json())
    return path, g


def _run(script: Path, params: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(script), str(params)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
def test_sigkill_then_resume_matches_unbroken_run(tmp_path):
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        team = build_team(tmp_path / "sft")
    finally:
        torch.set_num_threads(old)
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(Path(__file__).parent)))

    a_params, a = _write_params(tmp_path, team, "unbroken")
    out = _run(script, a_params)
    _, err = out.communicate(timeout=600)
    assert out.returncode == 0, err[-3000:]

    b_params, b = _write_params(tmp_path, team, "killed")
    proc = _run(script, b_params)
    deadline = time.time() + 300
    while not (Path(b.checkpoint_dir) / "step-1").exists():
        assert proc.poll() is None, "run ended before its first checkpoint"
        assert time.time() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not Path(b.coder_output).exists(), "the kill came too late to be mid-run"

    again = _run(script, b_params)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    assert "resumed from" in err

    for role in ("planner", "coder"):
        wa = load_file(Path(getattr(a, f"{role}_output")) / "model.safetensors")
        wb = load_file(Path(getattr(b, f"{role}_output")) / "model.safetensors")
        wsft = load_file(team[0 if role == "planner" else 1] / "model.safetensors")
        assert wa.keys() == wb.keys()
        assert all(torch.equal(wa[k], wb[k]) for k in wa), f"{role}: resumed weights differ from the unbroken run"
        assert any(not torch.equal(wa[k], wsft[k]) for k in wa), f"{role}: training did not move the weights"
    log_a, log_b = (json.loads(Path(x.log_path).read_text()) for x in (a, b))
    assert [r["step"] for r in log_b] == [1, 2, 3, 4]
    keys = ("reward/planner", "reward/coder", "planner/loss", "coder/loss")
    assert [[r[k] for k in keys] for r in log_a] == [[r[k] for k in keys] for r in log_b]
