"""GRPO rollouts through ``LeanDecoder`` (the CPU default, ``grpo.team.lean_decode``) give the samples ``generate``
gives."""

import torch

from corecode.models.factory import load_model, load_tokenizer
from corecode.models.testing import make_tiny_checkpoint
from corecode.training.rollout import generate_chunks

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]


def test_lean_rollouts_equal_generate_greedy_and_sample_from_the_global_rng(tmp_path):
    ckpt = make_tiny_checkpoint(tmp_path / "tiny", TEXTS, train_steps=60)
    model, tok = load_model(ckpt, "float32", "cpu"), load_tokenizer(ckpt)
    model.train()
    prompts = ["def f(x):\n", "def g(y):\n", "def"]

    def run(lean, do_sample, seed=0):
        torch.manual_seed(seed)
        chunks = list(
            generate_chunks(
                model,
                tok,
                prompts,
                2 if do_sample else 1,
                24,
                temperature=1.0,
                chunk_size=2,
                do_sample=do_sample,
                lean_decode=lean,
            )
        )
        return [
            [(s.prompt_ids, s.completion.token_ids, s.completion.text, s.completion.finish_reason) for s in g]
            for chunk in chunks
            for g in chunk
        ]

    greedy = run(True, False)
    assert greedy == run(False, False)
    assert greedy[0][0][2] == "    return x + 1\n# done" and greedy[0][0][3] == "stop"
    assert greedy[0][0][1][-1] == tok.eos_token_id  # EOS kept: GRPO trains on it
    assert model.training  # left as it was found
    sampled = run(True, True)
    assert sampled == run(True, True) and sampled != run(True, True, seed=1)
