"""Retrieval agent: BM25 over solved training problems, neighbours handed to the Planner.

The index is ``rank_bm25.BM25Okapi`` over the problem statements; only tokenisation is ours (identifiers are split on
``_`` and camelCase so that ``sort_even`` in a query matches ``even`` / ``sort`` in a statement).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rank_bm25 import BM25Okapi

from corecode.agents import prompts as P
from corecode.agents.teams import PlannerCoderTeam
from corecode.data.schema import Problem

_WORD_RE = re.compile(r"[A-Za-z]+|\d+")
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_STOP = frozenset(
    "a an the of to in and or is are be for with that this it as on by from at return returns given list int str "
    "def you your if then else which each should will not no can all any".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, identifiers split on ``_``/camelCase, stop words dropped."""
    words = _WORD_RE.findall(_CAMEL_RE.sub(" ", text.replace("_", " ")))
    return [w for w in (w.lower() for w in words) if w not in _STOP]


class ProblemIndex:
    """BM25 over solved problems (those with a reference solution or a plan)."""

    def __init__(self, corpus: Sequence[Problem]):
        self.problems = [p for p in corpus if p.reference_solution or p.plan]
        if not self.problems:
            raise ValueError("retrieval corpus has no solved problems (none has a reference_solution or plan)")
        self._bm25 = BM25Okapi([tokenize(p.prompt) or ["<empty>"] for p in self.problems])

    def search(self, problem: Problem, k: int) -> list[tuple[Problem, float]]:
        """Top-``k`` neighbours of ``problem`` by BM25 score, excluding itself (same task id or same statement)."""
        scores = self._bm25.get_scores(tokenize(problem.prompt))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        hits = []
        for i in order:
            cand = self.problems[i]
            if cand.task_id == problem.task_id or cand.prompt.strip() == problem.prompt.strip():
                continue  # never leak the problem's own solution
            hits.append((cand, float(scores[i])))
            if len(hits) == k:
                break
        return hits


class RetrievalTeam(PlannerCoderTeam):
    """Planner -> Coder where the Planner also sees the top-k solved neighbours (problem, plan, solution)."""

    type = "retrieval"

    def __init__(self, *args: Any, index: ProblemIndex, k: int = 2, max_example_chars: int = 2000, **kw: Any):
        super().__init__(*args, **kw)
        self.index, self.k, self.max_example_chars = index, k, max_example_chars

    def planner_prompt(self, problem: Problem) -> tuple[str, dict[str, Any]]:
        hits = self.index.search(problem, self.k)
        examples = [self._clip(p) for p, _ in hits]
        meta = {"retrieved": [p.task_id for p, _ in hits], "retrieval_scores": [s for _, s in hits]}
        return P.retrieval_planner_prompt(problem, examples), meta

    def _clip(self, p: Problem) -> Problem:
        """Bound each example's size so k neighbours fit a small model's context."""
        upd = {}
        for key in ("prompt", "plan", "reference_solution"):
            val = getattr(p, key)
            if val and len(val) > self.max_example_chars:
                upd[key] = val[: self.max_example_chars]
        return p.model_copy(update=upd) if upd else p
