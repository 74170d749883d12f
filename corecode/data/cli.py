"""Commands ``corecode build-data`` and ``corecode validate-data``."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.paths import PARAMS_FILE, PROCESSED, REPORTS


def _load(params: Path, overrides: list[str] | None):
    from corecode.config import ConfigError, load_params

    try:
        return load_params(params, overrides or None)
    except ConfigError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2) from None


def register(app: typer.Typer) -> None:
    @app.command("build-data")
    def build_data_cmd(
        params: Path = typer.Option(PARAMS_FILE, help="params.yaml to read (section `data`, key `seed`)."),
        out_dir: Path = typer.Option(PROCESSED, help="Where the JSONL datasets go."),
        reports_dir: Path = typer.Option(REPORTS, help="Where the data card and build summary go."),
        override: list[str] = typer.Option(
            None, "--set", help="Override a param, e.g. --set data.composite.n_train=50"
        ),
    ) -> None:
        """Generate the composite splits and the Planner/Coder/single SFT sets (decontaminated), plus the data card."""
        from rich.console import Console
        from rich.table import Table

        from corecode.data.build import build_data

        p = _load(params, override)
        console = Console(soft_wrap=True)
        summary = build_data(p.data, p.seed, out_dir, reports_dir)
        table = Table(title="corecode build-data")
        for col in ("dataset", "split", "rows"):
            table.add_column(col)
        for name, splits in summary.rows.items():
            for split, n in splits.items():
                table.add_row(name, split, str(n))
        console.print(table)
        console.print(f"decontamination dropped: {summary.dropped or 'nothing'}")
        console.print(f"data card: {summary.files['data_card']}")

    @app.command("validate-data")
    def validate_data_cmd(
        names: list[str] = typer.Argument(None, help="Datasets to check (default: data.validation.datasets)."),
        params: Path = typer.Option(PARAMS_FILE, help="params.yaml to read."),
        processed_dir: Path = typer.Option(PROCESSED, help="Where the JSONL datasets are."),
        reports_dir: Path = typer.Option(REPORTS, help="GX reports go to <reports_dir>/gx/."),
        override: list[str] = typer.Option(None, "--set", help="Override a param."),
    ) -> None:
        """Run the great-expectations suites; exit 1 (with a summary of what failed) if any fails."""
        from rich.console import Console

        from corecode.data.validate import validate_datasets

        p = _load(params, override)
        console = Console(soft_wrap=True)  # one line per failure, whatever the terminal width
        results = validate_datasets(p.data, names or None, processed_dir, reports_dir)
        for r in results:
            mark = "[green]PASS[/]" if r.success else "[red]FAIL[/]"
            console.print(f"{mark} {r.name} ({r.rows} rows, {r.path}) report: {r.report}")
            for f in r.failures:
                console.print(f"     {f}", markup=False, highlight=False)
        failed = [r.name for r in results if not r.success]
        if failed:
            console.print(f"[red]validation failed for: {', '.join(failed)}[/]")
            raise typer.Exit(1)
