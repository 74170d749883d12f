"""Parameters of the ``report`` section of params.yaml: ``corecode metrics`` and ``corecode report`` (stage report).

The methods themselves are the pipeline's ``evaluate@METHOD`` stages (dvc.yaml's ``evaluate`` foreach, the one list of
methods); the report covers every method evaluated under ``data/reports/eval/``.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ReportParams(BaseModel):
    """Paired comparisons between methods and their bootstrap."""

    model_config = ConfigDict(extra="forbid")

    comparisons: list[tuple[str, str]] = Field(
        default_factory=lambda: [
            ("planner_coder_grpo", "planner_coder_sft"),
            ("planner_coder_grpo", "planner_coder_ptx"),
            ("planner_coder_grpo", "single_grpo"),
            ("planner_coder_grpo", "magrpo"),
            ("planner_coder_ptx", "planner_coder_sft"),
            ("planner_coder_grpo_retrieval", "planner_coder_grpo"),
            ("planner_coder_grpo_debug", "planner_coder_grpo"),
            ("planner_coder_sft", "single_sft"),
            ("single_grpo", "single_sft"),
        ],
        description="(a, b) method pairs compared on every benchmark with a paired bootstrap (delta = a - b).",
    )
    n_resamples: int = Field(5000, ge=100, description="Bootstrap resamples of each paired comparison.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Confidence level of bootstrap intervals.")
    alternative: Literal["two-sided", "greater"] = Field(
        "greater", description="Paired bootstrap test: 'greater' asks 'is A better than B?', 'two-sided' 'A != B?'."
    )
