"""What the ``corecode`` commands share: the ``--params`` / ``--set`` options, loading them, and one error style.

A command that reads params.yaml takes ``params: Path = PARAMS_OPTION, overrides: list[str] = SET_OPTION`` and calls
``load_cli_params(params, overrides)``. Bad input (a missing or invalid params file, a bad override, a bad argument)
ends the command with one ``error: ...`` line on stderr and exit code 2, the code click gives its own usage errors.

Kept apart from ``corecode.cli``, which imports every command module, so the command modules can import it without a
cycle; like them it imports nothing heavy at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from corecode.paths import PARAMS_FILE

PARAMS_OPTION = typer.Option(PARAMS_FILE, "--params", help="params.yaml to read.")
SET_OPTION = typer.Option(None, "--set", help="Override a param: KEY=VALUE (dotted key, YAML value); repeatable.")


def fail(message: str, code: int = 2) -> NoReturn:
    """End the command: ``error: MESSAGE`` (on one line) to stderr, exit ``code``."""
    head, *rest = str(message).splitlines() or [""]
    details = "; ".join(line.strip() for line in rest if line.strip())  # e.g. one per invalid key of a params file
    typer.echo(f"error: {head} {details}".rstrip(), err=True)
    raise typer.Exit(code)


def load_cli_params(path: str | Path = PARAMS_FILE, overrides: list[str] | dict[str, Any] | None = None):
    """``corecode.config.load_params(path, overrides)``; its ``ConfigError`` (which names the file and the key) goes
    through :func:`fail`."""
    from corecode.config import ConfigError, load_params

    try:
        return load_params(path, overrides or None)
    except ConfigError as e:
        fail(str(e))
