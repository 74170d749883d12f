"""Every params key that a script, a doc or a variants file passes as an override (`--set KEY=VALUE`, a quoted
"KEY=VALUE" in a Python script, a key of a sweep's variants file) names a field of the config models. A key that a
config change renamed or removed otherwise fails only when a user runs the script, after its first stages."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from corecode.config import Params

ROOT = Path(__file__).resolve().parents[1]
DOTTED = r"([a-z_][a-z0-9_]*(?:\.[A-Za-z0-9_\-]+)+)="
SET_FLAG = re.compile(r"--set[ =]+['\"]?" + DOTTED)
QUOTED = re.compile(r"['\"]" + DOTTED)
SCRIPTS = ["benchmarks/*.sh", "benchmarks/*.py", "notebooks/*.py", "flows/*.py", "docs/*.md", "README.md", "Makefile"]
VARIANTS = ["benchmarks/*.yaml", "notebooks/*.yaml"]


def _unwrap(annotation):
    """X from X | None, Optional[X], Annotated[X, ...]; unions of several models are not used in the config."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _unwrap(args[0])
    if typing.get_origin(annotation) is typing.Annotated:
        return _unwrap(args[0])
    return annotation


def key_error(dotted: str, model: type[BaseModel] = Params) -> str | None:
    """Why the dotted key names no field of the config models (None: it does)."""
    node = model
    parts = dotted.split(".")
    i = 0
    while i < len(parts):
        if isinstance(node, type) and issubclass(node, BaseModel):
            if parts[i] not in node.model_fields:
                return f"{'.'.join(parts[: i + 1])}: no such field of {node.__name__}"
            node = _unwrap(node.model_fields[parts[i]].annotation)
        elif typing.get_origin(node) is dict:  # a mapping's key (roles.planner, per_method.<team>) is free
            node = _unwrap(typing.get_args(node)[1])
        else:
            return f"{'.'.join(parts[:i])} is a value, not a section"
        i += 1
    return None


def _overrides() -> list[tuple[str, str]]:
    found = set()
    sections = set(Params.model_fields)
    for pattern in SCRIPTS:
        for path in sorted(ROOT.glob(pattern)):
            text = path.read_text()
            matches = [*SET_FLAG.finditer(text), *(QUOTED.finditer(text) if path.suffix == ".py" else [])]
            for m in matches:
                if m.group(1).split(".")[0] in sections:  # not `git -c user.name=...` and the like
                    line = text.count("\n", 0, m.start()) + 1
                    found.add((m.group(1), f"{path.relative_to(ROOT)}:{line}"))
    for pattern in VARIANTS:
        for path in sorted(ROOT.glob(pattern)):
            for name, spec in (yaml.safe_load(path.read_text()) or {}).items():
                keys = spec if isinstance(spec, dict) else [s.split("=", 1)[0] for s in spec]
                found.update((k, f"{path.relative_to(ROOT)}: {name}") for k in keys)
    return sorted(found)


def test_every_override_in_scripts_docs_and_variants_names_a_config_field():
    found = _overrides()
    assert len(found) > 50  # the patterns still find the scripts' overrides
    bad = [f"{where}: {key_error(key)}" for key, where in found if key_error(key)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ("grpo.team.learning_rate", None),
        ("grpo.team.roles.planner.temperature", None),  # a role's name is a mapping key
        ("evaluate.per_method.planner_coder_grpo.max_problems", None),
        ("evaluate.methods", "evaluate.methods: no such field of EvaluateParams"),
        ("grpo.team.roles.planner.top_k", "grpo.team.roles.planner.top_k: no such field of RoleModelParams"),
        ("grpo.team.learning_rate.x", "grpo.team.learning_rate is a value, not a section"),
    ],
)
def test_key_error_names_the_first_part_that_is_not_a_field(key, error):
    assert key_error(key) == error
