"""The ``corecode`` command line: a thin layer over the library.

Each package contributes its commands through a ``register(app)`` function in its own ``cli.py``; heavy imports
(torch, transformers, mlflow) happen inside the commands so that ``corecode --help`` stays fast.
"""

from __future__ import annotations

import importlib

import click
import typer
from typer.core import TyperGroup

from corecode.cli_common import STATE, report_error


class _Commands(TyperGroup):
    """The root command: an exception a command raises ends it with a short ``error:`` line
    (corecode.cli_common.report_error), or, under ``--debug``, with its traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, typer.Exit, typer.Abort):
            raise
        except Exception as err:
            if STATE["debug"]:
                raise
            report_error(err)
        finally:  # the options hold for this invocation only (tests invoke the app many times in one process)
            STATE.update(debug=False, pipeline_outputs=False)


app = typer.Typer(
    cls=_Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help=__doc__.splitlines()[0],
)


@app.callback()
def main(
    debug: bool = typer.Option(False, "--debug", help="On an error, show the traceback, not one error line."),
    pipeline_outputs: bool = typer.Option(
        False,
        "--pipeline-outputs",
        help="Write the pipeline's outputs in their places under data/ (what dvc.yaml runs); without it a stage "
        "command writes them under data/work/manual/.",
    ),
) -> None:
    """corecode: train LLM teams (Planner -> Coder) to write code."""
    STATE.update(debug=debug, pipeline_outputs=pipeline_outputs)


# One line per package that has commands. Keep sorted.
COMMAND_MODULES = [
    "corecode.agents.cli",
    "corecode.data.cli",
    "corecode.evaluation.cli",
    "corecode.generation.cli",
    "corecode.models.cli",
    "corecode.pipeline.cli",
    "corecode.sandbox.cli",
    "corecode.tracking.cli",
    "corecode.training.cli",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


@app.command("version")
def version() -> None:
    """Print the corecode version."""
    from corecode import __version__

    typer.echo(__version__)


if __name__ == "__main__":
    app()
