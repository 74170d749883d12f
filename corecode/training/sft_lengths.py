"""SFT rows longer than ``sft.max_length``: counted before training, so that none is truncated without a word.

TRL's SFTTrainer cuts every tokenized row to ``max_length`` and says nothing; a 100 KB prompt then trains on no
completion at all. ``corecode sft`` calls :func:`long_rows` first and reports how many rows will be cut and where
the longest is (``file:line``), on stderr and in ``sft_<role>_summary.json``.

A row's length is that of the ids SFT trains on (``corecode.generation.render.sft_example``): the prompt as generation
renders it, the completion, and its end token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LongRows:
    """Rows over ``max_length`` of one role's SFT data (train and val splits)."""

    count: int
    rows: int
    max_length: int
    longest: str | None = None  # file:line of the longest row
    longest_tokens: int = 0

    def message(self, role: str) -> str:
        return (
            f"sft --role {role}: {self.count} of {self.rows} rows are longer than sft.max_length={self.max_length} "
            f"tokens and will be truncated; the longest: {self.longest} ({self.longest_tokens} tokens)"
        )

    def summary(self) -> dict:
        return {"truncated_rows": self.count, "longest_row": self.longest, "longest_row_tokens": self.longest_tokens}


def numbered_rows(path: str | Path):
    """``(file:line, row)`` for each JSON object line of a JSONL file (lines that are not are skipped: the SFT
    reader reports them)."""
    path = Path(path)
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield f"{path}:{lineno}", row


def role_texts(role: str, data_path: str | Path) -> list[tuple[str, str, str]]:
    """``(file:line, prompt, completion)`` of the train and val rows SFT reads for ``role`` (``pta``: the Planner's
    rows joined with the Coder's, located at the Planner's line)."""
    from corecode.training.sft import join_plan_then_code

    data_path = Path(data_path)
    splits = ("train", "val")
    if role != "pta":
        return [
            (where, str(r.get("prompt", "")), str(r.get("completion", "")))
            for where, r in numbered_rows(data_path)
            if r.get("split", "train") in splits
        ]
    codes = {
        (r.get("task_id"), r.get("split", "train")): str(r.get("completion", ""))
        for _, r in numbered_rows(data_path.with_name("coder.jsonl"))
    }
    out = []
    for where, r in numbered_rows(data_path):
        key = (r.get("task_id"), r.get("split", "train"))
        if key in codes and key[1] in splits:
            out.append((where, str(r.get("prompt", "")), join_plan_then_code(str(r.get("completion", "")), codes[key])))
    return out


def long_rows(texts: list[tuple[str, str, str]], tokenizer, max_length: int | None, chat: bool | None) -> LongRows:
    """Count the rows of ``texts`` (:func:`role_texts`) whose token length, as SFT tokenizes them
    (``corecode.generation.render``; ``chat``: ``generation.use_chat_template``), exceeds ``max_length``."""
    from corecode.generation.render import render_prompt, tokenize_rendered, use_chat

    if not max_length or not texts:
        return LongRows(0, len(texts), max_length or 0)
    chat = use_chat(tokenizer, chat)
    prompts = tokenize_rendered(tokenizer, [render_prompt(tokenizer, p, chat) for _, p, _ in texts])
    completions = tokenize_rendered(tokenizer, [c for _, _, c in texts])
    lengths = [len(p) + len(c) + 1 for p, c in zip(prompts, completions)]  # + the completion's end token
    worst = max(range(len(texts)), key=lengths.__getitem__)
    return LongRows(
        count=sum(n > max_length for n in lengths),
        rows=len(texts),
        max_length=max_length,
        longest=texts[worst][0],
        longest_tokens=lengths[worst],
    )
