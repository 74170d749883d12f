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
from collections.abc import Sequence
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


def evaluated_methods(roots: Sequence[Path] = (EVAL_DIR,)) -> dict[str, Path]:
    """``{method: its evaluation directory}`` for every ``<root>/<method>/summary.json``, sorted by method."""
    found = {d.name: d for root in roots if root.is_dir() for d in root.iterdir() if (d / "summary.json").is_file()}
    if not found:
        raise FileNotFoundError(f"{', '.join(map(str, roots))}: no evaluated method (run the evaluate stages first)")
    return dict(sorted(found.items()))


def collect_metrics(
    params: Params,
    roots: Sequence[Path] = (EVAL_DIR,),
    out: Path = METRICS_FILE,
    comparisons: Sequence[tuple[str, str]] | None = None,
) -> dict:
    """Every method evaluated under ``roots`` and the paired comparisons (``report.comparisons`` unless given)."""
    from corecode.evaluation.stats import paired_bootstrap

    report = params.report
    dirs = evaluated_methods(roots)
    methods = {m: json.loads((d / "summary.json").read_text())["benchmarks"] for m, d in dirs.items()}
    efficiency = {
        m: json.loads((d / "efficiency.json").read_text()) if (d / "efficiency.json").exists() else {}
        for m, d in dirs.items()
    }
    rows = []
    for a, b in report.comparisons if comparisons is None else comparisons:
        for name in (a, b):
            if name not in dirs:
                raise FileNotFoundError(
                    f"report.comparisons names {name!r}, which has no evaluation under {', '.join(map(str, roots))}"
                )
        for bench in params.evaluate.benchmarks:
            res = paired_bootstrap(
                per_problem_scores(a, bench, dirs[a].parent),
                per_problem_scores(b, bench, dirs[b].parent),
                n_resamples=report.n_resamples,
                seed=params.seed,
                alternative=report.alternative,
                confidence=report.confidence,
            )
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "benchmark": bench,
                    "delta": res.delta,
                    "p_value": res.p_value,
                    "ci_low": res.ci_low,
                    "ci_high": res.ci_high,
                    "alternative": report.alternative,
                    "n_problems": res.n_problems,
                }
            )
    metrics = {"methods": methods, "comparisons": rows}
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
