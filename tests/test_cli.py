"""corecode.cli: every command is listed from COMMANDS, and a command imports only its own package's module."""

from __future__ import annotations

import subprocess
import sys

import click
import typer.main
from typer.testing import CliRunner

from corecode.cli import COMMANDS, app, module_commands


def test_commands_table_is_what_the_modules_register():
    for module in sorted(set(COMMANDS.values())):
        assert set(module_commands(module)) == {name for name, m in COMMANDS.items() if m == module}, module


def test_help_lists_every_command_with_its_help():
    res = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    group = typer.main.get_command(app)
    with click.Context(group) as ctx:
        for name in [*COMMANDS, "version"]:
            assert name in res.output
            first_words = " ".join(group.get_command(ctx, name).get_short_help_str(200).split()[:3])
            assert first_words in res.output, name


def test_a_command_imports_only_its_own_module():
    code = """
import sys, click, typer.main
from corecode.cli import COMMANDS, app

def loaded():
    return sorted(m for m in set(COMMANDS.values()) if m in sys.modules)

group = typer.main.get_command(app)
print(loaded())
with click.Context(group) as ctx:
    group.get_command(ctx, "eval-samples")
print(loaded())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "['corecode.evaluation.cli']"], out
