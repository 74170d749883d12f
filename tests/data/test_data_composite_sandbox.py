"""The composite tests mean what the sandbox thinks they mean: gold code passes, a near-miss fails."""

from __future__ import annotations

import pytest

from corecode.data.composite import generate_composite
from corecode.data.config import CompositeParams

sandbox_mod = pytest.importorskip("corecode.sandbox.sandbox")


def _composite(**kw) -> CompositeParams:
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split)."""
    return CompositeParams(
        **{**dict(n_test=300, n_rl=0, test_longer_frac=0.5, test_unseen_chain_frac=0.0, phrasing_variety=3), **kw}
    )


def test_gold_passes_and_off_by_one_fails_in_sandbox():
    from corecode.sandbox.isolation import SandboxUnavailable

    probs = generate_composite(_composite(n_train=10, n_val=0, n_test=20), seed=0)
    sample = probs["train"] + probs["test"]
    try:
        with sandbox_mod.Sandbox() as sb:
            gold = sb.run_batch([(p, p.reference_solution) for p in sample])
            # wrap the gold function so every answer changes: must fail
            wrong = [
                (p, p.reference_solution + f"\n_g = {p.entry_point}\ndef {p.entry_point}(*a):\n    return [_g(*a)]\n")
                for p in sample
            ]
            bad = sb.run_batch(wrong)
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable here: {e}")
    assert all(r.passed for r in gold), [(r.task_id, r.verdict, r.detail) for r in gold if not r.passed]
    assert not any(r.passed for r in bad)


def test_loaded_reference_solutions_pass_in_sandbox():
    """Fixture rows -> Problems the sandbox judges: references pass, a wrong program fails (the mapping is right)."""
    from pathlib import Path

    from corecode.data.loaders.apps import load_apps
    from corecode.data.loaders.code_contests import load_code_contests
    from corecode.data.loaders.evalplus import load_evalplus
    from corecode.data.loaders.mbpp import load_mbpp
    from corecode.sandbox.isolation import SandboxUnavailable

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "data"
    probs = load_mbpp(fix / "mbpp.jsonl") + load_evalplus(fix / "humanevalplus.jsonl")
    probs += [
        p
        for p in load_code_contests(fix / "code_contests.jsonl") + load_apps(fix / "apps.jsonl")
        if p.reference_solution
    ]
    try:
        with sandbox_mod.Sandbox() as sb:
            good = sb.run_batch([(p, p.reference_solution) for p in probs])
            bad = sb.run_batch(
                [
                    (p, "print(0)\n" if p.io_mode == "stdio" else f"def {p.entry_point}(*a):\n    return 12345\n")
                    for p in probs
                ]
            )
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable here: {e}")
    assert all(r.passed for r in good), [(r.task_id, r.verdict, r.detail) for r in good if not r.passed]
    assert not any(r.passed for r in bad), [r.task_id for r in bad if r.passed]
