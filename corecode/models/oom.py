"""Turn a CUDA/CPU out-of-memory error into a message that says which setting to change.

A bare ``torch.OutOfMemoryError`` names a byte count; what a user needs is the knob. Training stages wrap their work in
``oom_guard("sft", hints=...)`` (a context manager and a decorator).
"""

from __future__ import annotations

from contextlib import ContextDecorator

import torch

DEFAULT_HINTS = (
    "lower the per-device batch size (and raise gradient accumulation to keep the effective batch)",
    "lower generation.max_batch_size (prompts x samples generated at once)",
    "lower max_new_tokens / the maximum completion length",
    "set the trainer's gradient_checkpointing: true (sft, grpo.team, grpo.magrpo, grpo.single)",
    "use LoRA (the trainer's lora.enabled: true; with bf16 the frozen base is bf16) or a smaller profile",
)


class OutOfMemory(RuntimeError):
    """Raised instead of an OOM, with the settings to change in its message."""


def _is_oom(err: BaseException) -> bool:
    if isinstance(err, torch.OutOfMemoryError):
        return True
    # CPU allocator failures are plain RuntimeErrors.
    return isinstance(err, RuntimeError) and (
        "out of memory" in str(err).lower() or "can't allocate memory" in str(err).lower()
    )


class oom_guard(ContextDecorator):  # noqa: N801 - used like a function: `with oom_guard("sft"):` / `@oom_guard("sft")`
    """Context manager / decorator: OOM inside becomes ``OutOfMemory`` naming the stage and the settings to change."""

    def __init__(self, stage: str, hints: tuple[str, ...] | list[str] = DEFAULT_HINTS):
        self.stage = stage
        self.hints = tuple(hints)

    def __enter__(self) -> oom_guard:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None or not _is_oom(exc):
            return False
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        lines = "\n".join(f"  - {h}" for h in self.hints)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OutOfMemory(f"stage {self.stage!r} ran out of memory ({first}). Try, in params.yaml:\n{lines}") from exc
