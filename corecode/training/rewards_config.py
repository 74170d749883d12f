"""Reward weights of the GRPO trainers: the Coder's and the Planner's (``grpo.team``), the single-agent baseline's
(``grpo.single.reward``, the Coder's shape) and MAGRPO's (``grpo.magrpo.reward``). Read by
``corecode.training.rewards``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CoderRewardWeights(BaseModel):
    """MAGRPO-style shaping of a program's reward; the total is a weighted sum of terms in [0, 1]."""

    model_config = ConfigDict(extra="forbid")

    syntax: float = Field(0.1, description="Code was extracted and parses (verdict is not syntax_error).")
    runs: float = Field(0.1, description="Program ran without crashing, timing out or exceeding memory.")
    tests: float = Field(0.6, description="Per-test credit: weight times the fraction of tests passed.")
    passed: float = Field(0.2, description="Bonus when every test passes.")
    time: float = Field(
        0.0,
        description="Efficiency: reference CPU time / program CPU time (clipped to 1), "
        "only for passing programs. Non-deterministic: keep 0 for exact resumes.",
    )
    memory: float = Field(
        0.0,
        description="Efficiency: reference peak memory / program peak memory (clipped to 1), "
        "only for passing programs (CoRe-Code's Coder memory term). Peak memory is what the program's process "
        "added over its start size, at least 1 MiB (corecode.sandbox.types.MEMORY_FLOOR_MB). Non-deterministic "
        "(a little: docs/benchmarks.md): keep 0 for exact resumes.",
    )
    plan_adherence: float = Field(
        0.0,
        description="Team GRPO only: fraction of the plan's literal constants (quoted "
        "strings, integers) that the program uses as literals. Credits the "
        "Coder for following its partner's plan; 1.0 for a plan without "
        "constants.",
    )


class PlannerRewardWeights(BaseModel):
    """The Planner's reward: credit flows through the partner (the Coder's results under the plan)."""

    model_config = ConfigDict(extra="forbid")

    coder: float = Field(1.0, description="Mean Coder reward over the G_c programs written from this plan.")
    plan_format: float = Field(0.1, description="The plan is well formed (<plan> tags and numbered steps).")
    guidance: float = Field(
        0.0,
        description="PTA-GRPO-style guidance quality: fraction of the plan's programs that "
        "pass every test (rewards plans that lead to complete solutions).",
    )
    time: float = Field(
        0.0,
        description="CoRe-Code's Planner time-efficiency term: mean reference/program CPU "
        "time over the plan's passing programs. Non-deterministic.",
    )
    coder_likelihood: float = Field(
        0.0,
        description="The Coder's mean per-token log-probability of the problem's reference program (as the SFT rows "
        "write it) given this plan: a dense, noise-free measure of how far the plan leads the Coder to a correct "
        "program. One no-grad Coder forward a plan; problems without a reference solution get 0.",
    )


class MAGRPORewardWeights(BaseModel):
    """MAGRPO's tiered shared reward for helper/main code collaboration."""

    model_config = ConfigDict(extra="forbid")

    helper_defined: float = Field(
        0.1, description="The helper's code parses and defines a function other than the entry point."
    )
    main_defined: float = Field(0.1, description="The main agent's code parses and defines the entry point.")
    parses: float = Field(0.1, description="Helper + main together parse as Python.")
    tests: float = Field(0.6, description="Fraction of tests passed by the joint program.")
    uses_helper: float = Field(0.1, description="The entry point calls one of the helper's functions.")
