"""Benchmark registry for evaluation: ``get_benchmark(name) -> list[Problem]``.

The data package owns the loaders: every name ``corecode.data.benchmarks.load_benchmark`` knows works here:
``humaneval``, ``composite_test``, and the real benchmarks ``mbpp``, ``mbpp_plus``, ``humaneval_plus``,
``livecodebench``, ``livebench``, ``code_contests``, ``codeforces`` (their hub test splits, or what a source of that
name in ``data.sources`` says: a local copy, another split). A path to a JSONL file of ``Problem`` records (what
``corecode build-data`` writes under data/processed/) also works, so a custom benchmark needs no code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from corecode.data.io import read_problems
from corecode.data.schema import Problem

if TYPE_CHECKING:
    from corecode.data.config import DataParams


class BenchmarkError(ValueError):
    """Unknown benchmark or unreadable problem file; the message names it."""


def get_benchmark(name: str, data: DataParams | None = None, seed: int | None = None) -> list[Problem]:
    """The problems of benchmark ``name`` (a registered name or a path to a Problem JSONL file); ``data`` and
    ``seed`` are the run's params (default: params.yaml's), whose ``data.sources`` can name or relocate benchmarks."""
    if name.endswith((".jsonl", ".json")) or Path(name).is_file():
        try:
            return read_problems(name)
        except (OSError, ValueError) as e:  # missing file, a bad line (named file:line), no problems
            raise BenchmarkError(str(e)) from None
    from corecode.data.benchmarks import load_benchmark

    try:
        return list(load_benchmark(name, params=data, seed=seed))
    except Exception as e:  # unknown name (ValueError), unreachable hub, broken file: say which benchmark
        raise BenchmarkError(f"benchmark {name!r} could not be loaded: {type(e).__name__}: {e}") from e
