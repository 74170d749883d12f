"""One prompt renderer (corecode.generation.render) for every stage: the token ids SFT trains on for a prompt, the
ids a GRPO rollout (team / MAGRPO, and TRL's GRPOTrainer for single-agent GRPO) feeds the policy, and the ids
evaluation feeds the model are the same list, for a plain tokenizer (the embedded BPE) and for a Qwen2-style one with
a ChatML chat template; an SFT completion ends with the token generation stops on. For the plain tokenizer the SFT
rows are exactly the rows TRL's own prompt/completion path builds (the embedded default is unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_sft_fixtures import role_rows, tiny_problems, write_role_dataset

from corecode.agents.prompts import coder_prompt, cot_prompt, helper_prompt, main_prompt, planner_prompt
from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
from corecode.generation.render import (
    completion_end_id,
    end_of_turn_id,
    prompt_ids,
    render_prompt,
    sft_example,
    stop_token_ids,
    use_chat,
)
from corecode.models.factory import load_model, load_tokenizer
from corecode.models.testing import TINY_SHAPE, add_chat_template
from corecode.models.tokenizer import train_bpe_tokenizer
from corecode.training.rollout import generate_chunks
from corecode.training.sft import build_sft_trainer
from corecode.training.sft_config import SFTParams

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_thread")]

ROLES = ("planner", "coder", "single")


def _checkpoint(path: Path, chat: bool, train_steps: int = 0) -> Path:
    """The embedded tokenizer trained on the role rows (ChatML added for ``chat``) and a tiny Qwen2 for it, saved;
    ``train_steps`` of AdamW on the first coder row, tokenized as SFT tokenizes it, so that greedy decoding
    reproduces that completion and its end token."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    rows = [r for role in ROLES for r in role_rows(role, tiny_problems(), "train")]
    tok = train_bpe_tokenizer([r["prompt"] + r["completion"] for r in rows], vocab_size=400, min_frequency=1)
    if chat:
        add_chat_template(tok)
    shape = {k: v for k, v in TINY_SHAPE.items() if k != "vocab_size"}
    cfg = Qwen2Config(
        vocab_size=len(tok),
        **shape,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id  # <|endoftext|>, also for the chat tokenizer
    if train_steps:
        row = role_rows("coder", tiny_problems(), "train")[0]
        ids = torch.tensor([sft_example(tok, row["prompt"], row["completion"], chat)["input_ids"]])
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        model.train()
        for _ in range(train_steps):
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def plain_ckpt(tmp_path_factory) -> Path:
    return _checkpoint(tmp_path_factory.mktemp("plain") / "base", chat=False)


@pytest.fixture(scope="module")
def chat_ckpt(tmp_path_factory) -> Path:
    return _checkpoint(tmp_path_factory.mktemp("chat") / "base", chat=True)


@pytest.fixture(params=["plain", "chat"])
def ckpt(request) -> tuple[Path, bool]:
    """Each test that takes it runs for both tokenizers: (checkpoint, whether it has a chat template)."""
    return request.getfixturevalue(f"{request.param}_ckpt"), request.param == "chat"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("processed")
    for role in ROLES:
        write_role_dataset(d / f"{role}.jsonl", role, tiny_problems())
    return d


def _sft_params(tmp_path: Path, **kw) -> SFTParams:
    return SFTParams(
        **({"max_steps": 1, "batch_size": 2, "completion_only_loss": True, "planner": {}} | kw),
        work_dir=str(tmp_path / "work"),
    )


def _captured_prompt_ids(model, run, *args, **kw) -> list[int]:
    """The ids of the first forward pass ``run(*args, **kw)`` makes through ``model`` (the prefill): what the model
    is fed, whichever decode loop runs it."""
    seen: list[list[int]] = []
    hook = model.get_input_embeddings().register_forward_hook(lambda m, args, out: seen.append(args[0][0].tolist()))
    try:
        out = run(*args, **kw)
        if not isinstance(out, list):  # a generator of rollout chunks: drain it
            list(out)
    finally:
        hook.remove()
    return seen[0]


# --- the renderer itself --------------------------------------------------------------------------------------------


def test_plain_tokenizer_renders_every_role_prompt_as_is(plain_ckpt):
    path = plain_ckpt
    tok = load_tokenizer(path)
    p = tiny_problems()[3]
    prompts = [planner_prompt(p), coder_prompt(p, p.plan), coder_prompt(p, None), cot_prompt(p), helper_prompt(p)]
    prompts.append(main_prompt(p, "def helper(x):\n    return x"))
    assert use_chat(tok, None) is False and end_of_turn_id(tok) is None
    for text in prompts:
        assert render_prompt(tok, text, None) == text
        assert prompt_ids(tok, text, None) == tok(text)["input_ids"]  # what rollouts and TRL tokenized before
    assert completion_end_id(tok, False) == tok.eos_token_id and stop_token_ids(tok) == {tok.eos_token_id}
    with pytest.raises(ValueError, match="generation.use_chat_template is true but the tokenizer"):
        use_chat(tok, True)
    with pytest.raises(ValueError, match="generation.use_chat_template"):  # before the weights are loaded
        TransformersGenerator(str(path), use_chat_template=True)


def test_chat_tokenizer_renders_a_user_turn_ending_in_im_end(chat_ckpt):
    tok = load_tokenizer(chat_ckpt)  # the template survived save_pretrained
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert use_chat(tok, None) is True and use_chat(tok, False) is False
    text = planner_prompt(tiny_problems()[0])
    assert render_prompt(tok, text, None) == (
        f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{text}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_prompt(tok, text, False) == text
    assert end_of_turn_id(tok) == im_end != tok.eos_token_id
    assert completion_end_id(tok, True) == im_end and completion_end_id(tok, False) == tok.eos_token_id
    assert stop_token_ids(tok) == {im_end, tok.eos_token_id}


def test_sft_rows_equal_trls_own_prompt_completion_rows_for_a_plain_tokenizer(tmp_path, plain_ckpt, data):
    """The embedded default's SFT batches are unchanged: TRL tokenizing the string rows (prompt, completion + EOS,
    mask from the common prefix) gives the very input_ids and labels of the pre-tokenized rows."""
    from datasets import Dataset

    from corecode.training.sft import read_sft_rows, sft_trainer_class

    path = plain_ckpt
    for completion_only in (True, False):
        cfg = _sft_params(tmp_path, completion_only_loss=completion_only).for_role("coder")
        ours = build_sft_trainer(cfg, data / "coder.jsonl", path)
        strings = {split: Dataset.from_list(rows) for split, rows in read_sft_rows(data / "coder.jsonl").items()}
        trl = sft_trainer_class(False)(
            model=load_model(path, "float32", "cpu"),
            args=ours.args,
            train_dataset=strings["train"],
            eval_dataset=strings["val"],
            processing_class=ours.processing_class,
        )
        assert (len(ours.train_dataset), len(ours.eval_dataset)) == (len(trl.train_dataset), len(trl.eval_dataset))
        assert len(ours.train_dataset) == 6
        for a, b in [*zip(ours.train_dataset, trl.train_dataset), *zip(ours.eval_dataset, trl.eval_dataset)]:
            assert a["input_ids"] == b["input_ids"] and a["labels"] == b["labels"]
        batch = [ours.train_dataset[i] for i in range(4)]
        trl_batch = trl.data_collator([trl.train_dataset[i] for i in range(4)])
        assert all(torch.equal(v, trl_batch[k]) for k, v in ours.data_collator(batch).items())


# --- the same ids in every stage ------------------------------------------------------------------------------------


def test_trainer_rollout_and_evaluation_feed_the_same_prompt_ids(tmp_path, ckpt, data):
    from trl import GRPOConfig, GRPOTrainer

    from corecode.training.single_grpo import build_dataset

    path, chat = ckpt
    tok, model = load_tokenizer(path), load_model(path, "float32", "cpu")
    gen = TransformersGenerator(model, tok)
    greedy = SamplingParams(max_new_tokens=2, temperature=0)
    for role in ("planner", "coder"):
        trainer = build_sft_trainer(_sft_params(tmp_path).for_role(role), data / f"{role}.jsonl", path)
        prompts = [r["prompt"] for r in role_rows(role, tiny_problems(), "train")]
        for i, text in enumerate(prompts[:3]):
            batch = trainer.data_collator([trainer.train_dataset[i]])
            labels = batch["labels"][0].tolist()
            n_prompt = next(j for j, lab in enumerate(labels) if lab != -100)
            sft_ids = batch["input_ids"][0, :n_prompt].tolist()
            eval_ids = _captured_prompt_ids(model, gen.generate, [text], greedy)
            (group,) = next(generate_chunks(model, tok, [text], 1, 2, do_sample=False, lean_decode=True))
            rollout_ids = _captured_prompt_ids(
                model, generate_chunks, model, tok, [text], 1, 2, do_sample=False, lean_decode=False
            )
            assert sft_ids == eval_ids == group[0].prompt_ids == rollout_ids, (role, i)
            assert tok.decode(eval_ids) == render_prompt(tok, text, None)
            if chat:
                assert eval_ids[0] == tok.convert_tokens_to_ids("<|im_start|>")

    # single-agent GRPO: TRL's GRPOTrainer tokenizes the rendered dataset prompt to the same ids
    problems = tiny_problems()[:2]
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=2, num_generations=2, bf16=False, report_to=[]
    )
    grpo = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=build_dataset(problems, False, tok, None),
        processing_class=tok,
    )
    trl_ids, _, _ = grpo._tokenize_prompts([row["prompt"] for row in grpo.train_dataset])
    assert trl_ids == [prompt_ids(tok, coder_prompt(p, None), None) for p in problems]


def test_sft_completion_ends_with_the_token_generation_stops_on(tmp_path, ckpt, data):
    """The SFT row's last supervised token is the one evaluation and rollouts stop on (<|im_end|> for the chat
    model, whose EOS is <|endoftext|>); a model trained on such a row stops there in both."""
    path, chat = ckpt
    tok = load_tokenizer(path)
    trainer = build_sft_trainer(_sft_params(tmp_path).for_role("coder"), data / "coder.jsonl", path)
    end = trainer.train_dataset[0]["labels"][-1]
    assert end == (tok.convert_tokens_to_ids("<|im_end|>") if chat else tok.eos_token_id)

    trained = _checkpoint(tmp_path / "trained", chat, train_steps=80)
    model, tok = load_model(trained, "float32", "cpu"), load_tokenizer(trained)
    row = role_rows("coder", tiny_problems(), "train")[0]
    gen = TransformersGenerator(model, tok)
    assert end in gen.eos_ids
    (c,) = gen.generate([row["prompt"]], SamplingParams(max_new_tokens=80, temperature=0))[0]
    assert (c.text, c.finish_reason, c.token_ids[-1]) == (row["completion"], "stop", end)
    ((s,),) = next(generate_chunks(model, tok, [row["prompt"]], 1, 80, do_sample=False))
    assert (s.completion.text, s.completion.finish_reason, s.completion.token_ids) == (
        row["completion"],
        "stop",
        c.token_ids,
    )
