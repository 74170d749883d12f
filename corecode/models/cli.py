"""``corecode init-model``: write the base checkpoint every later stage starts from (DVC stage ``init_model``)."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.paths import CHECKPOINTS, PARAMS_FILE, PROCESSED

DEFAULT_CORPUS = [PROCESSED / "planner.jsonl", PROCESSED / "coder.jsonl", PROCESSED / "single.jsonl"]


def register(app: typer.Typer) -> None:
    @app.command("init-model")
    def init_model(
        params_file: Path = typer.Option(PARAMS_FILE, "--params", help="params.yaml to read (section `model`)."),
        out: Path = typer.Option(CHECKPOINTS / "base", help="Checkpoint directory to write."),
        corpus: list[Path] = typer.Option(
            DEFAULT_CORPUS, help="Training corpus JSONL files (prompt/completion rows) for the tokenizer."
        ),
        profile: str | None = typer.Option(None, help="Apply a documented profile (corecode/models/profiles.py)."),
        set_: list[str] = typer.Option([], "--set", help="Override a param: --set model.embedded.hidden_size=256."),
    ) -> None:
        """Train the BPE tokenizer and initialise the embedded model, or copy/point to a hub checkpoint."""
        import json

        import yaml

        from corecode.config import ConfigError, load_params
        from corecode.models.factory import init_base_checkpoint
        from corecode.models.profiles import PROFILES

        overrides: dict = {}
        if profile is not None:
            if profile not in PROFILES:
                raise typer.BadParameter(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
            overrides.update(PROFILES[profile])
        for item in set_:
            key, sep, value = item.partition("=")
            if not sep:
                raise typer.BadParameter(f"--set {item!r}: expected KEY=VALUE")
            overrides[key.strip()] = yaml.safe_load(value)
        try:
            params = load_params(params_file, overrides)
        except ConfigError as e:
            typer.echo(str(e), err=True)
            raise typer.Exit(2) from None
        summary = init_base_checkpoint(params.model, corpus, out, seed=params.seed)
        typer.echo(json.dumps(summary, indent=1))
