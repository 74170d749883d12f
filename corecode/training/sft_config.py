"""Parameters of the ``sft`` section of params.yaml (``corecode sft --role planner|coder|single``).

Shared defaults sit at the top of the section; ``sft.planner`` / ``sft.coder`` / ``sft.single`` override any of them
for one role (the Planner's completions are shorter than the Coder's, so it may want fewer steps or a shorter
``max_length``). Defaults suit the *embedded default*: a ~1-5M parameter Qwen2 learning the ``composite`` task language
from scratch on a 2-core CPU in a few minutes per role.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# pta: plan-then-code in one model (PTA-GRPO start point), rows joined from planner.jsonl + coder.jsonl.
Role = Literal["planner", "coder", "single", "pta"]
ROLES: tuple[str, ...] = ("planner", "coder", "single", "pta")


class LoraParams(BaseModel):
    """LoRA adapter (peft) instead of a full fine-tune; off for the embedded default (it trains from scratch)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="Train a LoRA adapter instead of all weights (hub models on a GPU).")
    r: int = Field(16, ge=1, description="LoRA rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha (scaling = alpha / r).")
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout on the LoRA branch.")
    target_modules: list[str] | str = Field(
        "all-linear", description="Modules that get adapters: a list of names or peft's 'all-linear'."
    )
    merge: bool = Field(
        True, description="Merge the adapter into the base weights before saving, so later stages load a plain model."
    )


class SFTRoleParams(BaseModel):
    """Per-role overrides: every field left out (None) falls back to the section-level value."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(None, description="Override of sft.max_steps for this role.")
    num_train_epochs: float | None = Field(None, description="Override of sft.num_train_epochs for this role.")
    learning_rate: float | None = Field(None, description="Override of sft.learning_rate for this role.")
    batch_size: int | None = Field(None, description="Override of sft.batch_size for this role.")
    gradient_accumulation_steps: int | None = Field(None, description="Override of sft.gradient_accumulation_steps.")
    max_length: int | None = Field(None, description="Override of sft.max_length for this role.")
    warmup_ratio: float | None = Field(None, description="Override of sft.warmup_ratio for this role.")
    lr_scheduler_type: str | None = Field(None, description="Override of sft.lr_scheduler_type for this role.")
    weight_decay: float | None = Field(None, description="Override of sft.weight_decay for this role.")
    eval_steps: int | None = Field(None, description="Override of sft.eval_steps for this role.")
    logging_steps: int | None = Field(None, description="Override of sft.logging_steps for this role.")
    completion_only_loss: bool | None = Field(None, description="Override of sft.completion_only_loss for this role.")
    seed: int | None = Field(None, description="Override of the training seed for this role (default: global seed).")


class SFTParams(BaseModel):
    """Supervised fine-tuning of the Planner, the Coder and the single-model baseline (TRL SFTTrainer)."""

    model_config = ConfigDict(extra="forbid")

    base_checkpoint: str = Field(
        "data/checkpoints/base", description="Checkpoint SFT starts from (written by `corecode init-model`)."
    )
    max_steps: int = Field(
        600, description="Optimizer steps per role; -1 means use num_train_epochs instead (TrainingArguments)."
    )
    num_train_epochs: float = Field(3.0, gt=0, description="Epochs when max_steps is -1.")
    learning_rate: float = Field(2e-3, gt=0, description="Peak learning rate (from-scratch tiny models like ~1e-3).")
    batch_size: int = Field(16, ge=1, description="Per-device train batch size (sequences).")
    eval_batch_size: int = Field(64, ge=1, description="Per-device eval batch size.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Gradient accumulation steps.")
    max_length: int = Field(384, ge=8, description="Max tokens of prompt + completion; longer rows are truncated.")
    warmup_ratio: float = Field(0.05, ge=0.0, lt=1.0, description="Fraction of steps of linear warmup.")
    lr_scheduler_type: str = Field("cosine", description="transformers scheduler name (cosine, linear, constant...).")
    weight_decay: float = Field(0.01, ge=0.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    eval_steps: int = Field(200, ge=1, description="Evaluate on the val split every N steps (and at the end).")
    logging_steps: int = Field(25, ge=1, description="Log train loss / lr every N steps.")
    completion_only_loss: bool = Field(
        True,
        description="Loss on completion tokens only (TRL's completion_only_loss). False adds the prompt's tokens: "
        "a model trained from scratch then also learns to read the problem language, not only to answer.",
    )
    max_eval_rows: int | None = Field(
        256, description="Cap on val rows used for eval loss (keeps evaluation cheap on CPU); None = all."
    )
    save_steps: int | None = Field(
        None, description="Save resumable Trainer checkpoints every N steps under work_dir (None = only the final)."
    )
    save_total_limit: int = Field(1, ge=1, description="Intermediate checkpoints kept (older ones pruned).")
    work_dir: str = Field(
        "data/work", description="Where the Trainer's intermediate checkpoints go (outside the DVC output dir)."
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="Training dtype: auto = bf16 mixed precision on a CUDA GPU that supports it, else fp32."
    )
    gradient_checkpointing: bool = Field(False, description="Trade compute for memory (large models on GPU).")
    fused_lm_head: bool | None = Field(
        None,
        description="TRL's fused, chunked LM-head loss (never builds the full logits; saves memory with large "
        "vocabularies). False: the loss from the model's own logits (corecode.training.sft_trainer), 1.3x faster a "
        "step on the embedded CPU model (benchmarks/sft_step.py). None (auto): fused on CUDA, logits elsewhere.",
    )
    torch_threads: int | None = Field(
        None,
        description="torch.set_num_threads for CPU training (None = torch's default, one per core). On a CPU shared "
        "with other busy processes 1 thread was measured 4x faster than 2 (OpenMP threads spin-wait).",
    )
    check_problems: str = Field(
        "data/processed/composite_val.jsonl",
        description="After training, greedy-sample the model on these problems (Problem JSONL) and score in the sandbox.",
    )
    check_n: int = Field(
        32, ge=0, description="How many check problems (first N); 0 skips the post-SFT sample check."
    )
    check_max_new_tokens: int = Field(192, ge=1, description="Token budget of a sample-check completion.")
    lora: LoraParams = Field(default_factory=LoraParams, description="LoRA (peft) settings.")
    planner: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role planner.")
    coder: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role coder.")
    single: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role single.")
    pta: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role pta (plan-then-code).")

    def for_role(self, role: str, default_seed: int = 0) -> ResolvedSFT:
        """The section's values with ``role``'s overrides applied (what one ``corecode sft`` run uses)."""
        if role not in ROLES:
            raise ValueError(f"sft: unknown role {role!r}; expected one of {', '.join(ROLES)}")
        base = self.model_dump(exclude={"planner", "coder", "single", "pta"})
        override = getattr(self, role).model_dump(exclude_none=True)
        base.update(override)
        base.setdefault("seed", default_seed)
        return ResolvedSFT(role=role, **base)


class ResolvedSFT(SFTParams):
    """One role's effective settings (no nested overrides left)."""

    role: Role
    seed: int = 0


class SingleGRPOParams(BaseModel):
    """Single-agent GRPO baselines (``corecode grpo-single [--plan-then-code]``): TRL's GRPOTrainer on one model.

    Lives under ``grpo.single`` in params.yaml. Reward shaping weights are shared with the team trainer
    (``grpo.coder_reward``) so both baselines and the team are scored the same way.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field("data/checkpoints/sft_single", description="Start checkpoint of `grpo-single` (KL reference).")
    pta_model: str = Field(
        "data/checkpoints/sft_pta", description="Start checkpoint of --plan-then-code (`corecode sft --role pta`)."
    )
    output: str = Field("data/checkpoints/grpo_single", description="Final model of `grpo-single`.")
    pta_output: str = Field("data/checkpoints/pta_grpo", description="Final model of `grpo-single --plan-then-code`.")
    train_problems: str = Field(
        "data/processed/composite_train.jsonl", description="Problem JSONL the prompts come from (train split)."
    )
    max_problems: int | None = Field(None, description="Use only the first N problems (None = all).")
    work_dir: str = Field("data/work", description="Trainer scratch (intermediate checkpoints), outside DVC outs.")
    log_dir: str = Field("data/reports/train", description="Where grpo_single.json / pta_grpo.json log histories go.")
    loss_type: Literal["grpo", "dapo", "dr_grpo"] = Field("dapo", description="TRL GRPOConfig.loss_type.")
    num_generations: int = Field(4, ge=2, description="Completions per prompt (the GRPO group size).")
    batch_size: int = Field(8, ge=1, description="Completions per device per step; a multiple of num_generations.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Gradient accumulation steps.")
    beta: float = Field(0.0, ge=0.0, description="KL coefficient to the start policy (0: no reference model).")
    epsilon: float = Field(0.2, gt=0, description="Clip range of the importance ratio.")
    scale_rewards: Literal["group", "batch", "none"] = Field("group", description="Advantage std scaling (TRL).")
    max_completion_length: int = Field(128, ge=1, description="Max new tokens per completion.")
    pta_max_completion_length: int = Field(224, ge=1, description="Max new tokens with --plan-then-code (plan+code).")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling of rollouts.")
    max_steps: int = Field(50, ge=1, description="Optimizer steps.")
    learning_rate: float = Field(2e-5, gt=0, description="AdamW learning rate.")
    lr_scheduler_type: str = Field("constant", description="transformers scheduler name.")
    warmup_ratio: float = Field(0.0, ge=0.0, lt=1.0, description="Fraction of steps of warmup.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    logging_steps: int = Field(1, ge=1, description="Log every N steps.")
    save_steps: int | None = Field(None, description="Resumable Trainer checkpoints every N steps (None = final only).")
    plan_format_weight: float = Field(0.1, ge=0.0, description="--plan-then-code: weight of the plan-format term.")
    seed: int | None = Field(None, description="Training seed (default: the global seed).")
    dtype: Literal["auto", "float32", "bfloat16"] = Field("auto", description="auto = bf16 on a CUDA GPU, else fp32.")
    gradient_checkpointing: bool = Field(
        False, description="Activation checkpointing (TRL's GRPOConfig turns it on by default; off is faster on CPU)."
    )
    lora: LoraParams = Field(default_factory=LoraParams, description="LoRA (peft) instead of a full update.")
