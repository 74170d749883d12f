"""Tiny real checkpoints for tests (this package's and other packages'): seconds to build on one CPU core.

``make_tiny_checkpoint`` goes through the same code as ``corecode init-model`` (trained BPE tokenizer, embedded Qwen2,
``save_pretrained``) with a smaller shape, and can overfit the model on ``texts`` for a few steps so that greedy
generation is predictable (e.g. to test stop strings and EOS handling against a real model, not a mock).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from corecode.models.config import EmbeddedModelParams, ModelParams, TokenizerParams
from corecode.models.factory import init_base_checkpoint, load_model, load_tokenizer

TINY_SHAPE = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    max_position_embeddings=256,
    vocab_size=400,
)


def make_tiny_checkpoint(
    out_dir: str | Path, texts: list[str], train_steps: int = 0, seed: int = 0, lr: float = 3e-3
) -> Path:
    """Write a tiny checkpoint to ``out_dir`` trained (``train_steps`` of AdamW, EOS appended) on ``texts``."""
    out_dir = Path(out_dir)
    corpus = out_dir.parent / f"{out_dir.name}_corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    params = ModelParams(embedded=EmbeddedModelParams(**TINY_SHAPE), tokenizer=TokenizerParams(min_frequency=1))
    init_base_checkpoint(params, [corpus], out_dir, seed=seed)
    if train_steps:
        tok = load_tokenizer(out_dir)
        model = load_model(out_dir, "float32", "cpu")
        tok.padding_side = "right"
        batch = tok([t + tok.eos_token for t in texts], return_tensors="pt", padding=True)
        labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        torch.manual_seed(seed)
        model.train()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny matrices: one thread is ~20x faster than two on a busy 2-core machine
        try:
            for _ in range(train_steps):
                loss = model(**batch, labels=labels).loss
                loss.backward()
                opt.step()
                opt.zero_grad()
        finally:
            torch.set_num_threads(threads)
        model.save_pretrained(out_dir)
    return out_dir
