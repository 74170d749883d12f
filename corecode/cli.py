"""The ``corecode`` command line: a thin layer over the library.

Each package contributes its commands through a ``register(app)`` function in its own ``cli.py``; heavy imports
(torch, transformers, mlflow) happen inside the commands so that ``corecode --help`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__.splitlines()[0])


@app.callback()
def main() -> None:
    """corecode: train LLM teams (Planner -> Coder) to write code."""


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
