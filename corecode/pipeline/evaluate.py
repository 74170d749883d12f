"""The ``evaluate`` stage: one method (a team from ``agents.teams``) on every benchmark in ``evaluate.benchmarks``.

Writes, under ``data/reports/eval/<method>/``:
- ``<benchmark>.jsonl``: one line per problem (task_id, n, c, pass@1, verdicts, pass fractions, first attempt's
  plan and code) -- the per-problem data that paired bootstrap comparisons and the promotion gate need;
- ``summary.json``: pass@1, pass@k, failure breakdown, test pass rate per benchmark, the generation cost
  (``efficiency``: completion tokens per sample, per role and per solved problem; model calls per sample) and, for
  Planner -> Coder teams, the Collaboration Gain (the Coder's pass rate with the Planner's plan minus without a plan,
  same problems);
- ``efficiency.json``: runtime and peak memory of passing code (absolute and relative to the reference). Timings
  vary from run to run, so they are kept out of ``summary.json``, whose numbers are reproducible bit for bit;
- ``runtime.json``: per benchmark, per problem with a passing program, its runtime and peak memory relative to the
  reference solution (``corecode.evaluation.runtime``), for the per-method medians and paired comparisons in
  ``metrics.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corecode.config import Params
from corecode.data.schema import Problem
from corecode.paths import REPORTS

EVAL_DIR = REPORTS / "eval"


def _per_problem_rows(problems: list[Problem], attempts, results) -> list[dict[str, Any]]:
    rows = []
    for p, atts in zip(problems, attempts):
        rs = results[p.task_id]
        first = atts[0] if atts else None
        rows.append(
            {
                "task_id": p.task_id,
                "n": len(rs),
                "c": sum(r.passed for r in rs),
                "pass_at_1": (sum(r.passed for r in rs) / len(rs)) if rs else 0.0,
                "verdicts": [r.verdict.value for r in rs],
                "pass_fractions": [round(r.pass_fraction, 6) for r in rs],
                "plan": getattr(first, "plan", None),
                "code": getattr(first, "code", None),
            }
        )
    return rows


def generation_cost(attempts) -> dict[str, Any]:
    """What a method spends to produce its samples, in tokens and model calls: deterministic for a fixed seed, so it
    can sit in ``metrics.json`` (wall-clock figures cannot)."""
    flat = [a for atts in attempts for a in atts]
    n = max(1, len(flat))
    by_role: dict[str, int] = {}
    for a in flat:
        for role, t in a.tokens.items():
            by_role[role] = by_role.get(role, 0) + t
    total = sum(by_role.values())
    return {
        "n_samples": len(flat),
        "tokens_per_sample": total / n,
        "tokens_per_sample_by_role": {r: t / n for r, t in sorted(by_role.items())},
        "model_calls_per_sample": sum(len(a.tokens) for a in flat) / n,
    }


def _split_efficiency(summary: dict) -> tuple[dict, dict]:
    """(deterministic part, timing part) of a summary; timing keys are nested under 'efficiency'."""
    det, eff = {}, {}
    for k, v in summary.items():
        if k == "efficiency":
            eff["overall"] = v
        elif k in ("by_difficulty", "by_source") and isinstance(v, dict):
            det[k] = {}
            for g, sub in v.items():
                d, e = _split_efficiency(sub)
                det[k][g] = d
                if e:
                    eff.setdefault(k, {})[g] = e.get("overall", e)
        else:
            det[k] = v
    return det, eff


def _solve_and_score(team, problems, n, sandbox, ks, with_reference):
    from corecode.evaluation.eval_samples import evaluate_samples

    attempts = team.solve(problems, n)
    samples = {p.task_id: [a.program for a in atts] for p, atts in zip(problems, attempts)}
    results, summary = evaluate_samples(problems, samples, sandbox, ks=ks, with_reference=with_reference)
    return attempts, results, summary


def collaboration_gain_team(method: str, params: Params):
    """For a Planner -> Coder team (a debugging agent around one included): the same Coder model prompted without a
    plan (a ``single`` team)."""
    from corecode.agents.config import TeamSpec

    spec = params.agents.teams[method]
    if spec.type == "debugging":
        spec = params.agents.teams[spec.parsed_options().inner]
    if spec.type not in ("planner_coder", "retrieval"):
        return None
    name = f"_{method}_coder_alone"
    params.agents.teams[name] = TeamSpec(type="single", roles={"coder": spec.roles["coder"]})
    return name


def evaluate_method(method: str, params: Params, out_root: Path = EVAL_DIR) -> dict:
    """Evaluate one method on every configured benchmark; return its summary (also written to disk)."""
    from corecode.agents.factory import build_team, model_generator_factory
    from corecode.evaluation.benchmarks import get_benchmark
    from corecode.evaluation.eval_samples import write_jsonl_atomic
    from corecode.sandbox import Sandbox

    ev = params.evaluate
    if method not in params.agents.teams:
        raise KeyError(f"evaluate: method {method!r} is not a team in agents.teams ({sorted(params.agents.teams)})")
    out_dir = out_root / method
    out_dir.mkdir(parents=True, exist_ok=True)
    make_generator = model_generator_factory(params)
    team = build_team(method, params, make_generator, seed=params.seed)
    alone_name = collaboration_gain_team(method, params) if ev.collaboration_gain else None
    alone = build_team(alone_name, params, make_generator, seed=params.seed) if alone_name else None

    summary: dict[str, Any] = {"method": method, "team": params.agents.teams[method].type, "benchmarks": {}}
    efficiency: dict[str, Any] = {}
    runtime: dict[str, Any] = {}
    with Sandbox(params.sandbox) as sandbox:
        benchmarks, max_problems = ev.for_method(method)
        for bench in benchmarks:
            problems = get_benchmark(bench, params.data, params.seed)
            if max_problems:
                problems = problems[:max_problems]
            n = ev.n_samples_per_benchmark.get(bench, ev.n_samples)
            attempts, results, bench_summary = _solve_and_score(team, problems, n, sandbox, ev.ks, ev.with_reference)
            runtime[bench] = bench_summary.pop("runtime", {})
            write_jsonl_atomic(out_dir / f"{bench}.jsonl", _per_problem_rows(problems, attempts, results))
            det, eff = _split_efficiency(bench_summary)
            det["efficiency"] = cost = generation_cost(attempts)
            # tokens spent per problem solved at pass@1 (one sample per problem); None when nothing passes
            cost["tokens_per_solved_problem"] = (
                cost["tokens_per_sample"] / det["pass_at_1"] if det["pass_at_1"] else None
            )
            if alone is not None and bench in ev.collaboration_gain_benchmarks:
                n_alone = ev.collaboration_gain_n_samples or n
                alone_ks = [k for k in ev.ks if k <= n_alone] or [1]
                _, _, alone_summary = _solve_and_score(alone, problems, n_alone, sandbox, alone_ks, False)
                det["coder_alone_n_samples"] = n_alone
                det["coder_alone_pass_at_1"] = alone_summary["pass_at_1"]
                det["collaboration_gain"] = det["pass_at_1"] - alone_summary["pass_at_1"]
            summary["benchmarks"][bench] = det
            efficiency[bench] = eff
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (out_dir / "efficiency.json").write_text(json.dumps(efficiency, indent=2, sort_keys=True) + "\n")
    (out_dir / "runtime.json").write_text(json.dumps(runtime, indent=2, sort_keys=True) + "\n")
    return summary
