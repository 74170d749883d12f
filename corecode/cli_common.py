"""What the ``corecode`` commands share: the ``--params`` / ``--set`` options, loading them, and one error style.

A command that reads params.yaml takes ``params: Path = PARAMS_OPTION, overrides: list[str] = SET_OPTION`` and calls
``load_cli_params(params, overrides)``. Bad input (a missing or invalid params file, a bad override, a bad argument)
ends the command with one ``error: ...`` line on stderr and exit code 2, the code click gives its own usage errors.

Any other exception a command raises ends it the same way (:func:`report_error`): one ``error:`` line naming what the
message names (file, line, key), exit code 2 for bad input (``ValueError``, a missing file), 1 for anything else, with
a second line pointing to ``corecode --debug``, which shows the traceback instead.

A stage command run by hand writes under ``data/work/manual/`` (:func:`output_path`), where DVC does not look, so it
cannot replace what the pipeline produced; dvc.yaml's commands pass ``corecode --pipeline-outputs`` to write the
pipeline's places under ``data/``.

Kept apart from ``corecode.cli``, which imports each command's module, so the command modules can import it without a
cycle; like them it imports nothing heavy at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from corecode.paths import DATA, MANUAL, PARAMS_FILE

PARAMS_OPTION = typer.Option(PARAMS_FILE, "--params", help="params.yaml to read.")
SET_OPTION = typer.Option(None, "--set", help="Override a param: KEY=VALUE (dotted key, YAML value); repeatable.")


def fail(message: str, code: int = 2) -> NoReturn:
    """End the command: ``error: MESSAGE`` (on one line) to stderr, exit ``code``."""
    head, *rest = str(message).splitlines() or [""]
    details = "; ".join(line.strip() for line in rest if line.strip())  # e.g. one per invalid key of a params file
    typer.echo(f"error: {head} {details}".rstrip(), err=True)
    raise typer.Exit(code)


# Set by the root command's options (corecode.cli.main) for the command that runs.
STATE = {"debug": False, "pipeline_outputs": False}

# Bad input a user fixes (a file, a line, a key, a value): exit 2, the code click gives usage errors and the one the
# Prefect flow does not retry. JSONDecodeError, UnicodeDecodeError and pydantic's ValidationError are ValueErrors.
USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError)

# params keys that name what a command writes (the rest of the data/ paths in params.yaml are what it reads).
OUTPUT_KEYS = (
    "sft.work_dir",
    "grpo.team.planner_output",
    "grpo.team.coder_output",
    "grpo.team.checkpoint_dir",
    "grpo.team.log_path",
    "grpo.team.ptx_control.planner_output",
    "grpo.team.ptx_control.coder_output",
    "grpo.team.ptx_control.checkpoint_dir",
    "grpo.team.ptx_control.log_path",
    "grpo.magrpo.helper_output",
    "grpo.magrpo.main_output",
    "grpo.magrpo.checkpoint_dir",
    "grpo.magrpo.log_path",
    "grpo.single.output",
    "grpo.single.pta_output",
    "grpo.single.work_dir",
    "grpo.single.log_dir",
)


def report_error(err: BaseException) -> NoReturn:
    """End the command on an exception it raised: its message through :func:`fail`, exit 2 for bad input
    (:data:`USER_ERRORS`), else 1 with the exception's type and a pointer to ``--debug``."""
    message = str(err).strip() or type(err).__name__
    if isinstance(err, USER_ERRORS):
        fail(message)
    typer.echo(f"error: {type(err).__name__}: {' '.join(message.split())}", err=True)
    typer.echo("(corecode --debug COMMAND ... shows the traceback)", err=True)
    raise typer.Exit(1)


def output_path(path: str | Path) -> Path:
    """Where a command writes ``path``, one of the pipeline's places under ``data/``: there under
    ``corecode --pipeline-outputs`` (what dvc.yaml runs), else the same place under ``data/work/manual/``, which no
    stage reads or writes. Absolute paths and paths outside ``data/`` are left as they are."""
    path = Path(path)
    if STATE["pipeline_outputs"] or path.is_absolute() or path.parts[:1] != DATA.parts:
        return path
    if path.parts[: len(MANUAL.parts)] == MANUAL.parts:
        return path
    return MANUAL / path.relative_to(DATA)


def load_cli_params(path: str | Path = PARAMS_FILE, overrides: list[str] | dict[str, Any] | None = None):
    """``corecode.config.load_params(path, overrides)``; its ``ConfigError`` (which names the file and the key) goes
    through :func:`fail`. The :data:`OUTPUT_KEYS` go through :func:`output_path`."""
    from corecode.config import ConfigError, load_params

    try:
        params = load_params(path, overrides or None)
    except ConfigError as e:
        fail(str(e))
    for key in OUTPUT_KEYS:
        *parents, leaf = key.split(".")
        node = params
        for part in parents:
            node = getattr(node, part)
        value = getattr(node, leaf)
        if value is not None:
            setattr(node, leaf, str(output_path(value)))
    return params
