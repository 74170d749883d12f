"""benchmarks/share_nothing_transfers.py --profile: the params it builds keep every key that decides what a stage
pulls and pushes as the profile has it, and cut only compute (its run with the services: docs/deploy.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from corecode.config import Params
from corecode.models.profiles import apply_profile
from corecode.training.sft import base_weight_dtype

REPO = Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from share_nothing_transfers import COMPUTE_CUT, profile_params  # noqa: E402

# What decides the size of a stage's inputs and outputs: the model (shape, dtype), the data, the checkpoints' contents.
SIZE_KEYS = ("model", "data", "baselines", "sft.lora", "sft.save_steps", "sft.save_total_limit")
GRPO_SIZE_KEYS = ("bf16", "lora", "roles", "frozen_roles", "shared_base", "save_total_limit", "resume")


def _get(tree: dict, dotted: str):
    for part in dotted.split("."):
        tree = tree[part]
    return tree


def test_gpu_dev_cut_keeps_the_profiles_artifact_shapes():
    base = REPO / "params.yaml"
    cut = profile_params("gpu-dev", base)
    full = apply_profile(REPO / "configs/profiles/gpu-dev.yaml", base)
    Params.model_validate(cut)
    for key in SIZE_KEYS:
        assert _get(cut, key) == _get(full, key), key
    for trainer in ("team", "magrpo"):
        for key in GRPO_SIZE_KEYS:
            assert cut["grpo"][trainer][key] == full["grpo"][trainer][key], f"grpo.{trainer}.{key}"
        # a resumable checkpoint is saved (and pushed): the trainer saves at the steps before the last
        assert cut["grpo"][trainer]["save_steps"] < cut["grpo"][trainer]["max_steps"]
    assert cut["model"]["embedded"]["hidden_size"] == 768 and cut["model"]["dtype"] == "bfloat16"  # the profile's
    assert cut["data"]["composite"]["n_train"] == 10000
    assert not any(k.split(".")[0] in ("model", "data") or k.endswith("bf16") for k in COMPUTE_CUT)
    # sft.dtype is only the Trainer's autocast where SFT trains full weights (no LoRA): they are saved fp32 either way
    assert not any(k.endswith("dtype") for k in COMPUTE_CUT if k != "sft.dtype")
    assert not full["sft"]["lora"]["enabled"]
    assert str(base_weight_dtype(Params.model_validate(cut).sft)) == "torch.float32"
    assert str(base_weight_dtype(Params.model_validate(full).sft)) == "torch.float32"
    assert cut["sft"]["max_steps"] < full["sft"]["max_steps"]  # the compute is cut
    assert cut["grpo"]["team"]["max_steps"] < full["grpo"]["team"]["max_steps"]
