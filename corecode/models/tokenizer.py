"""Train the embedded model's byte-level BPE tokenizer on the pipeline's training corpus.

Training uses the ``tokenizers`` library; the result is a ``Qwen2Tokenizer`` (a ``PreTrainedTokenizerFast``) built
from the learnt vocab and merges, saved with ``save_pretrained``.

Why Qwen2's own normalizer and pre-tokenizer: in transformers v5 ``AutoTokenizer.from_pretrained`` on a ``qwen2``
checkpoint always builds a ``Qwen2Tokenizer``, which rebuilds the pre-tokenizer from its fixed regex whatever
``tokenizer.json`` says. Training with any other pre-tokenization would make every stage that calls ``AutoTokenizer``
(TRL, users) split text differently from how the merges were learnt. Qwen2's regex is also code-friendly: a run of
whitespace before a word is its own pre-token (``"\\n        return"`` -> ``"\\n"``, 7 spaces, ``" return"``), so each
indentation level becomes one learnt token regardless of the keyword after it, and digits are split one by one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer

PAD_TOKEN = "<|pad|>"
EOS_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = [PAD_TOKEN, EOS_TOKEN]


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> Qwen2Tokenizer:
    """Train a byte-level BPE tokenizer with pad/eos specials (ids 0 and 1). Deterministic for the same texts."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    bpe = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in bpe["merges"]]
    qwen = Qwen2Tokenizer(
        vocab=bpe["vocab"],
        merges=merges,
        unk_token=None,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        clean_up_tokenization_spaces=False,
    )
    qwen.padding_side = "left"  # decoder-only generation pads on the left; training collators set their own side
    return qwen
