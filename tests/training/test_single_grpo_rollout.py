"""grpo-single's rollouts through ``LeanDecoder`` (TRL's ``rollout_func``, ``grpo.single.lean_decode``): evaluation's
prompt ids, and the continuations ``generate`` gives."""

from types import SimpleNamespace

import torch
from accelerate import Accelerator

from corecode.generation.lean_decode import lean_decode_wanted
from corecode.generation.render import stop_token_ids
from corecode.models.factory import load_model, load_tokenizer
from corecode.models.testing import make_tiny_checkpoint
from corecode.training.single_grpo import lean_rollout
from corecode.training.single_grpo_config import SingleGRPOParams

TEXTS = ["def f(x):\n    return x + 1\n# done", "def g(y):\n    if y:\n        return y\n# end"]


def test_lean_rollout_gives_generate_s_greedy_continuations_with_evaluation_s_prompt_ids(tmp_path):
    ckpt = make_tiny_checkpoint(tmp_path / "tiny", TEXTS, train_steps=60)
    model, tok = load_model(ckpt, "float32", "cpu"), load_tokenizer(ckpt)
    model.train()
    eos = stop_token_ids(tok, model.generation_config)
    prompts = ["def f(x):\n", "def f(x):\n", "def g(y):\n", "def"]  # TRL repeats each prompt once per generation
    trainer = SimpleNamespace(processing_class=tok, accelerator=Accelerator(cpu=True), model=model)
    # A temperature this low samples the argmax: the greedy continuation, whichever the random stream.
    out = lean_rollout(24, 1e-6, 1.0, eos)(prompts, trainer)

    assert set(out) == {"prompt_ids", "completion_ids", "logprobs"} and out["logprobs"] is None
    assert out["prompt_ids"] == [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    for ids, completion in zip(out["prompt_ids"], out["completion_ids"], strict=True):
        row = model.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False, pad_token_id=tok.pad_token_id)
        greedy = row[0, len(ids) :].tolist()
        cut = next((i + 1 for i, t in enumerate(greedy) if t in eos), len(greedy))
        assert completion == greedy[:cut]
    assert out["completion_ids"][0][-1] in eos  # the stop token kept: GRPO trains on it, as TRL's path keeps it
    assert tok.decode(out["completion_ids"][0], skip_special_tokens=True) == "    return x + 1\n# done"
    assert model.training  # left as it was found


def test_lean_decode_is_the_cpu_default_and_can_be_turned_off(tmp_path):
    ckpt = make_tiny_checkpoint(tmp_path / "tiny", TEXTS)
    model = load_model(ckpt, "float32", "cpu")
    assert lean_decode_wanted(model, SingleGRPOParams().lean_decode)
    assert not lean_decode_wanted(model, SingleGRPOParams(lean_decode=False).lean_decode)
    assert lean_decode_wanted(model, SingleGRPOParams(lean_decode=True).lean_decode)
