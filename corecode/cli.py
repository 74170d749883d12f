"""The ``corecode`` command line: a thin layer over the library.

Each package contributes its commands through a ``register(app)`` function in its own ``cli.py``; ``COMMANDS`` below
names every command and the module that defines it, and a module is imported only when one of its commands runs (or
for ``corecode --help``, which lists them all with their help). So ``corecode eval-samples`` imports the sandbox and
evaluation code alone, not the training stack's command modules; heavy imports (torch, transformers, mlflow) happen
inside the commands themselves.
"""

from __future__ import annotations

import importlib

import click
import typer
import typer.main
from typer.core import TyperGroup

from corecode.cli_common import STATE, report_error

# Command -> the module whose register(app) defines it, in the order `corecode --help` lists them. One line per
# command; tests/test_cli.py checks it against what the modules register.
COMMANDS = {
    "solve": "corecode.agents.cli",
    "build-data": "corecode.data.cli",
    "validate-data": "corecode.data.cli",
    "eval-samples": "corecode.evaluation.cli",
    "serve": "corecode.generation.cli",
    "init-model": "corecode.models.cli",
    "profile": "corecode.models.cli",
    "check-params": "corecode.pipeline.cli",
    "evaluate": "corecode.pipeline.cli",
    "metrics": "corecode.pipeline.cli",
    "repro": "corecode.pipeline.cli",
    "sandbox-selftest": "corecode.sandbox.cli",
    "report": "corecode.tracking.cli",
    "promote": "corecode.tracking.cli",
    "sft": "corecode.training.cli",
    "grpo-single": "corecode.training.cli",
    "grpo-team": "corecode.training.cli",
    "grpo-magrpo": "corecode.training.cli",
}


def module_commands(module: str) -> dict[str, click.Command]:
    """The click commands that ``module``'s ``register(app)`` defines, by name."""
    sub = typer.Typer()
    importlib.import_module(module).register(sub)
    return dict(typer.main.get_group(sub).commands)


class _Commands(TyperGroup):
    """The root command: lists every command of ``COMMANDS`` and imports a command's module when it is asked for
    (click's lazy-loading group); an exception a command raises ends it with a short ``error:`` line
    (corecode.cli_common.report_error), or, under ``--debug``, with its traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in super().list_commands(ctx) if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            for name, command in module_commands(COMMANDS[cmd_name]).items():
                self.commands.setdefault(name, command)
        return super().get_command(ctx, cmd_name)

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


@app.command("version")
def version() -> None:
    """Print the corecode version."""
    from corecode import __version__

    typer.echo(__version__)


if __name__ == "__main__":
    app()
