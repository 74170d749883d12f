"""The composite suite: determinism, splits that hold out compositions and lengths, gold code vs tests, phrasings."""

from __future__ import annotations

import ast
import re

import pytest

from corecode.data.composite import (
    Chain,
    ChainItem,
    _generate,
    generate_composite,
    heldout_pairs,
    render_code,
    render_plan,
    render_statement,
    run_gold,
    select_steps,
)
from corecode.data.config import CompositeParams
from corecode.data.steps import STEP_BY_NAME


def _composite(**kw) -> CompositeParams:
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split); no
    efficiency family (tests/data/test_data_efficiency.py)."""
    return CompositeParams(
        **{
            **dict(
                n_test=300,
                n_dev=0,
                n_rl=0,
                test_longer_frac=0.5,
                test_unseen_chain_frac=0.0,
                phrasing_variety=3,
                efficiency_frac=0.0,
            ),
            **kw,
        }
    )


SMALL = _composite(n_train=300, n_val=40, n_test=60)


@pytest.fixture(scope="module")
def suite():
    return generate_composite(_composite(), seed=0)


def test_sizes_ids_and_determinism(suite):
    assert {k: len(v) for k, v in suite.items()} == {"train": 3000, "val": 200, "test": 300}
    for split, probs in suite.items():
        assert all(p.split == split and p.source == "composite" for p in probs)
        assert len({p.task_id for p in probs}) == len(probs)
    again = generate_composite(SMALL, seed=0)
    assert again == generate_composite(SMALL, seed=0)
    assert again["train"] != generate_composite(SMALL, seed=1)["train"]


def test_test_split_stable_when_train_size_changes():
    a = generate_composite(SMALL, seed=3)["test"]
    b = generate_composite(SMALL.model_copy(update={"n_train": 100}), seed=3)["test"]
    assert a == b


def test_gold_code_passes_its_tests_and_is_short(suite):
    for probs in suite.values():
        for p in probs:
            ast.parse(p.reference_solution)
            assert len(p.reference_solution.splitlines()) <= 12
            args = [ast.literal_eval(t.input) for t in p.tests]
            got = run_gold(p.reference_solution, p.entry_point, args)
            assert [repr(g) for g in got] == [t.output for t in p.tests], p.task_id
            assert len(set(t.output for t in p.tests)) >= (2 if "-> bool" in p.prompt.splitlines()[0] else 3)
            assert len({t.input for t in p.tests}) == len(p.tests)


def test_prompt_is_humaneval_shaped_with_a_true_example(suite):
    for p in suite["train"][:300]:
        first = p.prompt.splitlines()[0]
        assert re.fullmatch(rf"def {p.entry_point}\((nums: list\[int\]|s: str)\) -> [\w\[\] ]+:", first), first
        assert p.reference_solution.splitlines()[0] == first
        m = re.search(rf">>> {p.entry_point}\((.*)\)\n\s+(.*)\n", p.prompt)
        assert m, p.prompt
        ex_in, ex_out = f"[{m.group(1)}]", m.group(2)
        assert (ex_in, ex_out) in {(t.input, t.output) for t in p.tests}


def test_plan_maps_about_one_line_per_code_line(suite):
    for p in suite["train"]:
        lines = p.plan.splitlines()
        assert all(ln.startswith(f"{i}. ") for i, ln in enumerate(lines, 1))
        body = p.reference_solution.splitlines()[1:]
        guards = sum(ln.strip().startswith("if not ") for ln in body)
        assert len(lines) == len(body) - guards  # each guard: 2 code lines, 1 plan line
        assert len(lines) == int(p.difficulty) + guards


def test_edge_cases_in_tests(suite):
    ints = [p for p in suite["train"] if "nums: list[int]" in p.prompt.splitlines()[0]]
    strs = [p for p in suite["train"] if "(s: str)" in p.prompt.splitlines()[0]]
    assert ints and strs
    assert all(p.tests[0].input == "[[]]" for p in ints)
    assert all(p.tests[0].input == "['']" for p in strs)
    assert all(any(re.search(r"-\d", t.input) for t in p.tests) for p in ints)


def test_splits_hold_out_pairs_and_lengths():
    cfg = SMALL
    steps = select_steps(None)
    held = heldout_pairs(steps, cfg.heldout_pair_frac, 0)
    assert held
    train = list(_generate("train", 200, cfg, 0, steps, held, set()))
    assert all(not set(c.pairs()) & held and len(c.items) <= cfg.train_max_steps for c, _ in train)
    test = list(_generate("test", 60, cfg, 0, steps, held, set()))
    for c, p in test:
        longer = len(c.items) > cfg.train_max_steps
        has_pair = bool(set(c.pairs()) & held)
        assert longer or has_pair
        assert ("ood:length" in p.tags) == longer and ("ood:pair" in p.tags) == has_pair
    assert sum(len(c.items) == 4 for c, _ in test) == 30  # test_longer_frac = 0.5


def test_unseen_chains_reuse_seen_pairs_in_new_sequences():
    cfg = SMALL.model_copy(
        update={"n_train": 300, "n_val": 20, "n_test": 40, "test_longer_frac": 0.25, "test_unseen_chain_frac": 0.5}
    )
    suite = generate_composite(cfg, seed=0)
    train_rows = suite["train"] + suite["val"]
    seqs = {tuple(line.split(". ", 1)[1] for line in p.plan.splitlines()) for p in train_rows}
    kinds = [next(t for t in p.tags if t.startswith("ood:")) for p in suite["test"]]
    assert kinds.count("ood:length") == 10 and kinds.count("ood:chain") == 20 and kinds.count("ood:pair") == 10
    for p, kind in zip(suite["test"], kinds):
        if kind == "ood:chain":  # same steps (and constants) never chained this way in train/val
            assert tuple(line.split(". ", 1)[1] for line in p.plan.splitlines()) not in seqs
    with pytest.raises(ValueError, match="test_unseen_chain_frac"):
        _composite(test_longer_frac=0.6, test_unseen_chain_frac=0.5)


def test_rl_split_is_new_compositions_and_moves_no_other_split():
    cfg = SMALL.model_copy(
        update={"n_train": 300, "n_val": 20, "n_test": 40, "test_longer_frac": 0.25, "test_unseen_chain_frac": 0.5}
    )
    plain = generate_composite(cfg, seed=0)
    with_rl = generate_composite(cfg.model_copy(update={"n_rl": 50}), seed=0)
    assert "rl" not in plain and len(with_rl["rl"]) == 50
    assert all(with_rl[s] == plain[s] for s in ("train", "val", "test"))
    seq = lambda p: tuple(line.split(". ", 1)[1] for line in p.plan.splitlines())  # noqa: E731
    others = {seq(p) for s in ("train", "val", "test") for p in plain[s]}
    held = heldout_pairs(select_steps(None), cfg.heldout_pair_frac, 0)
    for p in with_rl["rl"]:
        assert p.split == "rl" and p.task_id.startswith("composite/rl/")
        assert seq(p) not in others  # a step sequence no other split uses
        assert int(p.difficulty) <= cfg.train_max_steps and not [t for t in p.tags if t.startswith("ood:")]
    rl_chains = {
        c.step_names()
        for c, _ in _generate("rl", 50, cfg.model_copy(update={"n_rl": 50}), 0, select_steps(None), held, set())
    }
    assert rl_chains  # and no chain of the generator's own rl stream contains a held-out pair:
    assert not any((a, b) in held for names in rl_chains for a, b in zip(names, names[1:]))


def test_rl_longer_frac_gives_longer_rl_chains_and_moves_no_other_split():
    cfg = SMALL.model_copy(
        update={
            "n_train": 300,
            "n_val": 20,
            "n_test": 40,
            "test_longer_frac": 0.25,
            "test_unseen_chain_frac": 0.5,
            "test_max_steps": 5,
            "n_rl": 40,
        }
    )
    plain = generate_composite(cfg, seed=0)
    longer = generate_composite(cfg.model_copy(update={"rl_longer_frac": 0.5}), seed=0)
    assert all(longer[s] == plain[s] for s in ("train", "val", "test"))
    seq = lambda p: tuple(line.split(". ", 1)[1] for line in p.plan.splitlines())  # noqa: E731
    others = {seq(p) for s in ("train", "val", "test") for p in plain[s]}
    held = heldout_pairs(select_steps(None), cfg.heldout_pair_frac, 0)
    steps = [int(p.difficulty) for p in longer["rl"]]
    assert all(cfg.train_max_steps < n <= cfg.test_max_steps for n in steps[:20])  # the first half: longer chains
    assert all(n <= cfg.train_max_steps for n in steps[20:])
    assert {4, 5} <= set(steps[:20])
    assert not any(seq(p) in others for p in longer["rl"])  # still no step sequence of another split
    rl_chains = {
        c.step_names()
        for c, _ in _generate(
            "rl", 40, cfg.model_copy(update={"rl_longer_frac": 0.5}), 0, select_steps(None), held, set()
        )
    }
    assert not any((a, b) in held for names in rl_chains for a, b in zip(names, names[1:]))
    with pytest.raises(ValueError, match="rl_longer_frac > 0 needs test_max_steps > train_max_steps"):
        _composite(rl_longer_frac=0.5, test_max_steps=3)


def test_splits_disjoint(suite):
    codes = {s: {p.reference_solution for p in v} for s, v in suite.items()}
    assert not codes["train"] & codes["val"]
    assert not codes["train"] & codes["test"] and not codes["val"] & codes["test"]


def test_variety_of_structures_and_outputs(suite):
    train = suite["train"]
    outs = {p.prompt.splitlines()[0].rsplit("-> ", 1)[1] for p in train}
    assert {"int:", "list[int]:", "str:", "list[str]:", "bool:"} <= outs
    assert any("if not" in p.reference_solution for p in train)  # empty-list branches
    assert {p.difficulty for p in train} == {"1", "2", "3"}
    kinds = {t for p in train for t in p.tags}
    assert {"filter", "map", "reduce", "sort", "dedupe", "window", "count", "split", "join"} <= kinds


def test_statement_is_not_a_copy_of_the_plan(suite):
    copied = 0
    for p in suite["train"]:
        statement = p.prompt.split('"""')[1].lower()
        plan_lines = [ln.split(". ", 1)[1].rstrip(".").lower() for ln in p.plan.splitlines()]
        copied += any(pl in statement for pl in plan_lines)
    assert copied / len(suite["train"]) < 0.35


def test_nested_phrasing_reverses_plan_order():
    chain = Chain(
        (ChainItem(STEP_BY_NAME["filter_odd"]), ChainItem(STEP_BY_NAME["map_square"]), ChainItem(STEP_BY_NAME["sum"]))
    )
    import random

    text = render_statement(chain, "nested", random.Random(0), variety=1)
    assert text == "Return the sum of the squares of the odd numbers in nums."
    assert render_plan(chain) == "1. Keep only the odd numbers.\n2. Square each number.\n3. Return the sum."
    code = render_code(chain, "solve")
    assert run_gold(code, "solve", [[[1, 2, 3, -5]]]) == [35]


def test_guard_branch_and_constants():
    chain = Chain((ChainItem(STEP_BY_NAME["filter_gt"], 3), ChainItem(STEP_BY_NAME["max"])), guard_default=-1)
    code = render_code(chain, "solve")
    assert run_gold(code, "solve", [[[1, 2]], [[5, 9, 4]]]) == [-1, 9]
    assert "2. If the list is empty, return -1." in render_plan(chain)
    assert "x > 3" in code


def test_knobs_restrict_steps_and_reject_unknown():
    cfg = _composite(
        n_train=50,
        n_val=5,
        n_test=10,
        steps=["filter", "map", "sum", "count"],
        test_max_steps=3,
        test_longer_frac=0.0,
        heldout_pair_frac=0.2,
    )
    out = generate_composite(cfg, seed=0)
    assert {t for p in out["train"] for t in p.tags} <= {"filter", "map", "reduce", "count"}
    with pytest.raises(ValueError, match="unknown step names/kinds"):
        generate_composite(_composite(steps=["teleport"]), seed=0)
    with pytest.raises(ValueError, match="test_max_steps"):
        _composite(train_max_steps=4, test_max_steps=3)


def test_phrasing_variety_one_uses_first_phrasings_only():
    cfg = SMALL.model_copy(update={"phrasing_variety": 1, "styles": ["sequential"]})
    for p in generate_composite(cfg, seed=0)["train"][:50]:
        statement = p.prompt.split('"""')[1]
        assert statement.startswith(("Given nums, ", "Given s, "))


def test_copy_baseline_is_low_on_test_but_perfect_on_train_itself():
    from corecode.data.difficulty import copy_baseline

    out = generate_composite(_composite(n_train=400, n_val=0, n_test=80), seed=0)
    assert copy_baseline(out["train"], out["train"][:30])["all"] == 1.0  # the metric can succeed
    rates = copy_baseline(out["train"], out["test"])
    assert rates["all"] < 0.15 and set(rates) == {"all", "ood:length", "ood:pair"}
