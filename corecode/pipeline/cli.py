"""CLI for the pipeline glue stages: ``evaluate`` (one method) and ``metrics`` (collect + compare)."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, load_cli_params


def register(app: typer.Typer) -> None:
    @app.command("evaluate")
    def evaluate(
        method: str = typer.Option(..., "--method", "-m", help="Team name in agents.teams to evaluate."),
        out_dir: Path = typer.Option(None, "--out-dir", help="Write under OUT_DIR/METHOD (default data/reports/eval)."),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Evaluate one method on every benchmark in evaluate.benchmarks (DVC stage evaluate@METHOD)."""
        from corecode.pipeline.evaluate import EVAL_DIR, evaluate_method
        from corecode.tracking.runs import stage_run

        params = load_cli_params(params_file, overrides)
        with stage_run(f"evaluate_{method}", params):
            summary = evaluate_method(method, params, out_dir or EVAL_DIR)
            _log_summary(summary)
        for bench, s in summary["benchmarks"].items():
            gain = f"  collaboration_gain={s['collaboration_gain']:+.3f}" if "collaboration_gain" in s else ""
            typer.echo(f"{method} {bench}: pass@1={s['pass_at_1']:.3f}{gain}")

    @app.command("metrics")
    def metrics(
        eval_dirs: list[Path] = typer.Option(
            None, "--eval-dir", help="Where evaluations are (default data/reports/eval); repeatable."
        ),
        compare: list[str] = typer.Option(
            None, "--compare", help="A:B, a paired comparison instead of report.comparisons; repeatable."
        ),
        out: Path = typer.Option(None, "--out", help="metrics file to write (default data/reports/metrics.json)."),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Collect every method's evaluation into data/reports/metrics.json with paired bootstrap comparisons."""
        from corecode.pipeline.evaluate import EVAL_DIR
        from corecode.pipeline.metrics import METRICS_FILE, collect_metrics

        pairs = [tuple(c.split(":", 1)) for c in compare or []]
        if any(len(pair) != 2 for pair in pairs):
            raise typer.BadParameter("expected METHOD_A:METHOD_B", param_hint="--compare")
        out = out or METRICS_FILE
        m = collect_metrics(load_cli_params(params_file, overrides), eval_dirs or [EVAL_DIR], out, pairs or None)
        for c in m["comparisons"]:
            typer.echo(f"{c['a']} vs {c['b']} on {c['benchmark']}: delta={c['delta']:+.3f} p={c['p_value']:.4f}")
        typer.echo(f"wrote {out}")


def _log_summary(summary: dict) -> None:
    """Evaluation numbers into the stage's MLflow run, when one is active."""
    try:
        import mlflow
    except ImportError:  # a host without MLflow (tracking.enabled: false, e.g. the GPU image): no run to log into
        return

    from corecode.evaluation.aggregate import flat_metrics

    if mlflow.active_run() is None:
        return
    for bench, s in summary["benchmarks"].items():
        mlflow.log_metrics(flat_metrics(s, bench))
