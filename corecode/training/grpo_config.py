"""Parameters of the ``grpo`` section of params.yaml: collaborative (Planner -> Coder) and MAGRPO team GRPO.

Field names follow TRL's ``GRPOConfig`` where the knob means the same thing (``loss_type``, ``beta``, ``epsilon``,
``scale_rewards``, ``temperature``, ``learning_rate``, ...). Defaults suit the embedded tiny CPU profile.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from corecode.training.sft_config import SingleGRPOParams


class CoderRewardWeights(BaseModel):
    """MAGRPO-style shaping of a program's reward; the total is a weighted sum of terms in [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    syntax: float = Field(0.1, description="Code was extracted and parses (verdict is not syntax_error).")
    runs: float = Field(0.1, description="Program ran without crashing, timing out or exceeding memory.")
    tests: float = Field(0.6, description="Per-test credit: weight times the fraction of tests passed.")
    passed: float = Field(0.2, description="Bonus when every test passes.")
    time: float = Field(0.0, description="Efficiency: reference wall time / program wall time (clipped to 1), "
                                         "only for passing programs. Non-deterministic: keep 0 for exact resumes.")
    memory: float = Field(0.0, description="Efficiency: reference peak memory / program peak memory (clipped to 1), "
                                           "only for passing programs (CoRe-Code's Coder memory term).")
    plan_adherence: float = Field(0.0, description="Team GRPO only: fraction of the plan's literal constants (quoted "
                                                   "strings, integers) that the program uses as literals. Credits the "
                                                   "Coder for following its partner's plan; 1.0 for a plan without "
                                                   "constants.")


class PlannerRewardWeights(BaseModel):
    """The Planner's reward: credit flows through the partner (the Coder's results under the plan)."""

    model_config = ConfigDict(extra="forbid")

    coder: float = Field(1.0, description="Mean Coder reward over the G_c programs written from this plan.")
    plan_format: float = Field(0.1, description="The plan is well formed (<plan> tags and numbered steps).")
    guidance: float = Field(0.0, description="PTA-GRPO-style guidance quality: fraction of the plan's programs that "
                                             "pass every test (rewards plans that lead to complete solutions).")
    time: float = Field(0.0, description="CoRe-Code's Planner time-efficiency term: mean reference/program wall "
                                         "time over the plan's passing programs. Non-deterministic.")


class MAGRPORewardWeights(BaseModel):
    """MAGRPO's tiered shared reward for helper/main code collaboration."""

    model_config = ConfigDict(extra="forbid")

    helper_defined: float = Field(0.1, description="The helper's code parses and defines a function other than the entry point.")
    main_defined: float = Field(0.1, description="The main agent's code parses and defines the entry point.")
    parses: float = Field(0.1, description="Helper + main together parse as Python.")
    tests: float = Field(0.6, description="Fraction of tests passed by the joint program.")
    uses_helper: float = Field(0.1, description="The entry point calls one of the helper's functions.")


class GRPOParams(BaseModel):
    """Team GRPO (``corecode grpo-team``) and MAGRPO (``corecode grpo-magrpo``)."""

    model_config = ConfigDict(extra="forbid")

    # Models and data
    planner_model: str = Field("data/checkpoints/sft_planner", description="Planner start (and KL reference).")
    coder_model: str = Field("data/checkpoints/sft_coder", description="Coder start (and KL reference).")
    planner_output: str = Field("data/checkpoints/grpo_planner", description="Final Planner (save_pretrained).")
    coder_output: str = Field("data/checkpoints/grpo_coder", description="Final Coder (save_pretrained).")
    train_problems: str = Field("data/processed/composite_train.jsonl", description="Problem JSONL to train on.")
    val_problems: str = Field("data/processed/composite_val.jsonl", description="Problem JSONL for Collaboration Gain.")
    checkpoint_dir: str = Field("data/checkpoints/grpo_team_state", description="Resumable training checkpoints.")
    log_path: str = Field("data/reports/train/grpo_team.json", description="Per-step log (JSON list) for dvc plots.")

    # Rollout shape
    problems_per_step: int = Field(2, ge=1, description="Problems per step (per process).")
    num_plans: int = Field(2, ge=1, description="G_p: plans the Planner samples per problem.")
    num_programs: int = Field(2, ge=1, description="G_c: programs the Coder samples per plan.")
    max_plan_tokens: int = Field(64, ge=1, description="Max new tokens of a plan.")
    max_code_tokens: int = Field(96, ge=1, description="Max new tokens of a program.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature in rollouts.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling in rollouts.")
    generation_batch_size: int = Field(16, ge=1, description="Prompts per generate call; scoring of one chunk "
                                                              "overlaps generation of the next.")
    static_cache: bool = Field(False, description="Static KV cache in generate, compiled by transformers (GPU: "
                                                  "3.1x faster team step on H200, see docs/benchmarks.md; CPU: off).")
    lean_decode: bool | None = Field(
        None, description="Sample rollouts with corecode's eager decode loop (corecode.generation.lean_decode: no "
        "generate overhead, finished rows dropped) instead of generate. null (auto): on CPU for Llama/Qwen2-shaped "
        "models (measured faster there, docs/benchmarks.md); true: wherever the model is supported; false: generate.")

    # Optimisation (TRL GRPOConfig names)
    max_steps: int = Field(4, ge=1, description="Optimizer steps (each step = one rollout batch).")
    learning_rate: float = Field(1e-4, gt=0, description="AdamW learning rate (both roles).")
    lr_scheduler_type: str = Field("constant", description="transformers scheduler name (linear, cosine, constant).")
    warmup_steps: int = Field(0, ge=0, description="Scheduler warmup steps.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping per role.")
    num_iterations: int = Field(
        1, ge=1, description="Optimizer steps per rollout batch (TRL's num_iterations, DeepSeekMath's mu); later ones "
        "clip the ratio against the sampling policy's log-probs. Generation is most of a CPU step, so mu > 1 buys "
        "gradient steps for little time (docs/benchmarks.md). The scheduler counts max_steps x num_iterations.")
    micro_batch_size: int = Field(8, ge=1, description="Sequences per forward/backward (gradient accumulation).")
    loss_type: Literal["grpo", "dapo", "dr_grpo"] = Field("grpo", description="TRL loss aggregation variant.")
    beta: float = Field(0.0, ge=0, description="KL coefficient to the frozen SFT policy (0: no reference model).")
    epsilon: float = Field(0.2, gt=0, description="Lower clip range of the importance ratio.")
    epsilon_high: float | None = Field(None, description="Upper clip range (DAPO); None: same as epsilon.")
    scale_rewards: Literal["group", "batch", "none"] = Field("group", description="Advantage std scaling (TRL).")
    schedule: Literal["joint", "alternate"] = Field("joint", description="Update both roles every step, or "
                                                    "alternate Planner stage / Coder stage (CoRe-Code).")
    alternate_every: int = Field(1, ge=1, description="Steps per stage when schedule=alternate.")
    frozen_roles: list[Literal["planner", "coder", "helper", "main"]] = Field(
        default_factory=list,
        description="Roles sampled but never updated (e.g. [planner]: train the Coder on the live Planner's plans). "
        "Names of the team trainer (planner, coder) or MAGRPO's (helper, main); each trainer ignores the other's.",
    )

    # PPO-ptx (InstructGPT): the SFT objective stays in every update
    ptx_coef: float = Field(
        0.0, ge=0, description="Weight of a language-modelling loss on a batch of the role's SFT data, added to each "
        "GRPO update (InstructGPT's PPO-ptx): RL may not unlearn what SFT taught. 0: off.")
    ptx_data: dict[str, str] = Field(
        default_factory=lambda: {"planner": "data/processed/planner.jsonl", "coder": "data/processed/coder.jsonl"},
        description="Per role, the SFT dataset (JSONL rows with prompt and completion) the ptx loss reads; a role "
        "without one (MAGRPO's helper and main) gets no ptx term.")
    ptx_batch_size: int = Field(8, ge=1, description="SFT rows per update for the ptx loss.")

    # LoRA (peft): an adapter per role, on its own base or on one shared base; lora_r 0 = full fine-tune
    shared_base: bool = Field(False, description="One base model (planner_model) + one LoRA adapter per role "
                                                 "instead of two models; needs lora_r > 0; one process.")
    lora_r: int = Field(0, ge=0, description="LoRA rank per role (0: train all weights). KL reference = adapter off.")
    lora_alpha: int = Field(16, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout (0 keeps rollouts and loss consistent).")
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names that get adapters.")

    # Rewards
    coder_reward: CoderRewardWeights = Field(default_factory=CoderRewardWeights)
    planner_reward: PlannerRewardWeights = Field(default_factory=PlannerRewardWeights)
    magrpo_reward: MAGRPORewardWeights = Field(default_factory=MAGRPORewardWeights)
    num_generations: int = Field(4, ge=2, description="MAGRPO: G generations per agent (joint groups of size G).")
    magrpo_helper_model: str = Field("data/checkpoints/sft_coder", description="MAGRPO helper start.")
    magrpo_main_model: str = Field("data/checkpoints/sft_coder", description="MAGRPO main start.")
    magrpo_helper_output: str = Field("data/checkpoints/magrpo_helper", description="MAGRPO helper output.")
    magrpo_main_output: str = Field("data/checkpoints/magrpo_main", description="MAGRPO main output.")
    magrpo_checkpoint_dir: str = Field("data/checkpoints/magrpo_state", description="MAGRPO resumable checkpoints.")
    magrpo_log_path: str = Field("data/reports/train/grpo_magrpo.json", description="MAGRPO per-step log.")
    magrpo_max_steps: int | None = Field(None, ge=1, description="MAGRPO optimizer steps (None: max_steps).")
    magrpo_problems_per_step: int | None = Field(None, ge=1, description="MAGRPO problems per step (None: "
                                                                       "problems_per_step).")
    magrpo_learning_rate: float | None = Field(None, gt=0, description="MAGRPO learning rate (None: learning_rate).")

    # Checkpoints, evaluation, logging
    save_steps: int = Field(2, ge=1, description="Write a resumable checkpoint every N steps.")
    save_total_limit: int = Field(2, ge=1, description="Keep the newest N checkpoints.")
    resume: bool = Field(True, description="Continue from the newest checkpoint in checkpoint_dir if there is one.")
    eval_steps: int = Field(2, ge=0, description="Collaboration Gain on the val subset every N steps (0: only at end).")
    eval_problems: int = Field(8, ge=0, description="Size of the val subset for Collaboration Gain (0: skip).")

    # Single-agent baselines (owned by the SFT engineer's module; reward weights above are shared)
    single: SingleGRPOParams = Field(default_factory=SingleGRPOParams,
                                     description="Single-agent GRPO / plan-then-code baselines (`corecode grpo-single`).")

    # Hardware
    bf16: bool = Field(False, description="bf16 autocast (GPU).")
    gradient_checkpointing: bool = Field(False, description="Gradient checkpointing in both role models.")
    planner_device: str | None = Field(None, description="Device of the Planner (e.g. cuda:0); None: accelerator's.")
    coder_device: str | None = Field(None, description="Device of the Coder (e.g. cuda:1); None: accelerator's.")
