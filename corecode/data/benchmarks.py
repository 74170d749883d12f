"""``load_benchmark(name, split)``: every problem set the project evaluates or trains on, by name.

Names: ``humaneval``; ``composite`` (with ``split``) or ``composite_<split>`` (train, val, test, dev, rl; read from
``data/processed/composite_<split>.jsonl`` when ``build-data`` has written it, else generated from params); the keys of
``data.sources`` in params.yaml; and the loader names ``mbpp``, ``humaneval_plus``, ``mbpp_plus``, ``livecodebench``,
``livebench``, ``code_contests``, ``apps``, ``codeforces`` (their test splits, read from their hub ids; where no hub is
reachable, configure a local path under the same name in ``data.sources``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corecode.data.config import DataParams, SourceSpec
from corecode.data.schema import Problem
from corecode.paths import PROCESSED


def _loader(kind: str) -> Callable[..., list[Problem]]:
    from corecode.data.loaders import (
        apps,
        code_contests,
        codeforces,
        evalplus,
        humaneval,
        livebench,
        livecodebench,
        mbpp,
    )

    return {
        "mbpp": mbpp.load_mbpp,
        "evalplus": evalplus.load_evalplus,
        "livecodebench": livecodebench.load_livecodebench,
        "livebench": livebench.load_livebench,
        "code_contests": code_contests.load_code_contests,
        "apps": apps.load_apps,
        "codeforces": codeforces.load_codeforces,
        "humaneval": lambda path=None, split=None, limit=None: humaneval.load_humaneval(path)[:limit],
    }[kind]


# Default hub locations of the loaders (used only when a name is not configured in data.sources).
HUB_DEFAULTS: dict[str, SourceSpec] = {
    "mbpp": SourceSpec(loader="mbpp", path="google-research-datasets/mbpp", name="full", split="test", role="eval"),
    "humaneval_plus": SourceSpec(loader="evalplus", path="evalplus/humanevalplus", split="test", role="eval"),
    "mbpp_plus": SourceSpec(loader="evalplus", path="evalplus/mbppplus", split="test", role="eval"),
    "livecodebench": SourceSpec(
        loader="livecodebench", path="livecodebench/code_generation_lite", split="test", role="eval"
    ),
    "livebench": SourceSpec(loader="livebench", path="livebench/coding", split="test", role="eval"),
    "code_contests": SourceSpec(loader="code_contests", path="deepmind/code_contests", split="test", role="eval"),
    "apps": SourceSpec(loader="apps", path="codeparrot/apps", split="test", role="eval"),
    "codeforces": SourceSpec(loader="codeforces", path="open-r1/codeforces", split="test", role="eval"),
}


def load_source(name: str, spec: SourceSpec) -> list[Problem]:
    """Problems of one configured source; ``source`` of each is ``name`` unless the loader fixes it."""
    fn = _loader(spec.loader)
    kwargs: dict = {"split": spec.split, "limit": spec.limit}
    if spec.loader == "mbpp":
        kwargs["name"] = spec.name
    if spec.loader == "evalplus":
        kwargs["source"] = name
    problems = fn(spec.path, **kwargs)
    return problems


def load_benchmark(
    name: str,
    split: str | None = None,
    params: DataParams | None = None,
    seed: int | None = None,
    processed_dir: str | Path = PROCESSED,
) -> list[Problem]:
    """Problems of benchmark ``name`` (see the module docstring). ``params``/``seed`` default to params.yaml's."""
    if name.startswith("composite"):
        split = split or (name.split("_", 1)[1] if "_" in name else None)
        if split not in ("train", "val", "test", "dev", "rl"):
            raise ValueError(f"benchmark {name!r}: composite needs split train|val|test|dev|rl, got {split!r}")
        path = Path(processed_dir) / f"composite_{split}.jsonl"
        if path.exists():
            from corecode.data.io import read_problems

            return read_problems(path)
        from corecode.data.composite import generate_composite

        params, seed = _params(params, seed)
        return generate_composite(params.composite, seed)[split]
    if name == "humaneval":
        from corecode.data.loaders.humaneval import load_humaneval

        return load_humaneval()
    if params is None:
        params, _ = _params(None, seed)
    spec = params.sources.get(name) or HUB_DEFAULTS.get(name)
    if spec is None:
        composite = [f"composite_{s}" for s in ("train", "val", "test", "dev")]
        known = ["humaneval", *composite, *params.sources, *HUB_DEFAULTS]
        raise ValueError(f"unknown benchmark {name!r}; known: {sorted(set(known))}")
    if split is not None:
        spec = spec.model_copy(update={"split": split})
    return load_source(name, spec)


def _params(params: DataParams | None, seed: int | None) -> tuple[DataParams, int]:
    if params is not None and seed is not None:
        return params, seed
    from corecode.config import load_params
    from corecode.paths import PARAMS_FILE

    full = load_params(PARAMS_FILE) if PARAMS_FILE.exists() else None
    return (params or (full.data if full else DataParams())), (seed if seed is not None else (full.seed if full else 0))
