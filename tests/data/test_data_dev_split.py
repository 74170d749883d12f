"""The dev split: drawn like test, disjoint from test, rl, train and val; tuning refuses the test split."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from corecode.data.composite import generate_composite
from corecode.data.config import CompositeParams

ROOT = Path(__file__).resolve().parents[2]
CFG = dict(n_train=400, n_val=40, n_test=120, n_dev=80, n_rl=80)


def _sequence(p) -> tuple[str, ...]:
    """The chain's steps, constants blanked, read off the gold plan (one line per step, as benchmarks/large_test.sh
    reads it)."""
    return tuple(re.sub(r"-?\d+", "N", re.sub(r"'[^']*'", "'S'", line)).strip() for line in p.plan.splitlines())


@pytest.fixture(scope="module")
def splits():
    return generate_composite(CompositeParams(**CFG), seed=5)


def test_dev_is_disjoint_from_every_other_split(splits):
    assert {k: len(v) for k, v in splits.items()} == {"train": 400, "val": 40, "test": 120, "dev": 80, "rl": 80}
    ids = [p.task_id for probs in splits.values() for p in probs]
    assert len(ids) == len(set(ids)) and all(p.split == "dev" for p in splits["dev"])
    dev = splits["dev"]
    # No dev problem is a problem of another split: not its statement, not its chain and constants (the gold plan).
    for name in ("train", "val", "test", "rl"):
        assert not {p.prompt for p in dev} & {p.prompt for p in splits[name]}, name
        assert not {p.plan for p in dev} & {p.plan for p in splits[name]}, name
    # Held-out compositions like test (every problem but composite's efficiency family, which has its own rule): no
    # such dev step sequence is one SFT trained on, and GRPO's rl split uses none of dev's or test's.
    held = [p for p in dev if any(t.startswith("ood:") for t in p.tags)]
    assert len(held) >= 0.8 * len(dev)
    seen = {_sequence(p) for name in ("train", "val") for p in splits[name]}
    assert not {_sequence(p) for p in held} & seen
    rl = [p for p in splits["rl"] if "efficiency" not in p.tags]
    assert not {_sequence(p) for p in rl} & {_sequence(p) for p in held + splits["test"]}
    # drawn like test: the same out-of-distribution kinds in the same shares
    kinds = lambda probs: Counter(t for p in probs for t in p.tags if t.startswith("ood:"))  # noqa: E731
    assert set(kinds(dev)) == set(kinds(splits["test"])) == {"ood:length", "ood:chain", "ood:pair"}


def test_test_train_and_val_do_not_move_with_the_dev_split(splits):
    without = generate_composite(CompositeParams(**{**CFG, "n_dev": 0}), seed=5)
    assert "dev" not in without
    for name in ("train", "val", "test"):
        assert [p.prompt for p in without[name]] == [p.prompt for p in splits[name]], name


def test_sweep_refuses_the_test_split(capsys):
    sys.path.insert(0, str(ROOT / "notebooks"))
    import sweep

    for bench in ("composite_test", "data/work/test_3000.jsonl"):
        with pytest.raises(SystemExit, match="tuning never reads a test split"):
            sweep.main(["--benchmark", bench, "--dry-run"])
    sweep.main(["--dry-run", "--workdir", "/nonexistent/sweep"])  # the default: dev
    assert "evaluate.benchmarks=[composite_dev]" in capsys.readouterr().out
