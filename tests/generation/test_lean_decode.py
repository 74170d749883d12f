"""corecode's CPU decode loop (``LeanDecoder``) against transformers itself: the same logits as the model's forward
(Qwen2, Llama with GQA, Qwen3 norms, a LoRA-wrapped model), the same greedy text as ``generate``, and per-row random
streams that make a row's sample independent of its batch."""

import pytest
import torch
from conftest import F_BODY, G_BODY
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from corecode.generation import lean_decode
from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
from corecode.generation.lean_decode import LeanDecoder

SHAPE = dict(
    hidden_size=48,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=6,
    num_key_value_heads=2,
    vocab_size=97,
    max_position_embeddings=128,
)


def _model(kind: str):
    torch.manual_seed(0)
    if kind == "qwen2":
        m = Qwen2ForCausalLM(Qwen2Config(**SHAPE, tie_word_embeddings=True))
    elif kind == "llama":
        m = LlamaForCausalLM(LlamaConfig(**SHAPE, rope_theta=500.0))
    elif kind == "qwen3":
        m = Qwen3ForCausalLM(Qwen3Config(**SHAPE, head_dim=8))
    elif kind == "lora":
        from peft import LoraConfig, get_peft_model

        m = get_peft_model(
            Qwen2ForCausalLM(Qwen2Config(**SHAPE)), LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"])
        )
        for n, p in m.named_parameters():  # LoRA B starts at zero: make the adapter matter
            if "lora_B" in n:
                torch.nn.init.normal_(p, std=0.2)
    return m.eval()


@pytest.mark.parametrize("kind", ["qwen2", "llama", "qwen3", "lora"])
def test_decode_step_logits_equal_the_models_forward(kind):
    # Teacher forcing over left-padded prompts of different lengths: every decode step's logits must equal the full
    # forward of the model over prompt + tokens so far (rotary positions, padding mask, GQA, KV buffers).
    model = _model(kind)
    assert LeanDecoder.supports(model)
    dec = LeanDecoder(model)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 97, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[0, :4], mask[1, :1] = 0, 0  # left padding
    follow = torch.randint(3, 97, (3, 5), generator=g)
    with torch.no_grad():
        logits, keys, values, keep, positions = dec.prefill(ids, mask, max_new=5)
        for t in range(follow.shape[1]):
            full_ids = torch.cat([ids, follow[:, : t + 1]], 1)
            full_mask = torch.cat([mask, torch.ones(3, t + 1, dtype=mask.dtype)], 1)
            pos = (full_mask.cumsum(-1) - 1).clamp(min=0)
            ref = model(input_ids=full_ids, attention_mask=full_mask, position_ids=pos).logits[:, -1]
            slot = ids.shape[1] + t
            keep[:, slot] = True
            got = dec.step(follow[:, t], positions, slot, keys, values, keep)
            positions = positions + 1
            torch.testing.assert_close(got, ref.float(), rtol=1e-4, atol=1e-4)


def test_unsupported_models_fall_back_to_generate(tiny_ckpt):
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=50))
    assert not LeanDecoder.supports(gpt2)
    windowed = Qwen2ForCausalLM(Qwen2Config(**SHAPE, use_sliding_window=True, sliding_window=16))
    assert not LeanDecoder.supports(windowed)
    with pytest.raises(ValueError, match="does not support"):
        LeanDecoder(gpt2)
    gen = TransformersGenerator(str(tiny_ckpt), fast_path="lean")
    assert gen.mode == "lean"
    gen.model = gpt2
    assert gen.mode == "off"


@pytest.fixture(scope="module")
def plain(tiny_ckpt):
    return TransformersGenerator(str(tiny_ckpt), fast_path="off")


@pytest.fixture(scope="module")
def lean(tiny_ckpt):
    g = TransformersGenerator(str(tiny_ckpt), fast_path="auto", max_batch_size=4)
    assert g.mode == "lean"  # auto on CPU, Qwen2-shaped embedded model
    return g


def test_greedy_output_equals_generate_with_stops_lengths_and_ignore_eos(lean, plain):
    prompts = ["def f(x):\n", "def g(y):\n", "def", "def f(x):\n    return"]
    for sp in (
        SamplingParams(n=2, max_new_tokens=40, temperature=0),
        SamplingParams(max_new_tokens=40, temperature=0, stop=["\n", "return"]),
        SamplingParams(max_new_tokens=5, temperature=0),
        SamplingParams(max_new_tokens=30, temperature=0, ignore_eos=True),
    ):
        assert lean.generate(prompts, sp) == plain.generate(prompts, sp), sp
    (f,), (g,) = lean.generate(prompts[:2], SamplingParams(max_new_tokens=40, temperature=0))[:2]
    assert (f.text, g.text) == (F_BODY, G_BODY) and f.finish_reason == "stop"


def test_compaction_does_not_change_results(lean, monkeypatch):
    prompts = ["def f(x):\n", "def g(y):\n", "def", "x"]
    sp = SamplingParams(n=3, max_new_tokens=30, temperature=1.5, seed=5)
    compacted = lean.generate(prompts, sp)
    monkeypatch.setattr(lean_decode, "_COMPACT_AT", 2.0)  # never drop finished rows
    assert lean.generate(prompts, sp) == compacted
    lens = {c.num_tokens for cs in compacted for c in cs}
    assert len(lens) > 1  # rows did finish at different steps


def test_seeded_rows_are_common_random_numbers(lean, tiny_ckpt):
    # A row's sample depends on its seed, prompt and sample index only: alone, in another batch, in another order,
    # or with another chunk size, it is the same; different samples of a prompt and different seeds differ.
    prompts = ["def f(x):\n", "def g(y):\n", "def", "def f"]
    sp = SamplingParams(n=3, max_new_tokens=20, temperature=3.0, seed=11)
    state = torch.get_rng_state()
    batch = lean.generate(prompts, sp)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG (training) is untouched
    assert [lean.generate([p], sp)[0] for p in prompts] == batch
    assert lean.generate(prompts[::-1], sp)[::-1] == batch
    other = TransformersGenerator(str(tiny_ckpt), fast_path="lean", max_batch_size=64)
    assert other.generate(prompts, sp) == batch
    assert len({c.text for c in batch[2]}) > 1
    assert lean.generate(prompts, SamplingParams(n=3, max_new_tokens=20, temperature=3.0, seed=12)) != batch
    # the same prompt twice in one call: two independent draws, not one repeated
    twice = lean.generate(["def", "def"], SamplingParams(n=1, max_new_tokens=20, temperature=3.0, seed=11))
    assert twice[0] == batch[2][:1] and twice[1] != twice[0]


def test_unseeded_sampling_follows_the_global_rng(lean):
    sp = SamplingParams(n=2, max_new_tokens=12, temperature=5.0)
    torch.manual_seed(0)
    a = lean.generate(["def"], sp)
    torch.manual_seed(0)
    assert lean.generate(["def"], sp) == a
    assert len({c.text for c in a[0]}) > 1


def test_topk_nucleus_equals_the_sorted_nucleus():
    # Sharp rows (nucleus inside the top 64) and flat ones (the fallback to the full sort), at several top_p.
    from corecode.generation.hf import _NUCLEUS_K, _top_p_filter, _top_p_filter_topk

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(96, 2048, generator=g) * torch.tensor([0.05, 1.0, 4.0, 12.0]).repeat(24)[:, None]
    for top_p in (0.5, 0.9, 0.95, 0.99):
        full, fast = _top_p_filter(logits, top_p), _top_p_filter_topk(logits, top_p)
        assert torch.equal(full, fast)
    kept = (~_top_p_filter(logits, 0.95).isinf()).sum(-1)
    assert (kept <= _NUCLEUS_K).any() and (kept > _NUCLEUS_K).any()  # both paths were taken


def test_seeded_rows_are_batched_by_length(lean, monkeypatch):
    # Short and long prompts interleaved, two rows a batch: the batches pair rows of similar length, so less padding
    # is prefilled, and the completions are those of one-prompt-at-a-time generation.
    widths = []
    prefill = LeanDecoder.prefill

    def spy(self, input_ids, attention_mask, max_new):
        widths.append((input_ids.shape[0], int((attention_mask == 0).sum())))
        return prefill(self, input_ids, attention_mask, max_new)

    prompts = ["def", "def f(x):\n    return x + 1\n\ndef g(y):\n", "x", "def g(y):\n    y = y * 2\n    return y\n"]
    sp = SamplingParams(n=1, max_new_tokens=8, temperature=2.0, seed=3)
    alone = [lean.generate([p], sp)[0] for p in prompts]
    monkeypatch.setattr(LeanDecoder, "prefill", spy)
    monkeypatch.setattr(lean, "max_batch_size", 2)
    assert lean.generate(prompts, sp) == alone
    assert len(widths) == 2 and all(rows == 2 for rows, _ in widths)
    tok = lean.tokenizer
    lens = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    in_order = abs(lens[0] - lens[1]) + abs(lens[2] - lens[3])
    assert sum(pad for _, pad in widths) < in_order  # prompt order would have padded more


@pytest.mark.parametrize("kind", ["qwen2", "lora"])
def test_fixed_shape_step_equals_the_sliced_step(kind):
    # The step a CUDA graph records (K/V written at a tensor slot, attention over the whole buffer under the keep-mask)
    # gives the logits and the K/V buffers of the step that slices the buffer to the tokens so far.
    model = _model(kind)
    dec = LeanDecoder(model)
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, 97, (3, 7), generator=g)
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    follow = torch.randint(3, 97, (3, 4), generator=g)
    with torch.no_grad():
        sliced = dec.prefill(ids, mask, max_new=6)
        fixed = dec.prefill(ids, mask, max_new=6)
        for t in range(follow.shape[1]):
            slot = ids.shape[1] + t
            for _, _, _, keep, _ in (sliced, fixed):
                keep[:, slot] = True
            a = dec.step(follow[:, t], sliced[4] + t, slot, sliced[1], sliced[2], sliced[3])
            b = dec.step(follow[:, t], fixed[4] + t, torch.tensor([slot]), fixed[1], fixed[2], fixed[3])
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
        for bufs_a, bufs_b in ((sliced[1], fixed[1]), (sliced[2], fixed[2])):
            for x, y in zip(bufs_a, bufs_b):
                torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-5)
                assert y[:, :, ids.shape[1] + follow.shape[1] :].abs().sum() == 0  # nothing written past the slots


def test_fixed_shape_loop_gives_the_eager_loops_samples():
    # The loop as it runs on a GPU (fixed-shape steps, no compaction: here run eagerly, since a CPU has no CUDA graphs)
    # samples what the eager loop samples: greedy, and with per-row seeds where rows finish at different steps.
    model = _model("qwen2")
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(3, 97, (4, 6), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :2] = 0
    eos = {5, 7, 11}
    for temperature, seeds in ((0.0, None), (2.0, [1, 2, 3, 4])):
        runs = [
            LeanDecoder(model, graphs=graphs).run(ids, mask, 12, 0, eos, temperature, 0.95, row_seeds=seeds)
            for graphs in (False, True)
        ]
        assert torch.equal(runs[0], runs[1])
    finished = (runs[0] == 0).any(1)
    assert finished.any() and not finished.all()  # rows finished at different steps (the eager loop compacted)


def test_fixed_shape_loop_returns_the_eager_loops_width_when_every_row_finishes_early():
    # The fixed-shape loop keeps finished rows in the batch (the eager loop drops them); when every row finishes
    # long before max_new it stops where the eager loop stops and returns the same width.
    model = _model("qwen2")
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(3, 97, (3, 5), generator=g)
    mask = torch.ones_like(ids)
    eos = set(range(3, 70))  # most of the vocabulary: every row ends within a few tokens
    runs = [
        LeanDecoder(model, graphs=graphs).run(ids, mask, 40, 0, eos, 1.5, 1.0, row_seeds=[5, 6, 7])
        for graphs in (False, True)
    ]
    assert runs[0].shape[1] < 8  # every row finished within a few tokens of max_new's 40
    assert torch.equal(runs[0], runs[1])
