"""The ptx-only control of the team's GRPO (``grpo.team.rl_coef: 0``, ``corecode grpo-team --ptx-control``): its
updates are plain SFT updates on the GRPO run's ptx batches with the run's optimizer, and differ from the GRPO run's;
and no tuning run evaluates on a test split."""

import copy
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, build_team, one_step_params, sft_texts, weights  # noqa: E402

from corecode.generation.render import completion_end_id, sft_example  # noqa: E402
from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.grpo_config import MAGRPOParams, TeamGRPOParams  # noqa: E402
from corecode.training.ptx import ptx_batch  # noqa: E402
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory, one_thread):
    return build_team(tmp_path_factory.mktemp("team"))


def _coder_rows(path: Path) -> tuple[Path, list[dict]]:
    rows = [{"prompt": a, "completion": b} for a, b in sft_texts()[1]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def _params(tmp_path: Path, data: Path, **kw) -> TeamGRPOParams:
    """Coder-only GRPO with the ptx term (5 of the 8 SFT rows a step)."""
    return one_step_params(
        tmp_path,
        frozen_roles=["planner"],
        max_steps=3,
        eval_problems=0,
        ptx_coef=2.0,
        ptx_data={"coder": str(data)},
        ptx_batch_size=5,
        learning_rate=2e-3,
        max_grad_norm=1.0,
        **kw,
    )


def _sft_update(model, tokenizer, rows: list[dict], p: TeamGRPOParams, steps: int) -> None:
    """What an SFT-only run does with the GRPO run's ptx batches (the rows ``ptx_batch`` gives each step): AdamW at
    the run's rate, ptx_coef x the LM loss of prompt and completion (the SFT stage's tokenization), gradient clipping
    at max_grad_norm."""
    end = completion_end_id(tokenizer, False)
    opt = torch.optim.AdamW(model.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)
    model.train()
    for step in range(steps):
        batch = ptx_batch(rows, p.ptx_batch_size, 0, "coder", step)
        ids = [sft_example(tokenizer, r["prompt"], r["completion"], False, end)["input_ids"] for r in batch]
        width = max(map(len, ids))
        input_ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x in ids])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
        labels = input_ids.masked_fill(mask == 0, -100)
        loss = p.ptx_coef * model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), p.max_grad_norm)
        opt.step()
        opt.zero_grad()


def test_ptx_control_is_an_sft_update_on_the_grpo_runs_batches_and_differs_from_grpo(team_dir, tmp_path):
    data, rows = _coder_rows(tmp_path / "coder.jsonl")
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    start = weights(coder[0])
    reference = copy.deepcopy(coder[0])
    control = _params(tmp_path / "ctl", data, rl_coef=0.0)
    # No sandbox: the control must neither sample nor score anything.
    trainer = TeamGRPOTrainer(control, planner, coder, PROBLEMS, sandbox=None, seed=0)
    planner_before = weights(planner[0])
    try:
        metrics = [trainer.train_step() for _ in range(control.max_steps)]
    finally:
        trainer.close()
    assert all("coder/ptx_loss" in m and not any(k.startswith("reward/") for k in m) for m in metrics)
    assert not any(k.startswith("planner/") for m in metrics for k in m)  # a frozen role takes no step

    _sft_update(reference, coder[1], rows, control, control.max_steps)
    after = weights(coder[0])
    assert any(not torch.equal(start[k], after[k]) for k in start), "the control did not train"
    for k, v in reference.state_dict().items():
        torch.testing.assert_close(after[k], v, rtol=1e-5, atol=1e-6, msg=f"{k}: control != SFT update")
    assert all(torch.equal(planner_before[k], v) for k, v in planner[0].state_dict().items())

    # The GRPO run (rl_coef 1) from the same start with the same ptx batches moves the Coder elsewhere.
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        grpo = TeamGRPOTrainer(_params(tmp_path / "grpo", data), planner, coder, PROBLEMS, sandbox, seed=0)
        try:
            grpo_metrics = [grpo.train_step() for _ in range(control.max_steps)]
        finally:
            grpo.close()
    assert any(m["coder/adv_std"] > 0 for m in grpo_metrics), "no policy-gradient signal in the GRPO run"
    grpo_after = weights(coder[0])
    assert max(float((grpo_after[k] - after[k]).abs().max()) for k in after) > 1e-4


def test_the_control_needs_a_ptx_term():
    with pytest.raises(ValueError, match="rl_coef: 0"):
        TeamGRPOParams(rl_coef=0.0, ptx_coef=0.0)
    assert TeamGRPOParams(rl_coef=0.0).ptx_coef == 2.0  # the embedded default's control is valid


def test_the_control_of_a_recipe_without_ptx_is_the_sft_team(tmp_path, monkeypatch):
    """``grpo-team --ptx-control`` of a recipe with ptx off (the Qwen profiles' ``ptx_coef: 0``) would update nothing:
    the control's places get the start checkpoints, replacing what was there, and an empty log; no trainer runs."""
    from typer.testing import CliRunner

    from corecode.cli import app

    monkeypatch.chdir(tmp_path)
    for role in ("planner", "coder"):
        (tmp_path / f"sft_{role}").mkdir()
        (tmp_path / f"sft_{role}" / "model.safetensors").write_text(role)
    stale = tmp_path / "data/checkpoints/ptx_coder/stale.bin"  # an earlier run's control
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    sets = ["grpo.team.planner_model=sft_planner", "grpo.team.coder_model=sft_coder", "grpo.team.ptx_coef=0"]
    args = ["--pipeline-outputs", "grpo-team", "--ptx-control", "--params", str(ROOT / "params.yaml")]
    res = CliRunner().invoke(app, args + [x for kv in sets for x in ("--set", kv)])
    assert res.exit_code == 0, res.output
    assert "the control is the SFT team" in res.output
    for role in ("planner", "coder"):
        assert sorted(p.name for p in (tmp_path / f"data/checkpoints/ptx_{role}").iterdir()) == ["model.safetensors"]
        assert (tmp_path / f"data/checkpoints/ptx_{role}/model.safetensors").read_text() == role
    assert json.loads((tmp_path / "data/reports/train/grpo_ptx.json").read_text()) == []


def test_in_training_evaluation_refuses_the_test_split(team_dir):
    for section in (TeamGRPOParams, MAGRPOParams):
        with pytest.raises(ValueError, match="dev split, never a test split"):
            section(val_problems="data/processed/composite_test.jsonl")
        assert section().val_problems == "data/processed/composite_dev.jsonl"
    assert TeamGRPOParams(val_problems="data/processed/latest.jsonl")  # "test" as a word, not any substring
    # A file of test problems under another name is refused when the trainer reads it.
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    test_problems = [p.model_copy(update={"split": "test"}) for p in PROBLEMS]
    with pytest.raises(ValueError, match="never test problems"):
        TeamGRPOTrainer(TeamGRPOParams(ptx_coef=0.0), planner, coder, PROBLEMS, None, val_problems=test_problems)
