"""Parameters of the ``tracking`` and ``promote`` sections of params.yaml."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TrackingParams(BaseModel):
    """Where and how stages log to MLflow (one parent run per pipeline run, one nested run per stage)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Log stages to MLflow. Off: stage_run() is a no-op (nothing is written).")
    uri: str = Field(
        "sqlite:///mlflow.db",
        description="MLflow tracking URI; the MLFLOW_TRACKING_URI environment variable overrides it.",
    )
    experiment: str = Field("corecode", description="MLflow experiment that holds the pipeline's runs.")
    parent_run_file: str = Field(
        ".corecode/parent_run.json",
        description="Untracked file through which the stages of one `dvc repro` share their parent run id "
        "(CORECODE_PARENT_RUN_ID, set by the Prefect flows, takes precedence).",
    )
    parent_ttl_hours: float = Field(
        12.0,
        description="Stages run by hand (not under `dvc repro`) share the last parent run if it was touched less "
        "than this long ago; otherwise they open a new one.",
    )
    log_system_metrics: bool = Field(True, description="Log CPU/memory (and GPU if pynvml is present) per stage run.")
    system_metrics_interval_s: float = Field(
        10.0, description="Seconds between system-metric samples (MLflow's default is 10)."
    )


class PromoteParams(BaseModel):
    """The promotion gate: which method's checkpoint is the candidate and how it must beat the champion."""

    model_config = ConfigDict(extra="forbid")

    model_name: str = Field("corecode-team", description="Registered model (Planner + Coder checkpoints together).")
    method: str = Field(
        "planner_coder_grpo",
        description="Candidate method: its checkpoint is registered and its per-problem results gate promotion.",
    )
    checkpoints: dict[str, str] = Field(
        default_factory=lambda: {"planner": "data/checkpoints/grpo_planner", "coder": "data/checkpoints/grpo_coder"},
        description="Role -> checkpoint dir of the candidate; each is logged under checkpoint/<role> of the version.",
    )
    gate_benchmark: str = Field("composite_test", description="Benchmark whose per-problem pass@1 decides promotion.")
    p_value_threshold: float = Field(
        0.05, gt=0, lt=1, description="Promote only if the paired bootstrap p-value (candidate > champion) is below."
    )
    alternative: Literal["greater", "two-sided"] = Field(
        "greater", description="Alternative hypothesis of the paired bootstrap (see corecode.evaluation.stats)."
    )
    n_resamples: int = Field(10_000, ge=100, description="Bootstrap resamples for the promotion test.")
    seed: int = Field(0, description="Seed of the bootstrap resampling (the test is deterministic given it).")
    alias: str = Field("champion", description="Registry alias that marks the promoted version.")
