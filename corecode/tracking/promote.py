"""The promotion gate: move the ``champion`` alias to a new version only if it is significantly better.

A candidate becomes champion when there is no champion yet, or when a paired bootstrap over the gate benchmark's
problems (candidate pass@1 vs champion pass@1, per problem, from corecode.evaluation.stats) gives
``delta > 0`` and ``p < promote.p_value_threshold``. Otherwise the version is tagged ``challenger`` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from corecode.tracking.config import PromoteParams

CHALLENGER_TAG = "challenger"
DECISION_TAG = "corecode.promotion"


@dataclass
class PromotionDecision:
    """What ``corecode promote`` decided, written to data/reports/promotion.json."""

    model_name: str
    version: str
    promoted: bool
    reason: str
    benchmark: str
    previous_champion: str | None = None
    delta: float | None = None
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_problems: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def read_per_problem(path: str | Path) -> dict[str, float]:
    """``{task_id: c / n}`` from an evaluation JSONL (one line per problem with ``task_id``, ``n``, ``c``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: per-problem results not found (written by the evaluate stage)")
    rates: dict[str, float] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            task_id, n, c = str(rec["task_id"]), int(rec["n"]), int(rec["c"])
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}:{lineno}: expected a JSON object with task_id, n, c ({e})") from None
        if n <= 0 or not 0 <= c <= n:
            raise ValueError(f"{path}:{lineno}: need n > 0 and 0 <= c <= n, got n={n}, c={c}")
        if task_id in rates:
            raise ValueError(f"{path}:{lineno}: duplicate task_id {task_id!r}")
        rates[task_id] = c / n
    if not rates:
        raise ValueError(f"{path}: no per-problem results")
    return rates


def decide(
    candidate: dict[str, float], champion: dict[str, float] | None, params: PromoteParams, champion_version: str | None
) -> tuple[bool, str, dict]:
    """Pure gate: ``(promote?, reason, stats)`` from two ``{task_id: pass rate}`` maps on the gate benchmark."""
    from corecode.evaluation.stats import paired_bootstrap

    bench = params.gate_benchmark
    if champion_version is None:
        return True, f"no {params.alias} yet: first version becomes {params.alias}", {}
    if champion is None:
        return False, f"{params.alias} v{champion_version} has no per-problem results on {bench}: cannot compare", {}
    if set(candidate) != set(champion):
        return (
            False,
            f"{bench}: candidate and {params.alias} v{champion_version} were evaluated on different problems "
            f"({len(candidate)} vs {len(champion)}, {len(set(candidate) ^ set(champion))} differ)",
            {},
        )
    res = paired_bootstrap(
        candidate, champion, n_resamples=params.n_resamples, seed=params.seed, alternative=params.alternative
    )
    stats = {
        "delta": res.delta,
        "p_value": res.p_value,
        "ci_low": res.ci_low,
        "ci_high": res.ci_high,
        "n_problems": res.n_problems,
    }
    detail = (
        f"{bench}: delta pass@1 = {res.delta:+.4f} over {res.n_problems} problems, "
        f"p = {res.p_value:.4g} ({params.alternative}, threshold {params.p_value_threshold}) "
        f"vs {params.alias} v{champion_version}"
    )
    if res.delta > 0 and res.p_value < params.p_value_threshold:
        return True, "better: " + detail, stats
    return False, "not significantly better: " + detail, stats


def apply_gate(name: str, version: str, params: PromoteParams) -> PromotionDecision:
    """Compare registered version ``version`` of ``name`` with the current champion and move the alias or tag it."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from corecode.tracking.registry import load_per_problem

    client = MlflowClient()
    bench = params.gate_benchmark
    mine = (load_per_problem(name, version) or {}).get(bench)
    if mine is None:
        raise ValueError(f"model {name} v{version} has no per-problem results on gate benchmark {bench!r}")
    try:
        champ = client.get_model_version_by_alias(name, params.alias)
        champ_version = str(champ.version)
    except MlflowException:
        champ_version = None
    if champ_version == str(version):
        raise ValueError(f"model {name} v{version} is already {params.alias}")
    theirs = (load_per_problem(name, champ_version) or {}).get(bench) if champ_version else None
    promoted, reason, stats = decide(mine, theirs, params, champ_version)
    if promoted:
        client.set_registered_model_alias(name, params.alias, str(version))
    else:
        client.set_model_version_tag(name, str(version), CHALLENGER_TAG, reason)
    client.set_model_version_tag(name, str(version), DECISION_TAG, reason)
    return PromotionDecision(name, str(version), promoted, reason, bench, champ_version, **stats)
