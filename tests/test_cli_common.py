"""corecode.cli_common: every command that reads params.yaml fails the same way, one ``error:`` line and exit 2."""

import pytest
from typer.testing import CliRunner

from corecode.cli import app

COMMANDS = [
    ["build-data"],
    ["metrics"],
    ["report"],
    ["sft", "--role", "coder"],
    ["grpo-team"],
    ["solve", "def f(x):\n    pass\n"],
    ["sandbox-selftest"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_bad_params_file_is_one_error_line(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("seed: 0\nsft:\n  max_stepz: 4\n")
    res = CliRunner().invoke(app, [*command, "--params", "params.yaml"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: params.yaml: ") and "sft.max_stepz" in res.stderr
    assert len(res.stderr.splitlines()) == 1, res.stderr


def test_missing_file_and_bad_override(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["metrics", "--params", "nowhere.yaml"])
    assert (res.exit_code, res.stderr) == (2, "error: nowhere.yaml: params file not found\n")
    (tmp_path / "params.yaml").write_text("seed: 0\n")
    res = CliRunner().invoke(app, ["build-data", "--set", "data.composite.n_train"])
    assert (res.exit_code, res.stderr) == (2, "error: override 'data.composite.n_train': expected KEY=VALUE\n")
