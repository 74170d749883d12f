"""Parameters of ``grpo.single`` in params.yaml: the single-agent GRPO baselines (``corecode grpo-single``).

Read by ``corecode.training.single_grpo`` only. Defaults are the embedded default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from corecode.models.config import LoraParams
from corecode.training.rewards_config import CoderRewardWeights


class SingleGRPOParams(BaseModel):
    """Single-agent GRPO baselines (``corecode grpo-single [--plan-then-code]``): TRL's GRPOTrainer on one model.

    Its reward (``grpo.single.reward``) has the team Coder's shape and defaults, so the baseline and the team are scored
    the same way.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field("data/checkpoints/sft_single", description="Start checkpoint of `grpo-single` (KL reference).")
    pta_model: str = Field(
        "data/checkpoints/sft_pta", description="Start checkpoint of --plan-then-code (`corecode sft --role pta`)."
    )
    output: str = Field("data/checkpoints/grpo_single", description="Final model of `grpo-single`.")
    pta_output: str = Field("data/checkpoints/pta_grpo", description="Final model of `grpo-single --plan-then-code`.")
    train_problems: str | list[str] = Field(
        "data/processed/composite_rl.jsonl",
        description="Problem JSONL the prompts come from (the RL split), or a list of them (composite_rl.jsonl and "
        "the real sources' sources/<name>_rl.jsonl).",
    )
    max_problems: int | None = Field(None, description="Use only the first N problems (None = all).")
    work_dir: str = Field("data/work", description="Trainer scratch (intermediate checkpoints), outside DVC outs.")
    log_dir: str = Field("data/reports/train", description="Where grpo_single.json / pta_grpo.json log histories go.")
    loss_type: Literal["grpo", "dapo", "dr_grpo"] = Field("grpo", description="TRL GRPOConfig.loss_type.")
    num_generations: int = Field(2, ge=2, description="Completions per prompt (the GRPO group size).")
    batch_size: int = Field(32, ge=1, description="Completions per device per step; a multiple of num_generations.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Gradient accumulation steps.")
    beta: float = Field(0.0, ge=0.0, description="KL coefficient to the start policy (0: no reference model).")
    epsilon: float = Field(0.2, gt=0, description="Clip range of the importance ratio.")
    scale_rewards: Literal["group", "batch", "none"] = Field("group", description="Advantage std scaling (TRL).")
    max_completion_length: int = Field(128, ge=1, description="Max new tokens per completion.")
    pta_max_completion_length: int = Field(224, ge=1, description="Max new tokens with --plan-then-code (plan+code).")
    temperature: float = Field(0.7, gt=0, description="Sampling temperature of rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling of rollouts.")
    lean_decode: bool | None = Field(
        None,
        description="Sample rollouts with corecode's decode loop (corecode.generation.lean_decode), handed to TRL as "
        "its rollout_func, instead of TRL's generate: the sampler the team's rollouts use (grpo.team.lean_decode). "
        "null (auto): on CPU for Llama/Qwen2-shaped models; true: wherever the model is supported; false: TRL's "
        "generate.",
    )
    max_steps: int = Field(80, ge=1, description="Optimizer steps.")
    learning_rate: float = Field(5e-5, gt=0, description="AdamW learning rate.")
    ptx_coef: float = Field(
        2.0,
        ge=0,
        description="Weight of the language-modelling loss of a batch of ptx_data rows added to every update "
        "(PPO-ptx, as grpo.team.ptx_coef; corecode.training.ptx). 0: off. Not used with --plan-then-code.",
    )
    ptx_data: str = Field("data/processed/single.jsonl", description="SFT rows (prompt, completion) of the ptx term.")
    ptx_batch_size: int = Field(8, ge=1, description="ptx rows per update.")
    lr_scheduler_type: str = Field("constant", description="transformers scheduler name.")
    warmup_ratio: float = Field(0.0, ge=0.0, lt=1.0, description="Fraction of steps of warmup.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    logging_steps: int = Field(1, ge=1, description="Log every N steps.")
    save_steps: int | None = Field(None, description="Resumable Trainer checkpoints every N steps (None = final only).")
    plan_format_weight: float = Field(0.1, ge=0.0, description="--plan-then-code: weight of the plan-format term.")
    seed: int | None = Field(None, description="Training seed (default: the global seed).")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="auto = bf16 on a CUDA GPU, else fp32. bf16 is mixed precision over fp32 weights for a full "
        "update; with LoRA the frozen base is loaded in bf16 and the adapter kept fp32.",
    )
    attn_implementation: str | None = Field(
        None, description="transformers attn_implementation (sdpa, eager, flash_attention_2, ...); None: its default."
    )
    gradient_checkpointing: bool = Field(
        False, description="Activation checkpointing (TRL's GRPOConfig turns it on by default; off is faster on CPU)."
    )
    lora: LoraParams = Field(default_factory=LoraParams, description="LoRA (peft) instead of a full update.")
    reward: CoderRewardWeights = Field(
        default_factory=CoderRewardWeights, description="Reward of a completion (the team Coder's shape and defaults)."
    )
