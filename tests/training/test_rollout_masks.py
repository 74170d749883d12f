"""Rollouts of a left-padded batch: no query row is left without a key (on a GPU such a row came out NaN, the NaN
reached every real token and sampling stopped on a device-side assert: ``grpo_step.py --shape 1.5b``), real tokens'
values are unchanged by it, and a tokenizer larger than the model's embedding is an error before any work."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask

from corecode.generation.attention_mask import mended_sdpa_mask
from corecode.models.factory import load_model, load_tokenizer
from corecode.models.testing import make_tiny_checkpoint
from corecode.training.rollout import generate_chunks

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]
PROMPTS = ["def f(x):\n", "def g(y):\n    if y:\n", "d"]  # three lengths: two rows start with left padding


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.set_num_threads(1)
    ckpt = make_tiny_checkpoint(tmp_path_factory.mktemp("masks") / "tiny", TEXTS)
    model, tok = load_model(ckpt, "float32", "cpu"), load_tokenizer(ckpt)
    assert model.config._attn_implementation == "sdpa"
    return model, tok


@pytest.fixture
def transformers_own_sdpa_mask():
    """The process's mask function for sdpa set back to transformers' own, as before any rollout; restored after."""
    before = ALL_MASK_ATTENTION_FUNCTIONS["sdpa"]
    AttentionMaskInterface.register("sdpa", sdpa_mask)
    yield
    AttentionMaskInterface.register("sdpa", before)


def _padded(tok) -> dict[str, torch.Tensor]:
    ids = tok(PROMPTS, add_special_tokens=False)["input_ids"]
    return tok.pad({"input_ids": ids}, return_tensors="pt", padding=True, padding_side="left")


def _sdpa_mask(enc) -> torch.Tensor:
    """The mask a model's forward builds for ``enc`` (transformers' create_causal_mask passes the 2D mask as bool)."""
    b, n = enc["input_ids"].shape
    padding = enc["attention_mask"].bool()
    return ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](
        batch_size=b, q_length=n, kv_length=n, attention_mask=padding, allow_is_causal_skip=False
    )


def test_rollouts_leave_no_query_row_without_a_key(tiny, transformers_own_sdpa_mask):
    model, tok = tiny
    enc = _padded(tok)
    assert not _sdpa_mask(enc).any(-1).all()  # transformers' own mask: the left-padding rows attend to nothing
    list(generate_chunks(model, tok, PROMPTS, 1, 2, do_sample=False))
    assert _sdpa_mask(enc).any(-1).all()
    static = list(generate_chunks(model, tok, PROMPTS, 1, 2, do_sample=False, static_cache=True))  # compiled on GPUs
    assert [len(g) for chunk in static for g in chunk] == [1, 1, 1]


def test_real_tokens_get_the_same_values_with_the_mended_mask(tiny, transformers_own_sdpa_mask):
    model, tok = tiny
    enc = _padded(tok)
    real = enc["attention_mask"].bool()
    assert not real.all()
    logits = []
    for mask_function in (sdpa_mask, mended_sdpa_mask):
        AttentionMaskInterface.register("sdpa", mask_function)
        with torch.no_grad():
            logits.append(model(**enc).logits[real])
    assert torch.equal(logits[0], logits[1])


def test_a_tokenizer_larger_than_the_embedding_is_an_error(tiny):
    model, tok = tiny
    small = copy.deepcopy(model)
    small.resize_token_embeddings(len(tok) - 10)
    with pytest.raises(ValueError, match=f"has {len(tok)} tokens but the model's embedding has {len(tok) - 10} rows"):
        list(generate_chunks(small, tok, PROMPTS, 1, 2))
