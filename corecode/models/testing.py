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


# --------------------------------------------------------------------------------------- stand-in hub checkpoints
# Qwen2.5-Coder's published shapes (config.json of each hub repo), for random-weight stand-ins where no hub is
# reachable: the memory and time of a stage depend on the shape, not on the weights.
QWEN25_CODER_SHAPES: dict[str, dict] = {
    "tiny": TINY_SHAPE | dict(vocab_size=0, tie_word_embeddings=True, max_position_embeddings=1024),
    "1.5b": dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
    ),
    "3b": dict(
        hidden_size=2048,
        intermediate_size=11008,
        num_hidden_layers=36,
        num_attention_heads=16,
        num_key_value_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
    ),
    "7b": dict(
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        vocab_size=152064,
        tie_word_embeddings=False,
    ),
    "14b": dict(
        hidden_size=5120,
        intermediate_size=13824,
        num_hidden_layers=48,
        num_attention_heads=40,
        num_key_value_heads=8,
        vocab_size=152064,
        tie_word_embeddings=False,
    ),
}
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def qwen_style_tokenizer(tokenizer, instruct: bool):
    """``tokenizer`` given Qwen's special tokens: pad <|endoftext|>; EOS <|im_end|> and a ChatML template (instruct)
    or EOS <|endoftext|> and no template (base), as the hub's Qwen2.5-Coder tokenizers have them."""
    add_chat_template(tokenizer)
    tokenizer.add_special_tokens({"pad_token": QWEN_SPECIAL_TOKENS[0]})
    tokenizer.eos_token = "<|im_end|>" if instruct else "<|endoftext|>"
    if not instruct:
        tokenizer.chat_template = None
    tokenizer.padding_side = "left"
    return tokenizer


def make_qwen_standin(
    out_dir: str | Path,
    tokenizer,
    shape: str = "tiny",
    instruct: bool = True,
    *,
    device: str = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    **shape_overrides,
) -> Path:
    """Write a random-weight checkpoint of a Qwen2.5-Coder shape (``QWEN25_CODER_SHAPES``, any key of it changed by
    ``shape_overrides``) with a Qwen-style tokenizer built from ``tokenizer`` to ``out_dir``, as ``save_pretrained``
    would leave a hub download.

    The model's vocabulary keeps the real shape's size (rows past the tokenizer's are never produced by it, as in the
    hub checkpoints, whose embedding is padded too); ``tiny`` sizes it to the tokenizer. Built on ``device``, so a
    7B/14B stand-in is initialised on the GPU in seconds.
    """
    from transformers import Qwen2Config, Qwen2ForCausalLM, set_seed

    out_dir = Path(out_dir)
    tok = qwen_style_tokenizer(tokenizer, instruct)
    shape_kwargs = QWEN25_CODER_SHAPES[shape] | shape_overrides
    shape_kwargs["vocab_size"] = max(shape_kwargs["vocab_size"], len(tok))
    config = Qwen2Config(
        **shape_kwargs,
        rope_theta=1_000_000.0,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.convert_tokens_to_ids(QWEN_SPECIAL_TOKENS[0]),
    )
    set_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen2ForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


# Qwen2's ChatML layout: a default system turn, each turn closed by <|im_end|>, the assistant cue on request.
CHATML_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def add_chat_template(tokenizer):
    """``tokenizer`` turned into a Qwen2-style instruct tokenizer: ``<|im_start|>`` / ``<|im_end|>`` added as special
    tokens and the ChatML chat template set (saved by ``save_pretrained``). EOS is left as it is, as in Qwen2.5 base
    checkpoints (EOS ``<|endoftext|>``, turns closed by ``<|im_end|>``). A model for it needs ``len(tokenizer)``
    embeddings."""
    tokenizer.add_special_tokens({"additional_special_tokens": list(QWEN_SPECIAL_TOKENS[1:])})
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer
