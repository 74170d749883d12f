"""Bootstrap statistics over problems: a CI for one method, and a paired test for "is method A better than B?".

The unit of resampling is the *problem*: two methods evaluated on the same problems give paired per-problem scores
(pass@1 = c/n per problem), and resampling problems with replacement keeps each pair together, which removes the
large between-problem variance from the comparison (Koehn 2004; Berg-Kirkpatrick et al. 2012).

Resampling and percentile intervals come from ``scipy.stats.bootstrap``. SciPy gives no bootstrap p-value, so the
test is written here from its bootstrap distribution of the mean difference, by the shift method of
Berg-Kirkpatrick et al.: under H0 the centred distribution ``delta* - delta`` stands in for the null, so

- ``alternative="greater"`` (H1: a > b): p = P(delta* - delta >= delta), i.e. how often a resample beats twice the
  observed gain;
- ``alternative="two-sided"`` (H1: a != b): p = P(|delta* - delta| >= |delta|).

Counts get the usual +1 (p = (hits + 1) / (B + 1)), so a p-value is never exactly 0 and identical methods give 1.
Everything is deterministic given ``seed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

Alternative = Literal["two-sided", "greater"]
Scores = Sequence[float] | Mapping[str, float]


@dataclass(frozen=True)
class BootstrapCI:
    """Mean of per-problem scores with a percentile bootstrap confidence interval."""

    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    n_problems: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairedBootstrapResult:
    """Paired bootstrap comparison of two methods: ``delta = mean(a) - mean(b)`` with a CI and a p-value."""

    delta: float
    p_value: float
    ci_low: float
    ci_high: float
    alternative: str
    confidence: float
    n_problems: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict:
        return asdict(self)


def _as_array(scores: Scores, name: str) -> np.ndarray:
    values = list(scores.values()) if isinstance(scores, Mapping) else list(scores)
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty list of per-problem scores")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: per-problem scores must be finite numbers")
    return arr


def _pair(a: Scores, b: Scores) -> tuple[np.ndarray, np.ndarray]:
    """Align two methods' per-problem scores: by task_id for mappings, by position for sequences."""
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError("a and b must both be mappings task_id -> score, or both sequences in the same problem order")
    if isinstance(a, Mapping):
        if set(a) != set(b):
            only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            raise ValueError(
                f"paired bootstrap needs the same problems for both methods: only in a: {only_a[:5]}, "
                f"only in b: {only_b[:5]}"
            )
        keys = sorted(a)
        return _as_array([a[k] for k in keys], "a"), _as_array([b[k] for k in keys], "b")
    xa, xb = _as_array(a, "a"), _as_array(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"paired bootstrap needs one score per problem for both methods: {xa.size} vs {xb.size}")
    return xa, xb


def _bootstrap_means(x: np.ndarray, n_resamples: int, confidence: float, seed: int):
    from scipy.stats import bootstrap

    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if x.size == 1:  # scipy refuses one observation; every resample of it is that observation
        return np.full(n_resamples, float(x[0])), float(x[0]), float(x[0])
    res = bootstrap(
        (x,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    lo, hi = res.confidence_interval
    if np.ptp(x) == 0:  # scipy returns nan bounds for degenerate data; the interval is the point
        lo = hi = float(x.mean())
    return res.bootstrap_distribution, float(lo), float(hi)


def bootstrap_ci(scores: Scores, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> BootstrapCI:
    """Percentile bootstrap CI of the mean per-problem score (e.g. pass@1) of one method."""
    x = _as_array(scores, "scores")
    _, lo, hi = _bootstrap_means(x, n_resamples, confidence, seed)
    return BootstrapCI(float(x.mean()), lo, hi, confidence, int(x.size), n_resamples, seed)


def paired_bootstrap(
    a: Scores,
    b: Scores,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
) -> PairedBootstrapResult:
    """Paired bootstrap over problems of ``mean(a) - mean(b)``.

    ``a`` and ``b`` are per-problem scores of two methods on the same problems (pass@1 = c/n each): two mappings
    ``task_id -> score`` (aligned by key) or two sequences in the same problem order. ``alternative`` is
    ``"two-sided"`` (a != b) or ``"greater"`` (a > b, the question a promotion gate asks). See the module docstring
    for how the p-value is computed.
    """
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater', got {alternative!r}")
    xa, xb = _pair(a, b)
    d = xa - xb
    delta = float(d.mean())
    dist, lo, hi = _bootstrap_means(d, n_resamples, confidence, seed)
    centred = dist - delta
    # A tiny tolerance so that resamples equal to the observed value up to rounding count as "at least as extreme".
    eps = 1e-12
    if alternative == "greater":
        hits = int(np.sum(centred >= delta - eps))
    else:
        hits = int(np.sum(np.abs(centred) >= abs(delta) - eps))
    p = (hits + 1) / (n_resamples + 1)
    return PairedBootstrapResult(delta, float(p), lo, hi, alternative, confidence, int(d.size), n_resamples, seed)
