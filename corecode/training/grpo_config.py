"""Parameters of the ``grpo`` section of params.yaml: one model per trainer.

- ``grpo.team`` (:class:`TeamGRPOParams`): collaborative Planner -> Coder GRPO, ``corecode grpo-team``.
- ``grpo.magrpo`` (:class:`MAGRPOParams`): MAGRPO-style helper/main GRPO, ``corecode grpo-magrpo``.
- ``grpo.single`` (``single_grpo_config.SingleGRPOParams``): TRL's GRPOTrainer on one model, ``corecode grpo-single``.

The team and MAGRPO trainers share one implementation (``team_grpo._TwoRoleTrainer``), so their common knobs live in
:class:`TwoRoleGRPOParams`. Field names follow TRL's ``GRPOConfig`` where the knob means the same thing
(``loss_type``, ``beta``, ``epsilon``, ``scale_rewards``, ``temperature``, ``learning_rate``, ...). Every default is
the embedded default (a 2M-parameter model on a 2-core CPU); profiles override them (configs/profiles/).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from corecode.models.config import LoraParams
from corecode.training.rewards_config import CoderRewardWeights, MAGRPORewardWeights, PlannerRewardWeights
from corecode.training.single_grpo_config import SingleGRPOParams


def is_test_split(name: str) -> bool:
    """Whether a benchmark name or problem file is a test split (``composite_test``, ``.../composite_test.jsonl``,
    ``test_3000.jsonl``: a file name with the word ``test``): what tuning (in-training evaluation,
    notebooks/sweep.py) must never read."""
    import re
    from pathlib import PurePath

    return "test" in re.split(r"[^a-z0-9]+", PurePath(name).name.lower())


_ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _team_lora() -> LoraParams:
    # No dropout: the adapter's output must be the same in the rollout and in the loss.
    return LoraParams(r=16, alpha=16, dropout=0.0, target_modules=list(_ALL_LINEAR))


class RoleModelParams(BaseModel):
    """One role's model settings in a two-role trainer (``grpo.team.roles.planner``, ``grpo.magrpo.roles.main``, ...);
    a field left out takes the section's value."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _only_set(self, handler):
        return {k: v for k, v in handler(self).items() if v is not None}  # params.yaml lists only what a role changes

    lora: LoraParams | None = Field(None, description="This role's LoRA adapter: the keys given replace the section's.")
    gradient_checkpointing: bool | None = Field(None, description="Gradient checkpointing in this role's model.")
    attn_implementation: str | None = Field(None, description="attn_implementation this role's model is loaded with.")
    learning_rate: float | None = Field(None, gt=0, description="This role's AdamW learning rate.")
    temperature: float | None = Field(
        None, gt=0, description="This role's rollout sampling temperature (its loss and entropy use the same)."
    )
    beta: float | None = Field(None, ge=0, description="This role's KL coefficient to its start policy.")


class TwoRoleGRPOParams(BaseModel):
    """What the team and MAGRPO trainers share: data, rollout sampling, optimisation, PPO-ptx, LoRA, checkpoints."""

    model_config = ConfigDict(extra="forbid")

    # Data and outputs
    train_problems: str | list[str] = Field(
        "data/processed/composite_rl.jsonl",
        description="Problem JSONL to train on, or a list of them (e.g. composite_rl.jsonl and the real sources' "
        "sources/<name>_rl.jsonl that build-data writes).",
    )
    val_problems: str = Field(
        "data/processed/composite_dev.jsonl",
        description="Problem JSONL of the in-training evaluation (eval_problems of them): the dev split, never a "
        "test split (a file name with the word 'test', or a file of split-'test' problems, is refused).",
    )
    checkpoint_dir: str = Field(description="Resumable training checkpoints (outside DVC's outputs).")
    log_path: str = Field(description="Per-step log (JSON list) for dvc plots.")

    # Rollout sampling
    problems_per_step: int = Field(16, ge=1, description="Problems per step (per process).")
    temperature: float = Field(0.7, gt=0, description="Sampling temperature in rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling in rollouts.")
    generation_batch_size: int = Field(
        32, ge=1, description="Prompts per generate call; scoring of one chunk overlaps generation of the next."
    )
    static_cache: bool = Field(
        False,
        description="Static KV cache in generate, compiled by transformers (faster "
        "on a GPU, see docs/gpu.md; slower on CPU).",
    )
    lean_decode: bool | None = Field(
        None,
        description="Sample rollouts with corecode's decode loop (corecode.generation.lean_decode: no generate "
        "overhead; on CPU eager with finished rows dropped, on a GPU each step a CUDA graph, no compile) instead of "
        "generate. null (auto): on CPU for Llama/Qwen2-shaped models (faster there, docs/benchmarks.md); true: "
        "wherever the model is supported; false: generate.",
    )

    fixed_length: bool = Field(
        False,
        description="Block EOS and stop tokens in rollouts, so every completion has the role's max new tokens: every "
        "step and rank does the same generation work. For timing runs (benchmarks/gpu_scaling.sh), never training.",
    )

    # Optimisation (TRL GRPOConfig names)
    max_steps: int = Field(80, ge=1, description="Optimizer steps (each step = one rollout batch).")
    learning_rate: float = Field(2e-4, gt=0, description="AdamW learning rate (both roles).")
    lr_scheduler_type: str = Field("constant", description="transformers scheduler name (linear, cosine, constant).")
    warmup_steps: int = Field(0, ge=0, description="Scheduler warmup steps.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping per role.")
    micro_batch_size: int = Field(8, ge=1, description="Sequences per forward/backward (gradient accumulation).")
    compile_model: bool = Field(
        False,
        description="torch.compile each role's decoder layers for training passes (Inductor, dynamic sizes; "
        "models.factory.compile_decoder_layers): a layer's elementwise work fused, so fewer kernels to launch. For "
        'GPU steps bound by kernel launches (docs/gpu.md, "Reading the phase timings"). The first step compiles one '
        "layer (the whole forward compiled took 4.5-8 minutes at the full 1.5B shape on an H200; a layer at a time "
        "compiled 6.6x faster on CPU, benchmarks/compile_time.py). Not with FSDP2.",
    )
    skip_zero_advantage: bool = Field(
        True,
        description="Skip the forward/backward of sequences whose advantage is exactly 0 (groups that all scored the "
        "same): the gradient is the same (without KL; with beta > 0 every sequence runs). false: run every sequence "
        "(timing runs on random weights, where every reward is 0 and a skip would leave no update to time).",
    )
    fsdp_accumulate: bool = Field(
        False,
        description="Under FSDP2 (accelerate's fsdp_version 2; no effect otherwise): run every backward pass of an "
        "update but the last without gradient sync and without resharding (data_parallel.FSDPAccumulation), so an "
        "update does one reduce-scatter (and, with reshard_after_forward false, one all-gather) instead of one per "
        "micro-batch, for the memory of an unsharded gradient and unsharded weights of the trained parameters during "
        "the update. Faster where that memory fits (docs/gpu.md); false by default, since FSDP2 is chosen for memory.",
    )
    overlap_allreduce: bool = Field(
        False,
        description="Under DDP with one model per role (no effect otherwise, nor with shared_base): all-reduce an "
        "update's accumulated gradient inside its last backward pass, through DDP's reducer, bucket by bucket while "
        "the backward goes on (data_parallel.DDPAccumulation); every rank then runs the same number of micro-batches "
        "(a rank with fewer runs zero-weighted ones). Off by default: at the 1.5B shape the overlapped backward took "
        "longer than backward and all-reduce one after the other (docs/gpu.md). false: accumulate every pass under "
        "no_sync and all-reduce once after the backward (data_parallel.all_reduce_gradients; the timing's "
        "<role>_allreduce phase).",
    )
    pin_cores: bool = Field(
        False,
        description="With several processes per host (DDP, FSDP2): keep each rank, its threads and its sandbox "
        "workers on its own run of the host's cores (data_parallel.pin_to_own_cores) instead of letting the OS place "
        "them anywhere. No effect in one process.",
    )
    num_iterations: int = Field(
        1,
        ge=1,
        description="Optimizer steps per rollout batch (TRL's num_iterations, DeepSeekMath's mu); later ones "
        "clip the ratio against the sampling policy's log-probs. Generation is most of a CPU step, so mu > 1 buys "
        "gradient steps for little time. The scheduler counts max_steps x num_iterations.",
    )
    loss_type: Literal["grpo", "dapo", "dr_grpo"] = Field("grpo", description="TRL loss aggregation variant.")
    beta: float = Field(0.0, ge=0, description="KL coefficient to the frozen start policy (0: no reference model).")
    epsilon: float = Field(0.2, gt=0, description="Lower clip range of the importance ratio.")
    epsilon_high: float | None = Field(None, description="Upper clip range (DAPO); None: same as epsilon.")
    scale_rewards: Literal["group", "batch", "none"] = Field("group", description="Advantage std scaling (TRL).")
    schedule: Literal["joint", "alternate"] = Field(
        "joint",
        description="Update both roles every step, or "
        "alternate a stage of the first role and one of the second "
        "(CoRe-Code's Planner stage / Coder stage).",
    )
    alternate_every: int = Field(1, ge=1, description="Steps per stage when schedule=alternate.")
    rl_coef: float = Field(
        1.0,
        ge=0,
        description="Weight of the GRPO (policy-gradient) loss in each update. 0: the ptx-only control: no rollouts, "
        "each update is ptx_coef x the SFT loss on the batches the GRPO run reads, with its steps, learning rate and "
        "optimizer (needs ptx_coef > 0).",
    )

    # PPO-ptx (InstructGPT): the SFT objective stays in every update
    ptx_coef: float = Field(
        0.0,
        ge=0,
        description="Weight of a language-modelling loss on a batch of the role's SFT data, added to each "
        "GRPO update (InstructGPT's PPO-ptx): RL may not unlearn what SFT taught. 0: off.",
    )
    ptx_data: dict[str, str] = Field(
        default_factory=dict,
        description="Per role, the SFT dataset (JSONL rows with prompt and completion) the ptx "
        "loss reads; a role without one gets no ptx term.",
    )
    ptx_batch_size: int = Field(8, ge=1, description="SFT rows per update for the ptx loss.")

    # LoRA (peft): an adapter per role, on its own base or on one shared base
    lora: LoraParams = Field(
        default_factory=_team_lora,
        description="LoRA per role (enabled: false trains all weights); the KL reference is the adapter off.",
    )
    shared_base: bool = Field(
        False,
        description="One base model + one LoRA adapter per role instead of two models; needs lora.enabled; one "
        "process, or one per GPU under DDP (not FSDP2). The base is the first role's start, with fresh adapters; or, "
        "when both starts are LoRA adapter directories on the same base (sft.lora.merge: false), that base with each "
        "role's adapter trained on.",
    )

    # Checkpoints, evaluation during training
    save_steps: int = Field(20, ge=1, description="Write a resumable checkpoint every N steps.")
    save_total_limit: int = Field(2, ge=1, description="Keep the newest N checkpoints.")
    resume: bool = Field(True, description="Continue from the newest checkpoint in checkpoint_dir if there is one.")
    eval_steps: int = Field(50, ge=0, description="Evaluate on the val subset every N steps (0: only at the end).")
    eval_problems: int = Field(
        16, ge=0, description="Problems of the in-training evaluation, a seeded sample of val_problems (0: skip)."
    )

    # Hardware
    bf16: bool = Field(
        False,
        description="bf16 for both roles (one accelerate mixed-precision setting). A full fine-tune keeps fp32 master "
        "weights under bf16 autocast and samples from a bf16 copy synced every step; with LoRA the frozen base is "
        "loaded in bf16, only the adapter is fp32, and the model samples itself (no copy).",
    )
    gradient_checkpointing: bool = Field(False, description="Gradient checkpointing in the role models.")
    attn_implementation: str | None = Field(
        None,
        description="transformers attn_implementation the role models are loaded with (sdpa, eager, "
        "flash_attention_2, ...); None: transformers' default.",
    )
    roles: dict[str, RoleModelParams] = Field(
        default_factory=dict,
        description="Per-role overrides of lora, gradient_checkpointing and attn_implementation, keyed by role name "
        "(grpo.team: planner, coder; grpo.magrpo: helper, main). With shared_base only lora may differ.",
    )

    role_names: ClassVar[tuple[str, ...]] = ()

    @property
    def has_ptx(self) -> bool:
        """Whether the updates carry the ptx term: a weight, and SFT rows for it to read."""
        return bool(self.ptx_coef and self.ptx_data)

    def role_model(self, role: str) -> RoleModelParams:
        """``role``'s lora, gradient_checkpointing and attn_implementation: its override, else the section's."""
        own = self.roles.get(role, RoleModelParams())
        return RoleModelParams(
            lora=self.lora
            if own.lora is None
            else self.lora.model_copy(update=own.lora.model_dump(exclude_unset=True)),
            gradient_checkpointing=self.gradient_checkpointing
            if own.gradient_checkpointing is None
            else own.gradient_checkpointing,
            attn_implementation=own.attn_implementation or self.attn_implementation,
            learning_rate=own.learning_rate or self.learning_rate,
            temperature=own.temperature or self.temperature,
            beta=self.beta if own.beta is None else own.beta,
        )

    @field_validator("val_problems")
    @classmethod
    def _not_test(cls, path: str) -> str:
        if is_test_split(path):
            raise ValueError(f"{path}: in-training evaluation reads the dev split, never a test split")
        return path

    @model_validator(mode="after")
    def _check_roles(self):
        unknown = sorted(set(self.roles) - set(self.role_names))
        if unknown and self.role_names:
            raise ValueError(f"roles: {', '.join(unknown)} is no role of this trainer ({', '.join(self.role_names)})")
        for role in self.role_names:
            lora = self.role_model(role).lora
            if self.shared_base and not lora.enabled:
                raise ValueError(
                    f"shared_base needs lora.enabled: true for every role ({role}: one LoRA adapter per role on one "
                    "base)"
                )
            if lora.enabled and not lora.merge:
                raise ValueError(f"lora.merge ({role}): the GRPO trainers save merged checkpoints; set it true")
        if not self.rl_coef and not self.has_ptx:
            raise ValueError("rl_coef: 0 (the ptx-only control) needs ptx_coef > 0 and ptx_data: nothing would train")
        if self.shared_base:
            for role, own in self.roles.items():
                if own.gradient_checkpointing is not None or own.attn_implementation is not None:
                    raise ValueError(
                        f"roles.{role}: with shared_base both roles are one model; set gradient_checkpointing and "
                        "attn_implementation for the section, not per role"
                    )
        return self


class PtxControlParams(BaseModel):
    """Where ``corecode grpo-team --ptx-control`` writes: the team's GRPO recipe (``grpo.team``) with the RL term
    zeroed (``rl_coef: 0``), the method ``planner_coder_ptx``."""

    model_config = ConfigDict(extra="forbid")

    planner_output: str = Field("data/checkpoints/ptx_planner", description="Final Planner of the ptx-only control.")
    coder_output: str = Field("data/checkpoints/ptx_coder", description="Final Coder of the ptx-only control.")
    checkpoint_dir: str = Field("data/run_state/grpo_ptx", description="Its resumable training checkpoints.")
    log_path: str = Field("data/reports/train/grpo_ptx.json", description="Its per-step log (JSON list).")


class TeamGRPOParams(TwoRoleGRPOParams):
    """Collaborative GRPO of the Planner -> Coder team (``corecode grpo-team``): G_p plans per problem, G_c programs
    per plan; the Planner is rewarded through the Coder's results with its plan."""

    role_names: ClassVar[tuple[str, ...]] = ("planner", "coder")

    planner_model: str = Field("data/checkpoints/sft_planner", description="Planner start (and KL reference).")
    coder_model: str = Field("data/checkpoints/sft_coder", description="Coder start (and KL reference).")
    planner_output: str = Field("data/checkpoints/grpo_planner", description="Final Planner (save_pretrained).")
    coder_output: str = Field("data/checkpoints/grpo_coder", description="Final Coder (save_pretrained).")
    checkpoint_dir: str = Field("data/run_state/grpo_team", description="Resumable training checkpoints.")
    log_path: str = Field("data/reports/train/grpo_team.json", description="Per-step log (JSON list) for dvc plots.")

    num_plans: int = Field(1, ge=1, description="G_p: plans the Planner samples per problem.")
    num_programs: int = Field(2, ge=1, description="G_c: programs the Coder samples per plan.")
    pool_identical_plans: bool = Field(
        False,
        description="Plans of one problem with the same text share one Planner reward, the mean over all their "
        "programs (one value estimate per distinct plan instead of G_c programs' noise per copy).",
    )
    distinct_plan_tries: int = Field(
        0,
        ge=0,
        description="Distinct plans by construction: a sampled plan whose text (stripped) repeats an earlier plan of "
        "its problem is sampled again, one plan per duplicate, for up to this many extra rounds; duplicates left "
        "after the last round are kept (0: off, the plans as sampled). planner/distinct_plan_frac logs the share of "
        "problems whose plans are all distinct either way.",
    )
    gold_plans: int = Field(
        0,
        ge=0,
        description="Off-policy guidance for the Planner (LUFFY's mixed-policy GRPO, Yan et al. 2025): in the group "
        "of each training problem that has a gold plan (Problem.plan; composite's do), the last gold_plans of its "
        "num_plans plans are the gold plan instead of samples. The Coder writes programs from it and it is rewarded "
        "and weighted like any plan, so the Planner is pushed towards it only as far as the Coder does better with "
        "it than with the Planner's own plans: a plan shape the Planner never samples (a chain longer than any SFT "
        "row) gets a chance to earn credit. A gold plan longer than max_plan_tokens is not used. Less than "
        "num_plans (the group keeps a sample of its own); 0: off, every plan sampled.",
    )
    max_plan_tokens: int = Field(64, ge=1, description="Max new tokens of a plan.")
    max_code_tokens: int = Field(96, ge=1, description="Max new tokens of a program.")
    frozen_roles: list[Literal["planner", "coder"]] = Field(
        default_factory=lambda: ["planner"],
        description="Roles sampled but never updated ([planner]: train the Coder on the live Planner's plans).",
    )

    ptx_coef: float = Field(2.0, ge=0, description=TwoRoleGRPOParams.model_fields["ptx_coef"].description)
    ptx_data: dict[str, str] = Field(
        default_factory=lambda: {"planner": "data/processed/planner.jsonl", "coder": "data/processed/coder.jsonl"},
        description=TwoRoleGRPOParams.model_fields["ptx_data"].description,
    )

    coder_reward: CoderRewardWeights = Field(default_factory=CoderRewardWeights, description="The Coder's reward.")
    planner_reward: PlannerRewardWeights = Field(
        default_factory=PlannerRewardWeights, description="The Planner's reward (through the Coder's)."
    )
    ptx_control: PtxControlParams = Field(
        default_factory=PtxControlParams,
        description="Outputs of the ptx-only control (`corecode grpo-team --ptx-control`, stage grpo_ptx): this "
        "section's recipe with rl_coef 0.",
    )
    planner_device: str | None = Field(None, description="Device of the Planner (e.g. cuda:0); None: accelerator's.")
    coder_device: str | None = Field(None, description="Device of the Coder (e.g. cuda:1); None: accelerator's.")

    @model_validator(mode="after")
    def _check_gold_plans(self):
        if self.gold_plans and self.gold_plans >= self.num_plans:
            raise ValueError(
                f"gold_plans ({self.gold_plans}) must be less than num_plans ({self.num_plans}): each group keeps at "
                "least one plan the Planner sampled"
            )
        return self


class MAGRPOParams(TwoRoleGRPOParams):
    """MAGRPO-style helper/main GRPO (``corecode grpo-magrpo``): the helper writes helper functions, the main agent
    the entry point; one shared tiered reward per joint program."""

    role_names: ClassVar[tuple[str, ...]] = ("helper", "main")

    helper_model: str = Field("data/checkpoints/sft_coder", description="Helper start (and KL reference).")
    main_model: str = Field("data/checkpoints/sft_coder", description="Main agent start (and KL reference).")
    helper_output: str = Field("data/checkpoints/magrpo_helper", description="Final helper (save_pretrained).")
    main_output: str = Field("data/checkpoints/magrpo_main", description="Final main agent (save_pretrained).")
    checkpoint_dir: str = Field("data/run_state/magrpo", description="Resumable training checkpoints.")
    log_path: str = Field("data/reports/train/grpo_magrpo.json", description="Per-step log (JSON list).")

    num_generations: int = Field(4, ge=2, description="G: helper completions per problem (joint groups of size G).")
    max_helper_tokens: int = Field(64, ge=1, description="Max new tokens of the helper's code.")
    max_main_tokens: int = Field(96, ge=1, description="Max new tokens of the main agent's code.")
    problems_per_step: int = Field(
        8, ge=1, description="Problems per step (per process); x num_generations: the team's 32 programs a step."
    )
    max_steps: int = Field(80, ge=1, description="Optimizer steps (each step = one rollout batch).")
    learning_rate: float = Field(1e-4, gt=0, description="AdamW learning rate (both agents).")
    ptx_coef: float = Field(2.0, ge=0, description=TwoRoleGRPOParams.model_fields["ptx_coef"].description)
    ptx_data: dict[str, str] = Field(
        default_factory=lambda: {"helper": "data/processed/coder.jsonl", "main": "data/processed/coder.jsonl"},
        description=TwoRoleGRPOParams.model_fields["ptx_data"].description
        + " (Both agents start from the Coder's SFT checkpoint: its rows.)",
    )
    frozen_roles: list[Literal["helper", "main"]] = Field(
        default_factory=list, description="Agents sampled but never updated."
    )

    reward: MAGRPORewardWeights = Field(default_factory=MAGRPORewardWeights, description="The shared tiered reward.")
    helper_device: str | None = Field(None, description="Device of the helper (e.g. cuda:0); None: accelerator's.")
    main_device: str | None = Field(None, description="Device of the main agent (e.g. cuda:1); None: accelerator's.")


class GRPOParams(BaseModel):
    """The ``grpo`` section: one sub-section per trainer."""

    model_config = ConfigDict(extra="forbid")

    team: TeamGRPOParams = Field(default_factory=TeamGRPOParams, description="`corecode grpo-team` (stage grpo).")
    magrpo: MAGRPOParams = Field(default_factory=MAGRPOParams, description="`corecode grpo-magrpo` (stage magrpo).")
    single: SingleGRPOParams = Field(
        default_factory=SingleGRPOParams, description="`corecode grpo-single [--plan-then-code]` (stage grpo_single)."
    )
