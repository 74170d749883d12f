"""``params.yaml``: one section per pipeline stage, validated on load.

Each section's model lives beside the code that uses it (``corecode/<package>/config.py``) so that every knob is
defined and documented once, next to its reader. This module only assembles them and turns validation errors into
messages that name the file and the offending key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from corecode.agents.config import AgentsParams
from corecode.data.config import DataParams
from corecode.evaluation.config import EvaluateParams
from corecode.generation.config import GenerationParams
from corecode.models.config import ModelParams
from corecode.paths import PARAMS_FILE
from corecode.pipeline.config import ReportParams
from corecode.sandbox.config import SandboxParams
from corecode.tracking.config import PromoteParams, TrackingParams
from corecode.training.config import GRPOParams, SFTParams


class ConfigError(ValueError):
    """A params file is missing, unreadable or invalid; the message names the file and key."""


class Params(BaseModel):
    """The whole of ``params.yaml``."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, description="Global seed: data generation, init, training and sampling derive from it.")
    model: ModelParams = Field(
        default_factory=ModelParams,
        description="corecode init-model (stage init_model): the base checkpoint every stage starts from",
    )
    data: DataParams = Field(
        default_factory=DataParams, description="corecode build-data / validate-data (stages build_data, validate_data)"
    )
    sandbox: SandboxParams = Field(
        default_factory=SandboxParams, description="corecode.sandbox: every reward and every metric (grpo*, evaluate)"
    )
    generation: GenerationParams = Field(
        default_factory=GenerationParams,
        description="generation backend of evaluate, solve and serve; use_chat_template also for sft and grpo*",
    )
    agents: AgentsParams = Field(
        default_factory=AgentsParams,
        description="teams (methods) and per-role sampling: evaluate, solve, the nightly champion flow",
    )
    sft: SFTParams = Field(
        default_factory=SFTParams,
        description="corecode sft --role R (stage sft@R); sft.<role> overrides the shared keys for one role",
    )
    grpo: GRPOParams = Field(
        default_factory=GRPOParams,
        description="one sub-section per trainer: grpo.team "
        "(stage grpo), grpo.magrpo (stage magrpo), grpo.single (stage grpo_single)",
    )
    evaluate: EvaluateParams = Field(
        default_factory=EvaluateParams, description="corecode evaluate --method M (stage evaluate@M)"
    )
    report: ReportParams = Field(default_factory=ReportParams, description="corecode metrics / report (stage report)")
    tracking: TrackingParams = Field(default_factory=TrackingParams, description="MLflow tracking (every stage)")
    promote: PromoteParams = Field(default_factory=PromoteParams, description="corecode promote (stage promote)")
    baselines: list[Literal["pta"]] = Field(
        default_factory=list,
        description="Optional baselines (baselines/dvc.yaml) DVC runs beside the pipeline; [] leaves them out of "
        "every dvc command; pta: plan-then-code in one model (SFT, then TRL GRPO).",
    )


PARAMS_HEADER = """\
# corecode parameters: the embedded default (CPU, minutes). Every value here is the default defined, with its
# description, beside the code that reads it (corecode/<package>/config.py); tests/test_config.py holds this file
# to those defaults. Regenerate it with `python -m corecode.config > params.yaml` after changing a default.
# Profiles for real models and GPUs override a few keys: configs/profiles/, `corecode profile apply`.
"""


def defaults_yaml() -> str:
    """params.yaml of the embedded default: every section of :class:`Params` at its defaults, each under a comment
    naming its reader."""
    defaults = Params().model_dump(mode="json")
    parts = [PARAMS_HEADER]
    for name, field in Params.model_fields.items():
        section = yaml.safe_dump({name: defaults[name]}, sort_keys=False, width=120)
        parts.append(f"# --- {name}: {field.description}\n{section}")
    return "\n".join(parts)


def _key_lines(text: str) -> dict[tuple, int]:
    """``{key path: 1-based line}`` of every mapping key and list item in a YAML text (for error messages)."""
    lines: dict[tuple, int] = {}

    def walk(node, loc: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[(*loc, key.value)] = key.start_mark.line + 1
                walk(value, (*loc, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines[(*loc, i)] = item.start_mark.line + 1
                walk(item, (*loc, i))

    try:
        walk(yaml.compose(text), ())
    except yaml.YAMLError:
        pass
    return lines


def _format_errors(path: Path, err: ValidationError) -> str:
    """One line per invalid key, each with the line of the file it is on (of its section, when the key is not in the
    file, e.g. a missing one or an override)."""
    key_lines = _key_lines(path.read_text()) if path.is_file() else {}
    lines = [f"{path}: invalid parameters:"]
    for e in err.errors():
        loc = tuple(str(p) if not isinstance(p, int) else p for p in e["loc"])
        key = ".".join(str(p) for p in loc) or "<root>"
        found = next((key_lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in key_lines), None)
        where = f" (line {found})" if found else ""
        lines.append(f"  {key}{where}: {e['msg']} (got {e.get('input')!r:.80})")
    return "\n".join(lines)


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    node = tree
    *parents, leaf = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {p!r} is not a section")
    node[leaf] = value


def read_params_tree(path: str | Path) -> dict:
    """The raw mapping of sections in a params (or profile) file, before validation."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: params file not found")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping of params sections")
    return raw


def load_params(path: str | Path = PARAMS_FILE, overrides: dict[str, Any] | list[str] | None = None) -> Params:
    """Read and validate a params file. ``overrides`` are ``{"sft.max_steps": 10}`` or ``["sft.max_steps=10"]``."""
    path = Path(path)
    raw = read_params_tree(path)
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


if __name__ == "__main__":
    print(defaults_yaml(), end="")
