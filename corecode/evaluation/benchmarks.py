"""Benchmark registry for evaluation: ``get_benchmark(name) -> list[Problem]``.

The data package owns the loaders: every name ``corecode.data.benchmarks.load_benchmark`` knows works here
(``humaneval``, ``composite_test``, ``mbpp`` ...). A path to a JSONL file of ``Problem`` records (what
``corecode build-data`` writes under data/processed/) also works, so a custom benchmark needs no code.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from corecode.data.schema import Problem


class BenchmarkError(ValueError):
    """Unknown benchmark or unreadable problem file; the message names it."""


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
    from corecode.data.benchmarks import load_benchmark

    try:
        return list(load_benchmark(name))
    except Exception as e:  # unknown name (ValueError), unreachable hub, broken file: say which benchmark
        raise BenchmarkError(f"benchmark {name!r} could not be loaded: {type(e).__name__}: {e}") from e
