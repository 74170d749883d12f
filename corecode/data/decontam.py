"""Word n-gram decontamination: drop training items whose statement or code overlaps an evaluation problem.

An item is contaminated when at least ``threshold`` of its word n-grams (in its prompt, or in its reference code)
occur in some evaluation problem's prompt/code. Texts shorter than ``n`` words are compared as one whole-text gram.
Hand-written (a set of tuples) because the standard tools for this (the GPT-3 / StarCoder 13-gram scripts) are
one-off scripts, not libraries; it is ~20 lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from corecode.data.schema import Problem

_WORD = re.compile(r"\w+")


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _texts(p: Problem) -> list[str]:
    return [t for t in (p.prompt, p.reference_solution) if t]


@dataclass
class DecontamReport:
    kept: list[Problem]
    dropped: list[tuple[Problem, str, float]] = field(default_factory=list)  # (problem, field, overlap)


def decontaminate(
    items: list[Problem], eval_problems: list[Problem], n: int = 10, threshold: float = 0.5
) -> DecontamReport:
    """Split ``items`` into kept and dropped (with the field and overlap fraction that caused the drop)."""
    index: set[tuple[str, ...]] = set()
    for p in eval_problems:
        for t in _texts(p):
            index |= ngrams(t, n)
    report = DecontamReport(kept=[])
    for p in items:
        worst = ("", 0.0)
        for name, text in (("prompt", p.prompt), ("reference_solution", p.reference_solution)):
            grams = ngrams(text or "", n)
            if grams:
                frac = len(grams & index) / len(grams)
                if frac > worst[1]:
                    worst = (name, frac)
        if index and worst[1] >= threshold:
            report.dropped.append((p, worst[0], worst[1]))
        else:
            report.kept.append(p)
    return report
