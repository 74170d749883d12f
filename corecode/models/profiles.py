"""Params profiles: override files merged onto params.yaml (``corecode profile apply``), and built-in settings for
real Qwen2.5-Coder checkpoints.

A profile names only the keys it changes. A file profile is a YAML tree of params sections (``configs/profiles/*.yaml``,
its first comment line describes it); a built-in profile below is a set of dotted keys (also usable as
``corecode init-model --profile NAME``). :func:`apply_profile` deep-merges base params, profile and ``--set`` overrides
and validates the result with corecode's own ``Params``, so a bad key fails there, naming the file it came from.

Built-in profiles; memory figures are rough bf16 estimates for weights + LoRA optimizer state, not measurements.

| profile              | weights (bf16) | GPU for LoRA SFT/GRPO | LoRA r/alpha | grad. ckpt | gen. batch |
|----------------------|----------------|-----------------------|--------------|------------|------------|
| qwen2.5-coder-1.5b   | ~3 GiB         | 1x 24-80 GiB          | 16 / 32      | on         | 64         |
| qwen2.5-coder-7b     | ~15 GiB        | 1x 80 GiB             | 32 / 64      | on         | 32         |
| qwen2.5-coder-14b    | ~30 GiB        | 1x 80-141 GiB         | 64 / 128     | on         | 16         |

LoRA and gradient checkpointing apply to every trainer (``sft``, ``grpo.team``, ``grpo.magrpo``, ``grpo.single``).

Full fine-tuning needs roughly 16 bytes/parameter with AdamW (1.5B: ~24 GiB; 7B: ~112 GiB, i.e. several GPUs).
For GRPO at 7B+ prefer ``generation.backend: vllm`` (or an external ``vllm serve`` via ``backend: openai``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from corecode.config import ConfigError, read_params_tree
from corecode.paths import PARAMS_FILE

PROFILES_DIR = Path("configs/profiles")

_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
_TRAINERS = ("sft", "grpo.team", "grpo.magrpo", "grpo.single")


def _lora_everywhere(r: int, alpha: int) -> dict[str, object]:
    """A LoRA adapter of rank ``r`` and gradient checkpointing for every trainer."""
    keys: dict[str, object] = {}
    for section in _TRAINERS:
        keys |= {
            f"{section}.lora.enabled": True,
            f"{section}.lora.r": r,
            f"{section}.lora.alpha": alpha,
            f"{section}.lora.target_modules": list(_LORA_TARGETS),
            f"{section}.gradient_checkpointing": True,
        }
    return keys


PROFILES: dict[str, dict[str, object]] = {
    "embedded": {"model.name_or_path": "embedded"},
    "qwen2.5-coder-1.5b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "model.dtype": "bfloat16",
        **_lora_everywhere(16, 32),
        "generation.max_batch_size": 64,
    },
    "qwen2.5-coder-7b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-7B-Instruct",
        "model.dtype": "bfloat16",
        **_lora_everywhere(32, 64),
        "model.copy_weights": False,
        "generation.max_batch_size": 32,
    },
    "qwen2.5-coder-14b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-14B-Instruct",
        "model.dtype": "bfloat16",
        **_lora_everywhere(64, 128),
        "model.copy_weights": False,
        "generation.max_batch_size": 16,
    },
}


class ProfileError(ConfigError):
    """A profile that cannot be applied; the message names the file (or ``--set``) and the key."""


def deep_merge(base: dict, over: dict) -> dict:
    """``over`` wins; mappings merge key by key, anything else (lists included) is replaced whole."""
    out = dict(base)
    for key, value in over.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _nest(dotted: dict[str, Any]) -> dict:
    """``{"model.lora.r": 16}`` -> ``{"model": {"lora": {"r": 16}}}``."""
    tree: dict = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _read_tree(path: Path) -> dict:
    try:
        return read_params_tree(path)
    except ConfigError as e:
        raise ProfileError(str(e)) from None


def profile_name(profile: str | Path) -> str:
    """``configs/profiles/gpu-dev.yaml`` -> ``gpu-dev``; a name stays itself."""
    return Path(profile).name.removesuffix(".yaml").removesuffix(".yml")


def read_profile(profile: str | Path) -> tuple[str, dict]:
    """(where it came from, nested override tree) of a profile: a YAML file, NAME for ``configs/profiles/NAME.yaml``,
    or a built-in NAME."""
    path, named = Path(profile), PROFILES_DIR / f"{profile}.yaml"
    if path.is_file() or path.suffix in (".yaml", ".yml"):
        return str(path), _read_tree(path)
    if named.is_file():
        return str(named), _read_tree(named)
    if str(profile) in PROFILES:
        return f"built-in profile {profile}", _nest(PROFILES[str(profile)])
    raise ProfileError(
        f"{profile}: no such profile file, no {named} and no built-in profile of that name "
        "(see `corecode profile list`)"
    )


def _owner(layers: list[tuple[str, dict]], loc: list[str]) -> str:
    """The layer that set the deepest part of ``loc`` (the later one on a tie: it overrode the earlier)."""
    best, owner = 0, layers[1][0]
    for where, tree in layers:
        depth, node = 0, tree
        for key in loc:
            if not isinstance(node, dict) or key not in node:
                break
            node, depth = node[key], depth + 1
        if depth and depth >= best:
            best, owner = depth, where
    return owner


def apply_profile(profile: str | Path, base: str | Path = PARAMS_FILE, overrides: Iterable[str] | None = None) -> dict:
    """``base`` deep-merged with ``profile`` and then the ``KEY=VALUE`` overrides, validated as ``Params``; returns the
    merged tree (what to write as a full params file). Raises :class:`ProfileError` naming the file and key."""
    from pydantic import ValidationError

    from corecode.config import Params

    sets = {}
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ProfileError(f"--set {item!r}: expected KEY=VALUE")
        sets[key.strip()] = yaml.safe_load(value)
    layers = [(str(base), _read_tree(Path(base))), read_profile(profile), ("--set", _nest(sets))]
    merged: dict = {}
    for _, tree in layers:
        merged = deep_merge(merged, tree)
    try:
        Params.model_validate(merged)
    except ValidationError as e:
        by_owner: dict[str, list[str]] = {}
        for err in e.errors():
            loc = [str(part) for part in err["loc"]]
            by_owner.setdefault(_owner(layers, loc), []).append(f"{'.'.join(loc) or '<root>'}: {err['msg']}")
        raise ProfileError("; ".join(f"{where}: {'; '.join(keys)}" for where, keys in by_owner.items())) from None
    return merged


def list_profiles(directory: str | Path = PROFILES_DIR) -> list[tuple[str, str, str]]:
    """(name, where, description) of every profile: ``directory``'s *.yaml files, described by their first comment
    line, then the built-in ones."""
    rows = []
    for path in sorted(Path(directory).glob("*.yaml")):
        comments = (line.lstrip("#").strip() for line in path.read_text().splitlines() if line.startswith("#"))
        rows.append((path.stem, str(path), next(comments, "")))
    for name, keys in PROFILES.items():
        more = f" and {len(keys) - 1} more keys" if len(keys) > 1 else ""
        rows.append((name, "built-in", f"model.name_or_path={keys['model.name_or_path']}{more}"))
    return rows
