"""Is a composite split solvable by copying? A BM25 nearest-training-problem baseline.

For each evaluation problem, the training problem with the most similar statement (BM25 over statement words) is
found and its gold code is judged on the evaluation problem's tests. A high rate would mean the suite is a template the
model can memorise; the held-out compositions should keep it low. Only trusted gold code (generated from the step
table) is executed, in-process; model output never is. Run: ``python -m corecode.data.difficulty``.
"""

from __future__ import annotations

import re
from collections import defaultdict

from corecode import pysource
from corecode.data.composite import run_gold
from corecode.data.schema import Problem

_TOKEN = re.compile(r"\w+|[^\w\s]")


def statement(p: Problem) -> str:
    """The docstring statement of a composite prompt, without its examples."""
    return p.prompt.split('"""')[1].split(">>>")[0]


def copy_baseline(train: list[Problem], evals: list[Problem]) -> dict[str, float]:
    """Pass rate of "submit the nearest training problem's code", overall and per ``ood:*`` tag."""
    from rank_bm25 import BM25Okapi

    tok = lambda p: _TOKEN.findall(statement(p).lower())  # noqa: E731
    bm25 = BM25Okapi([tok(p) for p in train])
    hits: dict[str, list[bool]] = defaultdict(list)
    for p in evals:
        best = train[int(bm25.get_scores(tok(p)).argmax())]
        args = [pysource.literal_eval(t.input) for t in p.tests]
        try:
            got = [repr(x) for x in run_gold(best.reference_solution, p.entry_point, args)]
            ok = got == [t.output for t in p.tests]
        except Exception:  # the copied code crashes on these inputs: a failure, like any other
            ok = False
        for key in ["all"] + [t for t in p.tags if t.startswith("ood:")]:
            hits[key].append(ok)
    return {k: sum(v) / len(v) for k, v in hits.items()}


if __name__ == "__main__":
    from corecode.data.composite import generate_composite

    suite = generate_composite(seed=0)
    for split in ("val", "test"):
        print(split, {k: round(v, 3) for k, v in copy_baseline(suite["train"], suite[split]).items()})
