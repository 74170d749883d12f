"""The one small interface every generation backend implements: batched prompts in, ``n`` samples each out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class SamplingParams:
    n: int = 1
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    # Keep generating past EOS until max_new_tokens (throughput benchmarks; vLLM's `ignore_eos`).
    ignore_eos: bool = False


@dataclass
class Completion:
    text: str
    num_tokens: int
    # Token ids of the completion (without prompt), when the backend has them; GRPO needs them.
    token_ids: list[int] | None = None
    finish_reason: str = "stop"  # "stop" | "length"


class Generator(Protocol):
    """Anything that turns prompts into sampled completions."""

    def generate(self, prompts: list[str], params: SamplingParams) -> list[list[Completion]]:
        """Return, for each prompt in order, ``params.n`` completions."""
        ...
