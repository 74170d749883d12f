"""composite's efficiency family: both programs are right, the naive one is measurably slower in the sandbox, the
problems sit in every split without repeats, and SFT rows show the naive program for the configured share.

Measured here (2-core VM, shared, 2026-11-27; 20 test problems, large lists of 2000 numbers): the efficient
programs' samples took 3-37 ms (fork, load, 10 tests), the naive ones 20-353 ms; peak memory 15-17 MB against
17-33 MB (the naive pair count's list of pair tests).
"""

from __future__ import annotations

import random
import statistics

import pytest

from corecode.data.build import sft_rows
from corecode.data.composite import generate_composite, run_gold
from corecode.data.config import CompositeParams
from corecode.data.efficiency import HEAVY, TAG, large_inputs, render_code, sample_chain


def _cfg(**kw) -> CompositeParams:
    return CompositeParams(**{**dict(n_train=200, n_val=20, n_test=100, n_dev=40, n_rl=40, efficiency_frac=0.2), **kw})


def test_family_in_every_split_once_with_both_programs():
    out = generate_composite(_cfg(), seed=3)
    seen = set()
    for split, probs in out.items():
        family = [p for p in probs if TAG in p.tags]
        assert len(family) == round(0.2 * len(probs)) and probs[-len(family) :] == family  # the split's last ones
        assert len({p.task_id for p in probs}) == len(probs)
        for p in family:
            assert p.reference_solution != p.naive_solution and p.naive_solution.startswith("def solve(")
            n_large = sum(len(t.input) > 1000 for t in p.tests)
            assert n_large == (0 if split == "train" else 2)
            assert (p.plan, p.reference_solution) not in seen, "a family problem in two splits"
            seen.add((p.plan, p.reference_solution))
    assert all(TAG not in p.tags for p in out["test"][: len(out["test"]) - 20])
    # the family does not move the other problems of a split, and its test problems do not move when n_train changes
    plain = generate_composite(_cfg(efficiency_frac=0.0), seed=3)
    assert [p.prompt for p in out["val"][:16]] == [p.prompt for p in plain["val"][:16]]
    assert generate_composite(_cfg(n_train=50), seed=3)["test"][-20:] == out["test"][-20:]
    # with the step library restricted, the family comes only when asked for
    restricted = generate_composite(_cfg(n_train=50, n_dev=0, n_rl=0, steps=["map", "reduce"]), seed=3)
    assert not any(TAG in p.tags for probs in restricted.values() for p in probs)
    asked = generate_composite(_cfg(n_train=50, n_dev=0, n_rl=0, steps=["map", "reduce", TAG]), seed=3)
    assert sum(TAG in p.tags for p in asked["test"]) == 20


def test_split_larger_than_the_family_share_is_filled_with_other_problems(capsys):
    """val's share of the family's chains (1 in 20) holds well under 150 usable problems: asked for 150, the split
    keeps its size, takes what the family has (the same problems, renumbered after the others) and says so."""
    cfg = _cfg(n_train=1, n_val=300, n_test=0, n_dev=0, n_rl=0, efficiency_frac=0.5)
    val = generate_composite(cfg, seed=3)["val"]
    family = [p for p in val if TAG in p.tags]
    assert len(val) == 300 and 0 < len(family) < 150 and val[-len(family) :] == family
    assert [p.task_id for p in val] == [f"composite/val/{i}" for i in range(300)]
    assert f"composite/val: {len(family)} efficiency problems, not 150" in capsys.readouterr().err
    smaller = generate_composite(_cfg(n_train=1, n_val=2 * len(family), n_test=0, n_dev=0, n_rl=0,
                                      efficiency_frac=0.5), seed=3)["val"]
    assert [p.reference_solution for p in smaller[-len(family) :]] == [p.reference_solution for p in family]


@pytest.mark.parametrize("heavy", HEAVY, ids=lambda h: h.step.name)
def test_naive_equals_efficient_on_large_inputs(heavy):
    rng = random.Random(0)
    for _ in range(4):
        chain = sample_chain(rng)
        while chain.items[-1].step.name != heavy.step.name:
            chain = sample_chain(rng)
        args = large_inputs(rng, heavy, 300, 2) + [[[]], [[1, 1, 2]]]
        fast, slow = render_code(chain, "f"), render_code(chain, "f", naive=True)
        assert run_gold(fast, "f", args) == run_gold(slow, "f", args)


def test_sft_rows_show_the_naive_program_for_the_share():
    family = [p for p in generate_composite(_cfg(n_test=10, n_dev=0, n_rl=0), seed=0)["train"] if TAG in p.tags]
    rows = [sft_rows(p, "prov", naive_frac=0.5, seed=0) for p in family]
    naive = [r for r, p in zip(rows, family) if p.naive_solution.split("\n", 1)[1] in r["coder"]["completion"]]
    assert 0.3 < len(naive) / len(rows) < 0.7
    assert all(r["coder"]["provenance"].endswith(":naive-solution") for r in naive)
    assert all(r["single"]["completion"] == r["coder"]["completion"] for r in rows)
    assert all(p.reference_solution.split("\n", 1)[1] in sft_rows(p, "prov")["coder"]["completion"] for p in family)


def test_naive_is_measurably_slower_in_the_sandbox():
    from corecode.sandbox.isolation import SandboxUnavailable
    from corecode.sandbox.sandbox import Sandbox

    family = [p for p in generate_composite(_cfg(n_train=10, n_dev=0, n_rl=0), seed=1)["test"] if TAG in p.tags]
    try:
        with Sandbox() as sb:
            fast = sb.run_batch([(p, p.reference_solution) for p in family])
            slow = sb.run_batch([(p, p.naive_solution) for p in family])
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable here: {e}")
    assert all(r.passed for r in fast + slow), [(r.task_id, r.detail) for r in fast + slow if not r.passed]
    ratios = [s.cpu_time_s / f.cpu_time_s for f, s in zip(fast, slow)]  # as corecode.evaluation.runtime
    assert statistics.median(ratios) > 2.0, ratios
