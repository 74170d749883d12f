"""Parameters of the ``sft`` section of params.yaml (``corecode sft --role planner|coder|single``).

Shared defaults sit at the top of the section; ``sft.planner`` / ``sft.coder`` / ``sft.single`` override any of them
for one role (the Planner's completions are shorter than the Coder's, so it may want fewer steps or a shorter
``max_length``). Defaults suit the *embedded default*: a ~1-5M parameter Qwen2 learning the ``composite`` task language
from scratch on a 2-core CPU in a few minutes per role.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from corecode.models.config import LoraParams

# pta: plan-then-code in one model (PTA-GRPO start point), rows joined from planner.jsonl + coder.jsonl.
Role = Literal["planner", "coder", "single", "pta"]
ROLES: tuple[str, ...] = ("planner", "coder", "single", "pta")


class SFTRoleParams(BaseModel):
    """Per-role overrides: every field left out (None) falls back to the section-level value."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _only_set(self, handler):
        # An override that is not set is absent (params.yaml lists only what a role changes), never a null.
        return {k: v for k, v in handler(self).items() if v is not None}

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
    dtype: Literal["auto", "float32", "bfloat16"] | None = Field(None, description="Override of sft.dtype.")
    gradient_checkpointing: bool | None = Field(None, description="Override of sft.gradient_checkpointing.")
    attn_implementation: str | None = Field(None, description="Override of sft.attn_implementation.")
    lora: LoraParams | None = Field(None, description="Override of sft.lora: the keys given replace the section's.")


class SFTParams(BaseModel):
    """Supervised fine-tuning of the Planner, the Coder and the single-model baseline (TRL SFTTrainer)."""

    model_config = ConfigDict(extra="forbid")

    base_checkpoint: str = Field(
        "data/checkpoints/base", description="Checkpoint SFT starts from (written by `corecode init-model`)."
    )
    max_steps: int = Field(
        1200, description="Optimizer steps per role; -1 means use num_train_epochs instead (TrainingArguments)."
    )
    num_train_epochs: float = Field(3.0, gt=0, description="Epochs when max_steps is -1.")
    learning_rate: float = Field(2e-3, gt=0, description="Peak learning rate (from-scratch tiny models like ~1e-3).")
    batch_size: int = Field(8, ge=1, description="Per-device train batch size (sequences).")
    eval_batch_size: int = Field(64, ge=1, description="Per-device eval batch size.")
    gradient_accumulation_steps: int = Field(1, ge=1, description="Gradient accumulation steps.")
    max_length: int = Field(384, ge=8, description="Max tokens of prompt + completion; longer rows are truncated.")
    warmup_ratio: float = Field(0.05, ge=0.0, lt=1.0, description="Fraction of steps of linear warmup.")
    lr_scheduler_type: str = Field("cosine", description="transformers scheduler name (cosine, linear, constant...).")
    weight_decay: float = Field(0.01, ge=0.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping norm.")
    eval_steps: int = Field(600, ge=1, description="Evaluate on the val split every N steps (and at the end).")
    logging_steps: int = Field(25, ge=1, description="Log train loss / lr every N steps.")
    completion_only_loss: bool = Field(
        False,
        description="Loss on completion tokens only (TRL's completion_only_loss). False adds the prompt's tokens: "
        "a model trained from scratch then also learns to read the problem language, not only to answer.",
    )
    max_eval_rows: int | None = Field(
        128, description="Cap on val rows used for eval loss (keeps evaluation cheap on CPU); None = all."
    )
    save_steps: int | None = Field(
        None, description="Save resumable Trainer checkpoints every N steps under work_dir (None = only the final)."
    )
    save_total_limit: int = Field(1, ge=1, description="Intermediate checkpoints kept (older ones pruned).")
    work_dir: str = Field(
        "data/work", description="Where the Trainer's intermediate checkpoints go (outside the DVC output dir)."
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="Training dtype: auto = bf16 on a CUDA GPU that supports it, else fp32. bf16 is mixed precision "
        "over fp32 weights for a full fine-tune; with LoRA the frozen base is loaded in bf16, the adapter kept fp32.",
    )
    gradient_checkpointing: bool = Field(False, description="Trade compute for memory (large models on GPU).")
    attn_implementation: str | None = Field(
        None,
        description="transformers attn_implementation the model is loaded with (sdpa, eager, flash_attention_2, ...); "
        "None: transformers' default.",
    )
    fused_lm_head: bool | None = Field(
        None,
        description="TRL's fused, chunked LM-head loss (never builds the full logits; saves memory with large "
        "vocabularies). False: the loss from the model's own logits (corecode.training.sft_trainer), 1.3x faster a "
        "step on the embedded CPU model (benchmarks/sft_step.py). None (auto): fused on CUDA, logits elsewhere.",
    )
    torch_threads: int | None = Field(
        None,
        description="torch.set_num_threads for CPU training (None = torch's default, one per core). On a CPU shared "
        "with other busy processes 1 thread is faster than 2 (OpenMP threads spin-wait; docs/benchmarks.md).",
    )
    check_problems: str = Field(
        "data/processed/composite_val.jsonl",
        description="After training, greedy-sample the model on these problems (Problem JSONL) and score in the "
        "sandbox.",
    )
    check_n: int = Field(16, ge=0, description="How many check problems (first N); 0 skips the post-SFT sample check.")
    check_max_new_tokens: int = Field(192, ge=1, description="Token budget of a sample-check completion.")
    lora: LoraParams = Field(default_factory=LoraParams, description="LoRA (peft) settings.")
    planner: SFTRoleParams = Field(
        default_factory=lambda: SFTRoleParams(max_steps=3300, learning_rate=1e-3),
        description="Overrides for --role planner (plans are short: more steps at a lower rate; the team's dev "
        "pass@1 keeps rising to step 3300 although the Planner's validation loss is flat from step 1800).",
    )
    coder: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role coder.")
    single: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role single.")
    pta: SFTRoleParams = Field(default_factory=SFTRoleParams, description="Overrides for --role pta (plan-then-code).")

    def for_role(self, role: str, default_seed: int = 0) -> ResolvedSFT:
        """The section's values with ``role``'s overrides applied (what one ``corecode sft`` run uses)."""
        if role not in ROLES:
            raise ValueError(f"sft: unknown role {role!r}; expected one of {', '.join(ROLES)}")
        base = self.model_dump(exclude={"planner", "coder", "single", "pta"})
        own = getattr(self, role)
        override = own.model_dump(exclude_none=True)
        if own.lora is not None:  # the keys a role gives replace the section's, the others stay
            override["lora"] = self.lora.model_copy(update=own.lora.model_dump(exclude_unset=True)).model_dump()
        base.update(override)
        base.setdefault("seed", default_seed)
        return ResolvedSFT(role=role, **base)


class ResolvedSFT(SFTParams):
    """One role's effective settings (no nested overrides left)."""

    role: Role
    seed: int = 0
