"""Benchmark registry for evaluation: ``get_benchmark(name) -> list[Problem]``.

The data package owns the loaders. When ``corecode.data.benchmarks.load_benchmark(name)`` exists, every name it
knows works here (``humaneval``, ``composite_test``, ``mbpp`` ...); until then only ``humaneval`` does. A path to a
JSONL file of ``Problem`` records (what ``corecode build-data`` writes under data/processed/) also works, so a
custom benchmark needs no code.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from pydantic import ValidationError

from corecode.data.schema import Problem


class BenchmarkError(ValueError):
    """Unknown benchmark or unreadable problem file; the message names it."""


def _data_loader():
    try:
        module = importlib.import_module("corecode.data.benchmarks")
    except ModuleNotFoundError as e:
        if e.name not in ("corecode.data.benchmarks",):
            raise  # the module exists but is broken: say so rather than hide it
        return None
    return getattr(module, "load_benchmark", None)


def load_problem_file(path: str | Path) -> list[Problem]:
    """Problems from a JSONL file, one ``Problem`` per line; errors name ``file:line``."""
    path = Path(path)
    problems = []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                problems.append(Problem.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError) as e:
                raise BenchmarkError(f"{path}:{lineno}: not a Problem record: {e}") from None
    if not problems:
        raise BenchmarkError(f"{path}: no problems in file")
    return problems


def get_benchmark(name: str) -> list[Problem]:
    """The problems of benchmark ``name`` (a registered name or a path to a Problem JSONL file)."""
    if name.endswith((".jsonl", ".json")) or Path(name).is_file():
        if not Path(name).is_file():
            raise BenchmarkError(f"{name}: benchmark file not found")
        return load_problem_file(name)
    loader = _data_loader()
    if loader is not None:
        try:
            return list(loader(name))
        except Exception as e:  # unknown name (ValueError), unreachable hub, broken file: say which benchmark
            raise BenchmarkError(f"benchmark {name!r} could not be loaded: {type(e).__name__}: {e}") from e
    if name == "humaneval":
        from corecode.data.loaders.humaneval import load_humaneval

        return load_humaneval()
    raise BenchmarkError(
        f"unknown benchmark {name!r}: available are 'humaneval' or a path to a Problem JSONL file "
        "(corecode.data.benchmarks.load_benchmark is not installed yet)"
    )
