"""grpo.team.bf16: fp32 master weights trained under bf16 autocast, sampling from a bf16 copy synced after each step."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, build_team, one_step_params, weights  # noqa: E402

from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def fresh_accelerator_state():
    """AcceleratorState is a process-wide singleton that refuses a second mixed-precision setting: give this test
    its own (bf16) and leave a clean one for the tests after it."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def test_bf16_trains_fp32_masters_and_samples_from_synced_bf16_copies(tmp_path):
    from transformers import set_seed

    planner, coder = (load_role_model(str(d)) for d in build_team(tmp_path / "sft"))
    assert planner[0].dtype == coder[0].dtype == torch.float32  # master weights stay fp32
    before = weights(planner[0])
    set_seed(0)
    p = one_step_params(tmp_path, eval_problems=0, bf16=True)
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
        try:
            assert trainer.acc.mixed_precision == "bf16"
            for role in ("planner", "coder"):
                sampler = trainer.samplers[role]
                assert sampler.dtype == torch.bfloat16 and not any(q.requires_grad for q in sampler.parameters())
            metrics = trainer.train_step()
        finally:
            trainer.close()
    assert all(torch.isfinite(torch.tensor(v)) for k, v in metrics.items() if k.endswith("/loss"))
    master = trainer.acc.unwrap_model(trainer.roles["planner"].model)
    assert master.dtype == torch.float32
    assert any(not torch.equal(before[k], v) for k, v in master.state_dict().items()), "planner did not move"
    for role in ("planner", "coder"):  # the sampling copy holds the updated weights, rounded to bf16
        m = trainer.acc.unwrap_model(trainer.roles[role].model)
        for src, dst in zip(m.parameters(), trainer.samplers[role].parameters(), strict=True):
            assert torch.equal(src.detach().to(torch.bfloat16), dst)


def test_non_finite_gradient_skips_the_update(tmp_path, monkeypatch):
    import corecode.training.team_grpo as team_grpo

    planner, coder = (load_role_model(str(d)) for d in build_team(tmp_path / "sft", steps=30))
    before = weights(coder[0])
    real_backward = team_grpo.policy_loss_backward

    def coder_grad_goes_nan(model, *args, **kwargs):
        # the real loss and backward, then a NaN in one gradient tensor of the Coder: injected after the fact so the
        # test does not depend on whether this step's samples gave the Coder a non-zero advantage to back-propagate
        stats = real_backward(model, *args, **kwargs)
        if model.lm_head.weight is coder[0].lm_head.weight:
            model.lm_head.weight.grad = torch.full_like(model.lm_head.weight, float("nan"))
        return stats

    monkeypatch.setattr(team_grpo, "policy_loss_backward", coder_grad_goes_nan)
    p = one_step_params(tmp_path, eval_problems=0)
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
        try:
            metrics = trainer.train_step()
        finally:
            trainer.close()
    assert metrics["coder/skipped_update"] == 1.0 and metrics["planner/skipped_update"] == 0.0
    assert all(torch.equal(before[k], v) for k, v in coder[0].state_dict().items())  # weights untouched


def test_bf16_with_lora_per_role_trains_fp32_adapters_on_bf16_bases(tmp_path):
    """LoRA under bf16: each frozen base is bf16, only the adapters are fp32 and train, and the roles sample with the
    model itself (no bf16 copy). The Coder's rank comes from grpo.team.roles.coder, the Planner's from the section."""
    from peft import PeftModel
    from transformers import set_seed

    planner, coder = (load_role_model(str(d)) for d in build_team(tmp_path / "sft"))
    set_seed(0)
    p = one_step_params(
        tmp_path, eval_problems=0, bf16=True, lora_r=4, learning_rate=1e-2, roles={"coder": {"lora": {"r": 8}}}
    )
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
        try:
            assert trainer.samplers == {}
            models = {role: trainer.acc.unwrap_model(trainer.roles[role].model) for role in ("planner", "coder")}
            for model in models.values():
                assert isinstance(model, PeftModel)
                trainable = {n: w for n, w in model.named_parameters() if w.requires_grad}
                assert trainable and all("lora_" in n and w.dtype == torch.float32 for n, w in trainable.items())
                assert {w.dtype for n, w in model.named_parameters() if "lora_" not in n} == {torch.bfloat16}
            ranks = {role: model.peft_config["default"].r for role, model in models.items()}
            assert ranks == {"planner": 4, "coder": 8}
            before = {role: weights(model) for role, model in models.items()}
            metrics = trainer.train_step()
        finally:
            trainer.close()
    assert all(torch.isfinite(torch.tensor(v)) for k, v in metrics.items() if k.endswith("/loss"))
    for role, model in models.items():
        after = model.state_dict()
        moved = [k for k, v in before[role].items() if not torch.equal(v, after[k])]
        assert moved and all("lora_" in k for k in moved), role  # the adapters moved, the base did not
