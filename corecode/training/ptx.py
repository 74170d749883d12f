"""PPO-ptx (InstructGPT): the SFT objective kept in every RL update, shared by the GRPO trainers.

The team and MAGRPO trainers (``team_grpo``) and the single-agent baseline (``single_grpo``, a ``trl.GRPOTrainer``
subclass) add ``ptx_coef`` x the language-modelling loss of a batch of the role's SFT rows to each update. Written by
hand because TRL's GRPOTrainer has no ptx term. A batch is a function of (seed, role, step, process), so a resumed run
reads the same rows and the ptx-only control (``grpo.team.rl_coef: 0``) reads exactly the GRPO run's batches.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from corecode.generation.render import completion_end_id, sft_example


def read_ptx_rows(path: str | Path, role: str) -> list[dict]:
    """The SFT rows (``prompt``, ``completion``) of ``role``'s ptx dataset; a malformed or empty file names itself."""
    from corecode.data.io import read_jsonl

    rows = read_jsonl(path)
    for i, row in enumerate(rows, 1):
        if not isinstance(row.get("prompt"), str) or not isinstance(row.get("completion"), str):
            raise ValueError(f"{path}:{i}: ptx_data rows need string 'prompt' and 'completion' keys")
    if not rows:
        raise ValueError(f"{path}: ptx_data for {role!r} is empty")
    return rows


def ptx_batch(rows: list[dict], batch_size: int, seed: int, role: str, step: int, process_index: int = 0) -> list:
    """The ``batch_size`` rows of ``role``'s ptx term at ``step`` on this process."""
    rng = random.Random(f"{seed}-ptx-{role}-{step}-{process_index}")
    return rng.sample(rows, min(batch_size, len(rows)))


def ptx_loss(model, tokenizer, batch: list[dict], chat: bool, max_length: int | None = None) -> torch.Tensor:
    """The language-modelling loss of ``batch`` (prompt and completion, tokenized as the SFT stage tokenizes them,
    ``corecode.generation.render.sft_example``, and trained as it trains them with ``sft.completion_only_loss:
    false``). Rows longer than ``max_length`` (default: the model's positions) are cut, keeping their end token."""
    config = getattr(model, "config", None)
    limit = max_length or getattr(config, "max_position_embeddings", None) or 2048
    end = completion_end_id(tokenizer, chat)
    full = [sft_example(tokenizer, x["prompt"], x["completion"], chat, end)["input_ids"] for x in batch]
    ids = [x if len(x) <= limit else x[: limit - 1] + x[-1:] for x in full]
    width = max(len(x) for x in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device = next(model.parameters()).device
    input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids], device=device)
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids], device=device)
    return model(input_ids=input_ids, attention_mask=mask, labels=input_ids.masked_fill(mask == 0, -100)).loss
