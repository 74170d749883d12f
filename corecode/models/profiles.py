"""Params profiles: override files merged onto params.yaml (``corecode profile apply NAME``).

A profile is a YAML tree of params sections that names only the keys it changes: ``configs/profiles/NAME.yaml``, or
any file. Its header comment says what it is for and the GPU it fits (its first line is what ``corecode profile
list`` prints). :func:`apply_profile` deep-merges base params, profile and ``--set`` overrides and validates the result
with corecode's own ``Params``, so a bad key fails there, naming the file it came from. The Qwen2.5-Coder profiles
and the GPU each fits are listed in docs/profiles.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from corecode.config import ConfigError, read_params_tree
from corecode.paths import PARAMS_FILE

PROFILES_DIR = Path("configs/profiles")


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


def read_profile(profile: str | Path, directory: str | Path = PROFILES_DIR) -> tuple[str, dict]:
    """(where it came from, nested override tree) of a profile: a YAML file, or NAME for ``directory/NAME.yaml``."""
    path, named = Path(profile), Path(directory) / f"{profile}.yaml"
    if path.is_file() or path.suffix in (".yaml", ".yml"):
        return str(path), _read_tree(path)
    if named.is_file():
        return str(named), _read_tree(named)
    raise ProfileError(f"{profile}: no such profile file and no {named} (see `corecode profile list`)")


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
    """(name, where, description) of every profile: ``directory``'s *.yaml files, described by the first line of
    their header comment."""
    rows = []
    for path in sorted(Path(directory).glob("*.yaml")):
        comments = (line.lstrip("#").strip() for line in path.read_text().splitlines() if line.startswith("#"))
        rows.append((path.stem, str(path), next(comments, "")))
    return rows
