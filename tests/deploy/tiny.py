"""The tiny configuration of the whole pipeline that the share-nothing test runs (seconds per stage on a CPU)."""

from __future__ import annotations

from pathlib import Path

import yaml

GRPO = {"eval_steps": 0, "eval_problems": 2, "static_cache": False, "bf16": False, "gradient_checkpointing": False}
TINY = {
    "data": {"composite": {"n_train": 40, "n_val": 8, "n_test": 6, "n_rl": 8, "n_dev": 4}},
    "sft": {
        "max_steps": 2,
        "batch_size": 4,
        "check_n": 0,
        "logging_steps": 1,
        "torch_threads": 1,
        **{role: {"max_steps": 2} for role in ("planner", "coder", "single")},  # per-role overrides win
    },
    "grpo": {
        "team": {
            **GRPO,
            "problems_per_step": 1,
            "num_programs": 2,
            "max_plan_tokens": 16,
            "max_code_tokens": 24,
            "generation_batch_size": 4,
            "micro_batch_size": 4,
            "max_steps": 3,
            "save_steps": 1,
        },
        "magrpo": {
            **GRPO,
            "problems_per_step": 1,
            "num_generations": 2,
            "max_helper_tokens": 16,
            "max_main_tokens": 24,
            "max_steps": 1,
        },
        "single": {"batch_size": 2, "num_generations": 2, "max_completion_length": 24, "max_steps": 1},
    },
    "evaluate": {"benchmarks": ["composite_test"], "collaboration_gain": False},
    "report": {"n_resamples": 200},
    "promote": {"n_resamples": 200},
    "tracking": {"log_system_metrics": False},
}


def merge(raw: dict, over: dict) -> dict:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(raw.get(k), dict):
            merge(raw[k], v)
        else:
            raw[k] = v
    return raw


def write_tiny_params(params: Path, extra: dict | None = None) -> None:
    raw = yaml.safe_load(params.read_text())
    merge(raw, TINY)
    merge(raw, extra or {})
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
