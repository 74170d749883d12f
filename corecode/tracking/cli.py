"""``corecode report`` and ``corecode promote``: the last two stages of the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, fail, load_cli_params, output_path
from corecode.paths import REPORTS


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        metrics: Path = typer.Option(REPORTS / "metrics.json", help="metrics.json from the evaluate stage."),
        train_dir: Path = typer.Option(REPORTS / "train", help="Per-step training logs (*.json, *.csv)."),
        out_dir: Path = typer.Option(None, help="Where report.md and plots/ are written (default data/reports)."),
        readme: Path = typer.Option(
            None,
            "--readme",
            help="Only rewrite this file's results block (between <!-- RESULTS:BEGIN --> and <!-- RESULTS:END -->) "
            "from --metrics, and nothing else: `make run` does this after `dvc repro`, so no stage depends on "
            "README.md.",
        ),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Write report.md + PNG plots (pass@k, failures, efficiency, training curves) and log them to MLflow: the
        plots as images, report.html with the plots inside it, the headline numbers also on the pipeline's run."""
        from corecode.tracking.report import (
            ReportError,
            build_report,
            flat_metrics,
            headline_metrics,
            load_metrics,
            render_html,
            update_readme,
        )
        from corecode.tracking.runs import experiment_url, stage_run

        if readme is not None:
            try:
                typer.echo(f"wrote the results block of {update_readme(readme, metrics)} from {metrics}")
            except ReportError as e:
                fail(str(e))
            return

        params = load_cli_params(params_file, overrides)
        with stage_run("report", params) as run:
            try:
                path, plots = build_report(metrics, train_dir, out_dir or output_path(REPORTS))
            except ReportError as e:
                fail(str(e))
            run.log_artifacts(path)
            run.log_text(render_html(path.read_text(), path.parent), "report.html")  # previews with its plots
            run.log_artifacts(metrics)
            if plots:
                run.log_artifacts(plots[0].parent, "plots")
            run.log_images(plots)
            data = load_metrics(metrics)
            run.log_metrics(flat_metrics(data))
            run.log_parent_metrics(headline_metrics(data))
        typer.echo(f"wrote {path} and {len(plots)} plots")
        if run.enabled:
            typer.echo(f"MLflow (make mlflow-ui): {experiment_url(params.tracking)}")

    @app.command("promote")
    def promote(
        eval_dir: Path = typer.Option(REPORTS / "eval", help="Per-problem results: <dir>/<method>/<benchmark>.jsonl"),
        out: Path = typer.Option(
            None, help="Where the decision is written (JSON; default data/reports/promotion.json)."
        ),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
    ) -> None:
        """Register the candidate checkpoint as a new model version; move `champion` to it only if it is better."""
        from corecode.tracking.promote import apply_gate, read_per_problem
        from corecode.tracking.registry import register_checkpoint
        from corecode.tracking.runs import stage_run

        params = load_cli_params(params_file, overrides)
        pp = params.promote
        out = out or output_path(REPORTS / "promotion.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        if not params.tracking.enabled:
            decision = {"promoted": False, "reason": "tracking disabled (tracking.enabled=false): no registry"}
            out.write_text(json.dumps(decision, indent=2) + "\n")
            typer.echo(decision["reason"])
            return
        method_dir = eval_dir / pp.method
        files = sorted(method_dir.glob("*.jsonl"))
        if not any(f.stem == pp.gate_benchmark for f in files):
            fail(
                f"{method_dir / (pp.gate_benchmark + '.jsonl')}: gate benchmark results not found "
                f"(promote.method={pp.method!r}, promote.gate_benchmark={pp.gate_benchmark!r})"
            )
        try:
            per_problem = {f.stem: read_per_problem(f) for f in files}
        except ValueError as e:
            fail(str(e))
        with stage_run("promote", params) as run:
            gate = per_problem[pp.gate_benchmark]
            tags = {
                "corecode.method": pp.method,
                f"corecode.{pp.gate_benchmark}.pass_at_1": f"{sum(gate.values()) / len(gate):.6f}",
            }
            try:
                mv = register_checkpoint(pp.checkpoints, pp.model_name, run, per_problem=per_problem, tags=tags)
            except FileNotFoundError as e:
                fail(f"{e} (promote.checkpoints)")
            decision = apply_gate(pp.model_name, str(mv.version), pp)
            run.log_dict(decision.to_dict(), "promotion.json")
            run.log_metrics(
                {k: v for k, v in decision.to_dict().items() if k in ("delta", "p_value") and v is not None}
                | {"promoted": float(decision.promoted)}
            )
        out.write_text(json.dumps(decision.to_dict(), indent=2) + "\n")
        verb = "promoted to" if decision.promoted else "kept as challenger, not"
        typer.echo(f"{pp.model_name} v{decision.version} {verb} {pp.alias}: {decision.reason}")
