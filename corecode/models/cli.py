"""``corecode init-model``: write the base checkpoint every later stage starts from (DVC stage ``init_model``)."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, fail, load_cli_params
from corecode.paths import CHECKPOINTS, PROCESSED

DEFAULT_CORPUS = [PROCESSED / "planner.jsonl", PROCESSED / "coder.jsonl", PROCESSED / "single.jsonl"]


def register(app: typer.Typer) -> None:
    @app.command("init-model")
    def init_model(
        params_file: Path = PARAMS_OPTION,
        out: Path = typer.Option(CHECKPOINTS / "base", help="Checkpoint directory to write."),
        corpus: list[Path] = typer.Option(
            DEFAULT_CORPUS, help="Training corpus JSONL files (prompt/completion rows) for the tokenizer."
        ),
        profile: str | None = typer.Option(None, help="Apply a built-in profile (corecode/models/profiles.py)."),
        set_: list[str] = SET_OPTION,
    ) -> None:
        """Train the BPE tokenizer and initialise the embedded model, or copy/point to a hub checkpoint."""
        import json

        from corecode.models.factory import init_base_checkpoint
        from corecode.models.profiles import PROFILES

        overrides = list(set_ or [])
        if profile is not None:
            if profile not in PROFILES:
                fail(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
            # The profile's dotted keys as KEY=VALUE overrides (JSON is YAML), before --set's so that --set wins.
            overrides = [f"{key}={json.dumps(value)}" for key, value in PROFILES[profile].items()] + overrides
        params = load_cli_params(params_file, overrides)
        summary = init_base_checkpoint(params.model, corpus, out, seed=params.seed)
        typer.echo(json.dumps(summary, indent=1))
