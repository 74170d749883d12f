"""Collect every method's evaluation into ``data/reports/metrics.json`` with paired bootstrap comparisons.

``metrics.json`` is the file ``dvc metrics show``, the report and the promotion gate read:
``{"methods": {method: {benchmark: {pass_at_1, pass_at_k, failures, test_pass_rate, ...}}},
"comparisons": [{a, b, benchmark, delta, p_value, ci_low, ci_high}]}``, identical bit for bit when the pipeline is
re-run with the same params (generation cost in tokens and model calls included, under each result's ``efficiency``);
runtime and peak memory of passing code (absolute and relative to the reference) go to
``efficiency.json`` beside it, since timings vary from run to run.
"""

from __future__ import annotations

import json
from pathlib import Path

from corecode.config import Params
from corecode.paths import REPORTS
from corecode.pipeline.evaluate import EVAL_DIR

METRICS_FILE = REPORTS / "metrics.json"


def per_problem_scores(method: str, benchmark: str, root: Path = EVAL_DIR) -> dict[str, float]:
    """task_id -> pass@1 (c/n) of one method on one benchmark, from the evaluate stage's per-problem file."""
    path = root / method / f"{benchmark}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no per-problem results (run the evaluate stage for {method!r})")
    scores = {}
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            try:
                row = json.loads(line)
                scores[row["task_id"]] = row["c"] / row["n"] if row["n"] else 0.0
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{lineno}: bad per-problem row: {e}") from e
    return scores


def collect_metrics(params: Params, root: Path = EVAL_DIR, out: Path = METRICS_FILE) -> dict:
    from corecode.evaluation.stats import paired_bootstrap

    ev = params.evaluate
    methods, efficiency = {}, {}
    for method in ev.methods:
        summary_file = root / method / "summary.json"
        if not summary_file.exists():
            raise FileNotFoundError(f"{summary_file}: missing (evaluate.methods lists {method!r})")
        methods[method] = json.loads(summary_file.read_text())["benchmarks"]
        eff_file = root / method / "efficiency.json"
        efficiency[method] = json.loads(eff_file.read_text()) if eff_file.exists() else {}
    comparisons = []
    for a, b in ev.comparisons:
        for bench in ev.benchmarks:
            res = paired_bootstrap(
                per_problem_scores(a, bench, root), per_problem_scores(b, bench, root),
                n_resamples=ev.n_resamples, seed=params.seed, alternative=ev.alternative, confidence=ev.confidence,
            )
            comparisons.append(
                {"a": a, "b": b, "benchmark": bench, "delta": res.delta, "p_value": res.p_value,
                 "ci_low": res.ci_low, "ci_high": res.ci_high, "alternative": ev.alternative, "n_problems": res.n_problems}
            )
    metrics = {"methods": methods, "comparisons": comparisons}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    # Runtime and memory of passing code vary from run to run: a file of their own keeps metrics.json reproducible.
    out.with_name("efficiency.json").write_text(json.dumps(efficiency, indent=2, sort_keys=True) + "\n")
    metrics = {**metrics, "efficiency": efficiency}
    write_plot_tables(metrics, out.parent / "plots")
    return metrics


def write_plot_tables(metrics: dict, plots_dir: Path) -> list[Path]:
    """One ``pass_at_k_<benchmark>.json`` table per benchmark (rows: method, pass_at_1, pass_at_k...) for dvc plots."""
    plots_dir.mkdir(parents=True, exist_ok=True)
    benchmarks = sorted({b for per_bench in metrics["methods"].values() for b in per_bench})
    written = []
    for bench in benchmarks:
        rows = []
        for method, per_bench in sorted(metrics["methods"].items()):
            if bench in per_bench:
                s = per_bench[bench]
                rows.append({"method": method, "pass_at_1": s.get("pass_at_1"), **(s.get("pass_at_k") or {})})
        path = plots_dir / f"pass_at_k_{bench}.json"
        path.write_text(json.dumps(rows, indent=2) + "\n")
        written.append(path)
    return written
