"""``params.yaml``: one section per pipeline stage, validated on load.

Each section's model lives beside the code that uses it (``corecode/<package>/config.py``) so that every knob is
defined and documented once, next to its reader. This module only assembles them and turns validation errors into
messages that name the file and the offending key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from corecode.agents.config import AgentsParams
from corecode.data.config import DataParams
from corecode.evaluation.config import EvaluateParams
from corecode.generation.config import GenerationParams
from corecode.models.config import ModelParams
from corecode.paths import PARAMS_FILE
from corecode.sandbox.config import SandboxParams
from corecode.tracking.config import PromoteParams, TrackingParams
from corecode.training.config import GRPOParams, SFTParams


class ConfigError(ValueError):
    """A params file is missing, unreadable or invalid; the message names the file and key."""


class Params(BaseModel):
    """The whole of ``params.yaml``."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, description="Global seed: data generation, init, training and sampling derive from it.")
    model: ModelParams = Field(default_factory=ModelParams)
    data: DataParams = Field(default_factory=DataParams)
    sandbox: SandboxParams = Field(default_factory=SandboxParams)
    generation: GenerationParams = Field(default_factory=GenerationParams)
    agents: AgentsParams = Field(default_factory=AgentsParams)
    sft: SFTParams = Field(default_factory=SFTParams)
    grpo: GRPOParams = Field(default_factory=GRPOParams)
    evaluate: EvaluateParams = Field(default_factory=EvaluateParams)
    tracking: TrackingParams = Field(default_factory=TrackingParams)
    promote: PromoteParams = Field(default_factory=PromoteParams)


def _format_errors(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: invalid parameters:"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "<root>"
        lines.append(f"  {key}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    node = tree
    *parents, leaf = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {p!r} is not a section")
    node[leaf] = value


def load_params(path: str | Path = PARAMS_FILE, overrides: dict[str, Any] | list[str] | None = None) -> Params:
    """Read and validate a params file. ``overrides`` are ``{"sft.max_steps": 10}`` or ``["sft.max_steps=10"]``."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: params file not found")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping of sections")
    if overrides:
        items = overrides.items() if isinstance(overrides, dict) else (_split_override(o) for o in overrides)
        for k, v in items:
            _set_dotted(raw, k, v)
    try:
        return Params.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_format_errors(path, e)) from None


def _split_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected KEY=VALUE")
    key, value = text.split("=", 1)
    return key.strip(), yaml.safe_load(value)
