"""Bootstrap statistics: determinism, CI coverage of the truth, p-values that behave."""

import numpy as np
import pytest

from corecode.evaluation.stats import bootstrap_ci, paired_bootstrap


def per_problem_pass1(p_true: np.ndarray, n: int, rng) -> np.ndarray:
    """Simulated c/n per problem for a method whose per-problem success probabilities are ``p_true``."""
    return rng.binomial(n, p_true) / n


def test_identical_methods_give_p_one():
    scores = np.random.default_rng(0).random(50)
    r = paired_bootstrap(scores, scores, n_resamples=2000, seed=1)
    assert r.delta == 0.0 and r.p_value == 1.0 and r.ci_low == r.ci_high == 0.0
    assert paired_bootstrap(scores, scores, n_resamples=2000, seed=1, alternative="greater").p_value == 1.0


def test_clearly_better_method_is_significant_and_worse_is_not():
    rng = np.random.default_rng(3)
    difficulty = rng.random(100)  # shared per-problem difficulty: what pairing removes
    b = per_problem_pass1(difficulty * 0.6, 10, rng)
    a = per_problem_pass1(np.clip(difficulty * 0.6 + 0.15, 0, 1), 10, rng)
    better = paired_bootstrap(a, b, n_resamples=5000, seed=0, alternative="greater")
    assert better.delta > 0.1 and better.p_value < 0.05 and better.ci_low > 0
    assert paired_bootstrap(a, b, n_resamples=5000, seed=0).p_value < 0.05
    worse = paired_bootstrap(b, a, n_resamples=5000, seed=0, alternative="greater")
    assert worse.p_value > 0.5


def test_same_method_twice_is_rarely_significant():
    """Two independent runs of one method: the paired test should reject about 5% of the time, not more."""
    rng = np.random.default_rng(7)
    p = rng.random(60)
    rejections = sum(
        paired_bootstrap(per_problem_pass1(p, 5, rng), per_problem_pass1(p, 5, rng), n_resamples=1000, seed=s).p_value
        < 0.05
        for s in range(40)
    )
    assert rejections <= 6  # expected ~2 of 40; a broken test (p ~ 0 always) would give ~40


def test_deterministic_from_seed_and_aligned_by_task_id():
    rng = np.random.default_rng(1)
    a = {f"t{i}": float(x) for i, x in enumerate(rng.random(30))}
    b = {f"t{i}": float(x) for i, x in enumerate(rng.random(30))}
    b_shuffled = dict(reversed(list(b.items())))
    r1 = paired_bootstrap(a, b, n_resamples=3000, seed=5)
    assert r1 == paired_bootstrap(a, b_shuffled, n_resamples=3000, seed=5)
    assert r1 != paired_bootstrap(a, b, n_resamples=3000, seed=6)
    assert r1.to_dict()["alternative"] == "two-sided"


def test_mismatched_problems_are_an_error():
    with pytest.raises(ValueError, match="only in a"):
        paired_bootstrap({"x": 1.0, "y": 0.0}, {"x": 1.0, "z": 0.0})
    with pytest.raises(ValueError, match="3 vs 2"):
        paired_bootstrap([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="alternative"):
        paired_bootstrap([1, 0], [0, 1], alternative="less")


def test_bootstrap_ci_covers_the_mean():
    x = np.random.default_rng(2).binomial(1, 0.3, size=400).astype(float)
    ci = bootstrap_ci(x, n_resamples=4000, seed=0)
    assert ci.ci_low < ci.mean < ci.ci_high
    assert ci.ci_low < 0.3 < ci.ci_high
    assert 0.05 < ci.ci_high - ci.ci_low < 0.12  # ~ 2 * 1.96 * sqrt(.21/400) = 0.09
    point = bootstrap_ci([0.5], n_resamples=100)
    assert point.ci_low == point.ci_high == 0.5
