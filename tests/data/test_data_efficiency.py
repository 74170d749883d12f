"""composite's efficiency family: both programs are right, the naive one is measurably slower in the sandbox, the
problems sit in every split without repeats, and SFT rows show the naive program for the configured share.

Measured here (2-core VM, shared, 2026-11-27; 20 test problems, large lists of 2000 numbers): the efficient
programs' samples took 3-37 ms (fork, load, 10 tests), the naive ones 20-353 ms; peak memory 15-17 MB against
17-33 MB (the naive pair count's list of pair tests).

The memory-heavy steps (``efficiency_memory_frac``; 2026-11-28, same VM, a pytest run beside it; dev-split
problems, 4 a step, large lists of 1500 numbers, each program 3 times in one pool, medians (range)): CPU time of the
sample (10 tests) reference / naive, naive's ratio to it; added peak memory reference / naive:

| step | CPU ms | naive / reference CPU | added MiB |
|---|---|---|---|
| rising_pairs | 71 / 89 | 1.24 (1.18-1.32) | 2.05 / 10.93 (10.8-10.9) |
| close_pairs | 99 / 159 | 1.62 (1.57-1.78) | 2.05 / 38.93 (33.6-44.6) |
| pair_product_sum | 94 / 138 | 1.47 (1.43-1.51) | 2.05 / 44.55 (44.3-44.6) |

Lists only as long as the input (a prefix-sum list, ``sum([x * x for x in v])``, a list of adjacent pairs) added
nothing measurable even on 200,000 numbers (1.8-2.0 MiB against 1.8-2.0): the sandbox's forks reuse the memory their
zygote freed after parsing the input.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics

import pytest

from corecode.data.build import sft_rows
from corecode.data.composite import generate_composite, run_gold
from corecode.data.config import CompositeParams
from corecode.data.efficiency import HEAVY, MEMORY_HEAVY, TAG, generate, large_inputs, render_code, sample_chain


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
    smaller = generate_composite(
        _cfg(n_train=1, n_val=2 * len(family), n_test=0, n_dev=0, n_rl=0, efficiency_frac=0.5), seed=3
    )["val"]
    assert [p.reference_solution for p in smaller[-len(family) :]] == [p.reference_solution for p in family]


@pytest.mark.parametrize("heavy", HEAVY + MEMORY_HEAVY, ids=lambda h: h.step.name)
def test_naive_equals_efficient_on_large_inputs(heavy):
    rng = random.Random(0)
    heavies = MEMORY_HEAVY if heavy in MEMORY_HEAVY else HEAVY
    for _ in range(4):
        chain = sample_chain(rng, heavies)
        while chain.items[-1].step.name != heavy.step.name:
            chain = sample_chain(rng, heavies)
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


def _reference_and_naive_results(family):
    """Both solutions of every problem of ``family`` run in one real sandbox, each checked to pass every test."""
    from corecode.sandbox.isolation import SandboxUnavailable
    from corecode.sandbox.sandbox import Sandbox

    try:
        with Sandbox() as sb:
            fast = sb.run_batch([(p, p.reference_solution) for p in family])
            slow = sb.run_batch([(p, p.naive_solution) for p in family])
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable here: {e}")
    assert all(r.passed for r in fast + slow), [(r.task_id, r.detail) for r in fast + slow if not r.passed]
    return fast, slow


def test_naive_is_measurably_slower_in_the_sandbox():
    family = [p for p in generate_composite(_cfg(n_train=10, n_dev=0, n_rl=0), seed=1)["test"] if TAG in p.tags]
    fast, slow = _reference_and_naive_results(family)
    ratios = [s.cpu_time_s / f.cpu_time_s for f, s in zip(fast, slow)]  # as corecode.evaluation.runtime
    assert statistics.median(ratios) > 2.0, ratios


def test_memory_steps_off_by_default_and_the_rng_stream_unchanged():
    """With ``efficiency_memory_frac`` at 0 (the default) the family is drawn exactly as before the memory steps
    existed: the fingerprints were taken from main at 9d93419 (build-data's output depends on them byte for byte)."""
    rng = random.Random(7)
    signatures = repr([sample_chain(rng).signature() for _ in range(200)])
    assert hashlib.sha256(signatures.encode()).hexdigest()[:16] == "6a2ad76331e1f88c"
    out = generate_composite(_cfg(), seed=3)
    family = [p.model_dump(mode="json") for split in ("train", "dev", "rl") for p in out[split] if TAG in p.tags]
    assert len(family) == 56
    assert hashlib.sha256(json.dumps(family, sort_keys=True).encode()).hexdigest()[:16] == "6c1983d1e6cb76ef"
    memory_names = {h.step.name for h in MEMORY_HEAVY}
    assert not any("for j in range(i + 1" in p.reference_solution for probs in out.values() for p in probs)
    # switched on: the runtime-heavy problems stay what they were (fewer of them), the memory-heavy ones follow
    cfg = _cfg(efficiency_memory_frac=0.5)
    mixed = generate("dev", 20, 100, cfg, seed=3)
    assert [p for _, p in mixed[:10]] == [p for _, p in generate("dev", 10, 100, _cfg(), seed=3)]
    assert [c.items[-1].step.name in memory_names for c, _ in mixed] == [False] * 10 + [True] * 10
    assert [p.task_id for _, p in mixed] == [f"composite/dev/{100 + i}" for i in range(20)]
    large = [t for _, p in mixed[10:] for t in p.tests if len(t.input) > 1000]
    assert len(large) == 20 and all(len(json.loads(t.input)[0]) == cfg.efficiency_memory_large_n for t in large)


def test_memory_steps_naive_holds_more_memory_in_the_sandbox():
    """The memory-heavy steps' naive programs add tens of MiB to the sandbox's peak-memory measure on the large tests
    (the list of every pair's value), the efficient ones about nothing more than the references of the other
    problems, at a CPU time within about 2x (docstring of this module)."""
    made = generate("dev", 30, 0, _cfg(efficiency_memory_frac=1.0), seed=0)
    family = [next(p for c, p in made if c.items[-1].step.name == h.step.name) for h in MEMORY_HEAVY]
    fast, slow = _reference_and_naive_results(family)
    for f, s in zip(fast, slow):
        assert f.peak_memory_mb < 5 and s.peak_memory_mb > f.peak_memory_mb + 6, (f.peak_memory_mb, s.peak_memory_mb)
    ratios = [s.cpu_time_s / f.cpu_time_s for f, s in zip(fast, slow)]
    assert statistics.median(ratios) < 3.0, ratios
