"""Collect every method's evaluation into ``data/reports/metrics.json`` with paired bootstrap comparisons.

``metrics.json`` is the file the report and the promotion gate read:
``{"methods": {method: {benchmark: {pass_at_1, pass_at_k, failures, test_pass_rate, runtime, ...}}},
"comparisons": [{a, b, benchmark, delta, p_value, ci_low, ci_high}], "runtime_comparisons": [...]}``, identical bit
for bit when the pipeline is re-run with the same params (generation cost in tokens and model calls included, under
each result's ``efficiency``), except the timings: each result's ``runtime`` (passing programs' median runtime and
peak memory relative to the reference solution, over all problems and over composite's efficiency family) and
``runtime_comparisons`` (the same pairs, on the problems both pass; :func:`add_runtime`). Absolute runtimes and
memory of passing code go to ``efficiency.json`` beside it.

What DVC shows is written beside them in the shapes its commands need. ``scores/`` holds the headline numbers, one
small file per row of the one table ``dvc metrics show`` prints (:func:`write_scores`): pass@1 of each method, delta
and p-value of each paired comparison, on each benchmark.
``plots/pass_at_k_<benchmark>.json`` are the pass@k bars; ``curves/<log>.json`` and ``curves/<log>_eval.json`` are
the training logs as ``dvc plots`` tables (:func:`write_curves`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from corecode.config import Params
from corecode.paths import REPORTS
from corecode.pipeline.evaluate import EVAL_DIR

METRICS_FILE = REPORTS / "metrics.json"
# The main pipeline's training logs (the optional baselines' lie beside them and are passed by their own stage).
TRAIN_LOGS = tuple(
    REPORTS / "train" / f"{name}.json"
    for name in ("sft_planner", "sft_coder", "sft_single", "grpo_team", "grpo_ptx", "grpo_single", "grpo_magrpo")
)
# Keys of a Trainer's end-of-training record (one row; no curve) and the prefixes of evaluation keys.
TRAINER_SUMMARY_KEYS = {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss"}
EVAL_PREFIXES = ("eval_", "eval/")


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
            if not all((dirs[m] / f"{bench}.jsonl").exists() for m in (a, b)):
                continue  # a method evaluated on fewer benchmarks (evaluate.per_method)
            scores_a = per_problem_scores(a, bench, dirs[a].parent)
            scores_b = per_problem_scores(b, bench, dirs[b].parent)
            shared = scores_a.keys() & scores_b.keys()  # a method scored on the first N problems only
            res = paired_bootstrap(
                {t: scores_a[t] for t in shared},
                {t: scores_b[t] for t in shared},
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
    # seed: every method is one training run of the pipeline's seed (each result's pass_at_1_ci is over problems)
    metrics = {"methods": methods, "comparisons": rows, "seed": params.seed}
    metrics["runtime_comparisons"] = add_runtime(metrics, dirs, params, comparisons)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    # Runtime and memory of passing code vary from run to run: a file of their own keeps metrics.json reproducible.
    out.with_name("efficiency.json").write_text(json.dumps(efficiency, indent=2, sort_keys=True) + "\n")
    metrics = {**metrics, "efficiency": efficiency}
    write_plot_tables(metrics, out.parent / "plots")
    write_scores(metrics, out.parent / "scores")
    return metrics


def add_runtime(
    metrics: dict, dirs: dict[str, Path], params: Params, comparisons: Sequence[tuple[str, str]] | None = None
) -> list[dict]:
    """Runtime and peak memory of passing programs relative to the reference (each method's ``runtime.json``,
    corecode.evaluation.runtime): a ``runtime`` summary beside each method's pass@1, and the paired comparisons of
    ``report.comparisons`` on the problems both methods pass (returned). Timings: not reproducible bit for bit."""
    from corecode.evaluation import runtime

    report = params.report
    files = {m: d / "runtime.json" for m, d in dirs.items()}
    per_problem = {m: json.loads(f.read_text()) for m, f in files.items() if f.exists()}
    for m, per_bench in per_problem.items():
        for bench, rows in per_bench.items():
            if bench in metrics["methods"][m]:
                metrics["methods"][m][bench]["runtime"] = runtime.summarize(rows)
    out = []
    for a, b in report.comparisons if comparisons is None else comparisons:
        for bench in sorted(per_problem.get(a, {}).keys() & per_problem.get(b, {}).keys()):
            row = {"a": a, "b": b, "benchmark": bench}
            for key in ("runtime_ratio", "memory_ratio"):
                row[key] = runtime.compare(
                    per_problem[a][bench],
                    per_problem[b][bench],
                    key,
                    n_resamples=report.n_resamples,
                    seed=params.seed,
                    alternative=report.alternative,
                    confidence=report.confidence,
                )
            out.append(row)
    return out


def write_scores(metrics: dict, scores_dir: Path) -> list[Path]:
    """The headline numbers for ``dvc metrics show``: ``<benchmark>/<method>.json`` (``pass@1``) and
    ``<benchmark>/<a>_vs_<b>.json`` (``delta`` and ``p_value`` of a paired comparison), so its table has one row per
    method or comparison on a benchmark and three columns. Files no longer in ``metrics`` are removed."""
    if scores_dir.is_dir():
        for old in scores_dir.glob("*/*.json"):
            old.unlink()
    rows: dict[tuple[str, str], dict] = {}
    for method, per_bench in metrics["methods"].items():
        for bench, s in per_bench.items():
            rows[bench, method] = {"pass@1": s["pass_at_1"]}
    for c in metrics["comparisons"]:
        rows[c["benchmark"], f"{c['a']}_vs_{c['b']}"] = {"delta": c["delta"], "p_value": c["p_value"]}
    written = []
    for (bench, name), content in rows.items():
        path = scores_dir / re.sub(r"[^\w.+-]+", "_", bench) / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, sort_keys=True) + "\n")
        written.append(path)
    return written


def write_curves(logs: Sequence[Path], curves_dir: Path) -> list[Path]:
    """Each training log (a JSON list of per-step records) as ``dvc plots`` tables in ``curves_dir``.

    DVC plots a file only when all its rows have the same keys, and a training log mixes training steps, evaluation
    steps and the Trainer's end-of-training record. ``<log>.json`` holds the training keys of the rows that have any,
    ``<log>_eval.json`` the evaluation keys (``eval_*``, ``eval/*``) of the rows that have any (an empty list for a
    log without evaluations); each row has ``step`` and every key of its table (null where that step did not log it).
    Written by hand: DVC and its renderer take no row filter.
    """
    curves_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for log in logs:
        log = Path(log)
        if not log.is_file():
            raise FileNotFoundError(f"{log}: training log not found (run its training stage first)")
        try:
            rows = json.loads(log.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{log}:{e.lineno}: not valid JSON: {e.msg}") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{log}: expected a JSON list of per-step records")
        keys = sorted({k for r in rows for k in r if k != "step" and k not in TRAINER_SUMMARY_KEYS})
        for suffix, wanted in (("", False), ("_eval", True)):
            cols = [k for k in keys if k.startswith(EVAL_PREFIXES) == wanted]
            table = [{"step": r.get("step"), **{k: r.get(k) for k in cols}} for r in rows if any(k in r for k in cols)]
            path = curves_dir / f"{log.stem}{suffix}.json"
            path.write_text(json.dumps(table, indent=1) + "\n")
            written.append(path)
    return written


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
