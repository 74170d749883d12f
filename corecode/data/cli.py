"""Commands ``corecode build-data`` and ``corecode validate-data``."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, load_cli_params, output_path
from corecode.paths import PROCESSED, REPORTS


def register(app: typer.Typer) -> None:
    @app.command("build-data")
    def build_data_cmd(
        params: Path = PARAMS_OPTION,
        out_dir: Path = typer.Option(None, help="Where the JSONL datasets go (default data/processed)."),
        reports_dir: Path = typer.Option(None, help="Where the data card and build summary go (default data/reports)."),
        override: list[str] = SET_OPTION,
    ) -> None:
        """Generate the composite splits and the Planner/Coder/single SFT sets (decontaminated), plus the data card."""
        from rich.console import Console
        from rich.table import Table

        from corecode.data.build import build_data

        p = load_cli_params(params, override)
        console = Console(soft_wrap=True)
        summary = build_data(p.data, p.seed, out_dir or output_path(PROCESSED), reports_dir or output_path(REPORTS))
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
        names: list[str] = typer.Argument(
            None, help="Datasets to check (default: data.validation.datasets, the train sources' RL files <name>_rl)."
        ),
        params: Path = PARAMS_OPTION,
        processed_dir: Path = typer.Option(PROCESSED, help="Where the JSONL datasets are."),
        reports_dir: Path = typer.Option(
            None, help="GX reports go to <reports_dir>/gx/, data docs to <reports_dir>/gx_docs/ (default data/reports)."
        ),
        override: list[str] = SET_OPTION,
    ) -> None:
        """Run the great-expectations suites; exit 1 (with a summary of what failed) if any fails."""
        from rich.console import Console

        from corecode.data.validate import validate_datasets

        p = load_cli_params(params, override)
        console = Console(soft_wrap=True)  # one line per failure, whatever the terminal width
        results = validate_datasets(p.data, names or None, processed_dir, reports_dir or output_path(REPORTS))
        for r in results:
            mark = "[green]PASS[/]" if r.success else "[red]FAIL[/]"
            console.print(f"{mark} {r.name} ({r.rows} rows, {r.path}) report: {r.report}")
            for f in r.failures:
                console.print(f"     {f}", markup=False, highlight=False)
        failed = [r.name for r in results if not r.success]
        if failed:
            console.print(f"[red]validation failed for: {', '.join(failed)}[/]")
            raise typer.Exit(1)
