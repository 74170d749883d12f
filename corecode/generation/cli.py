"""``corecode serve``: an OpenAI-compatible HTTP endpoint for a local checkpoint (see server.py)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        model: Path = typer.Option(..., help="Checkpoint directory (save_pretrained) or hub id to serve."),
        port: int = typer.Option(8000, help="TCP port."),
        host: str = typer.Option("127.0.0.1", help="Bind address (keep 127.0.0.1 unless you mean to expose it)."),
        name: str | None = typer.Option(None, help="Model id reported by /v1/models (default: the directory name)."),
        max_batch_size: int = typer.Option(64, help="Sequences per forward batch."),
        max_tokens: int = typer.Option(256, help="Default max_tokens when a request gives none."),
        fast_path: str = typer.Option("auto", help="auto|static|lean|continuous|off (see generation.fast_path)."),
        dtype: str = typer.Option("auto", help="auto|float32|bfloat16|float16."),
        device: str = typer.Option("auto", help="auto|cpu|cuda|cuda:N."),
    ) -> None:
        """Serve /v1/models, /v1/completions and /v1/chat/completions for one checkpoint."""
        import uvicorn

        from corecode.generation.hf import TransformersGenerator
        from corecode.generation.server import create_app

        generator = TransformersGenerator(
            str(model),
            max_batch_size=max_batch_size,
            use_chat_template=False,  # chat is rendered by the server's chat endpoint; completions stay raw
            fast_path=fast_path,
            dtype=dtype,
            device=device,
        )
        app = create_app(generator, name or model.name, default_max_tokens=max_tokens)
        uvicorn.run(app, host=host, port=port, log_level="warning")
