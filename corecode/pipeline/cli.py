"""CLI for the pipeline glue stages: ``check-params`` (stage params), ``evaluate`` (one method) and ``metrics``
(collect + compare), and ``repro`` (the DVC pipeline, independent stages side by side)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, fail, load_cli_params, output_path


def register(app: typer.Typer) -> None:
    @app.command("check-params")
    def check_params(
        params_file: Path = PARAMS_OPTION,
        out_dir: Path = typer.Option(None, "--out-dir", help="Where the section files go (default data/params)."),
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Validate params.yaml; write each section, defaults filled in, to data/params/SECTION.json (stage params)."""
        from corecode.paths import PARAMS_DIR
        from corecode.pipeline.params_stage import write_sections

        written = write_sections(load_cli_params(params_file, overrides), out_dir or output_path(PARAMS_DIR))
        typer.echo(f"{params_file}: valid; {len(written)} sections in {written[0].parent}/")

    @app.command("evaluate")
    def evaluate(
        method: str = typer.Option(..., "--method", "-m", help="Team name in agents.teams to evaluate."),
        out_dir: Path = typer.Option(
            None, "--out-dir", help="Write under OUT_DIR/METHOD (default data/reports/eval; see corecode --help)."
        ),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Evaluate one method on every benchmark in evaluate.benchmarks (DVC stage evaluate@METHOD)."""
        from corecode.pipeline.evaluate import EVAL_DIR, evaluate_method
        from corecode.tracking.runs import stage_run

        params = load_cli_params(params_file, overrides)
        with stage_run(f"evaluate_{method}", params) as run:
            root = out_dir or output_path(EVAL_DIR)
            summary = evaluate_method(method, params, root)
            _log_summary(summary)
            run.log_artifacts(root / method, "eval")  # per-problem results, summary and timings
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
        train_logs: list[Path] = typer.Option(
            None, "--train-log", help="Training log to turn into dvc plots tables (default the pipeline's); repeatable."
        ),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Collect every method's evaluation into data/reports/metrics.json with paired bootstrap comparisons; beside
        it scores/ (dvc metrics show), plots/ (pass@k bars) and curves/ (training logs for dvc plots show)."""
        from corecode.pipeline.evaluate import EVAL_DIR
        from corecode.pipeline.metrics import METRICS_FILE, TRAIN_LOGS, collect_metrics, write_curves

        pairs = [tuple(c.split(":", 1)) for c in compare or []]
        if any(len(pair) != 2 for pair in pairs):
            raise typer.BadParameter("expected METHOD_A:METHOD_B", param_hint="--compare")
        out = out or output_path(METRICS_FILE)
        m = collect_metrics(load_cli_params(params_file, overrides), eval_dirs or [EVAL_DIR], out, pairs or None)
        write_curves(train_logs or TRAIN_LOGS, out.parent / "curves")
        for c in m["comparisons"]:
            typer.echo(f"{c['a']} vs {c['b']} on {c['benchmark']}: delta={c['delta']:+.3f} p={c['p_value']:.4f}")
        typer.echo(f"wrote {out}")

    @app.command("repro")
    def repro(
        targets: list[str] = typer.Argument(None, help="Stages (or foreach groups) to reproduce, with what they need."),
        jobs: int = typer.Option(1, "--jobs", "-j", help="Stages that may run at once."),
        threads: int = typer.Option(1, "--threads", help="Torch threads (OMP_NUM_THREADS) of every stage."),
        repo: Path = typer.Option(Path("."), "--repo", help="The DVC project to reproduce."),
        force: bool = typer.Option(False, "--force", "-f", help="Run every selected stage, even if up to date."),
        dry: bool = typer.Option(False, "--dry", help="Print the stages that would run and why; run nothing."),
    ) -> None:
        """dvc repro, with up to JOBS independent stages at once (dvc repro --single-item each, THREADS threads)."""
        from corecode.pipeline.repro import ReproFailed, stages_to_run
        from corecode.pipeline.repro import repro as run_pipeline

        if dry:
            _print_dry_run(stages_to_run(repo, targets or None, force))
            return
        lock = threading.Lock()

        def echo(line: str) -> None:
            with lock:  # one stage's line at a time
                typer.echo(line)

        start = time.monotonic()
        try:
            seconds = run_pipeline(repo, targets or None, jobs, threads, echo, force)
        except ReproFailed as e:
            typer.echo("\n".join(f"{e.stage} | {line}" for line in e.tail), err=True)
            fail(str(e), code=1)
        ran = sum(seconds.values())
        typer.echo(f"{len(seconds)} stages in {time.monotonic() - start:.0f} s ({ran:.0f} s of stage time)")


def _print_dry_run(would_start) -> None:
    """``corecode repro --dry``: each stage that would start, and why."""
    width = max((len(run.stage) for run in would_start), default=0)
    for run in would_start:
        after = ", ".join(run.after[:3]) + (f" and {len(run.after) - 3} more" if len(run.after) > 3 else "")
        why = ", ".join(run.changed) if run.changed else f"checked after {after}"
        typer.echo(f"{run.stage:<{width}} | {why}")
    changed = sum(1 for run in would_start if run.changed)
    if not would_start:
        typer.echo("every stage is up to date (dvc status)")
    else:
        typer.echo(
            f"{changed} stage(s) changed; {len(would_start) - changed} more start after them and run only if their "
            "inputs change"
        )


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
        # a benchmark given as a file path is named by its stem (MLflow refuses '/' that climbs out of a name)
        mlflow.log_metrics(flat_metrics(s, Path(bench).stem if "/" in bench else bench))
