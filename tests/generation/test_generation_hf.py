import pytest
import torch
from conftest import F_BODY, G_BODY

from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
from corecode.models.factory import load_model, load_tokenizer

GREEDY = SamplingParams(max_new_tokens=40, temperature=0)
PROMPTS = ["def f(x):\n", "def g(y):\n"]


@pytest.fixture(scope="module")
def gen(tiny_ckpt):
    # plain generate: the reference the fast paths are held to (the CPU default, "lean", in test_lean_decode.py)
    return TransformersGenerator(str(tiny_ckpt), max_batch_size=64, fast_path="off")


def test_greedy_stops_at_eos_with_token_ids(gen):
    out = gen.generate(PROMPTS, GREEDY)
    assert [o[0].text for o in out] == [F_BODY, G_BODY]
    for (c,) in out:
        assert c.finish_reason == "stop"
        assert c.token_ids[-1] == gen.tokenizer.eos_token_id  # EOS kept in token_ids (GRPO trains on it)
        assert c.num_tokens == len(c.token_ids)
        assert gen.tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text


def test_stop_string_truncates_text(gen):
    (f,), (g,) = gen.generate(PROMPTS, SamplingParams(max_new_tokens=40, temperature=0, stop=["\n", "return"]))
    assert (f.text, g.text) == ("    ", "    if y:")
    assert f.finish_reason == g.finish_reason == "stop"
    assert 0 < f.num_tokens < 10 and f.num_tokens == len(f.token_ids)
    assert "return" in gen.tokenizer.decode(f.token_ids)  # ids run up to the token completing the stop string


def test_length_limit(gen):
    (c,) = gen.generate(["def g(y):\n"], SamplingParams(max_new_tokens=3, temperature=0))[0:1][0]
    assert c.finish_reason == "length" and c.num_tokens == 3 and G_BODY.startswith(c.text)


def test_n_samples_order_and_chunking(tiny_ckpt, gen):
    prompts = PROMPTS + ["def"]
    whole = gen.generate(prompts, SamplingParams(n=3, max_new_tokens=40, temperature=0))
    assert [len(o) for o in whole] == [3, 3, 3]
    assert all(c.text == F_BODY for c in whole[0]) and all(c.text == G_BODY for c in whole[1])
    chunked = TransformersGenerator(str(tiny_ckpt), max_batch_size=2)  # 9 sequences -> 5 chunks, mixed lengths
    assert chunked.generate(prompts, SamplingParams(n=3, max_new_tokens=40, temperature=0)) == whole


def test_sampling_seeded_reproducible_and_isolated(gen):
    sp = SamplingParams(n=4, max_new_tokens=12, temperature=5.0, seed=7)
    state = torch.get_rng_state()
    a = gen.generate(["def"], sp)
    assert torch.equal(torch.get_rng_state(), state)  # seeding does not disturb the caller's RNG (training)
    assert gen.generate(["def"], sp) == a
    assert len({c.text for c in a[0]}) > 1  # hot sampling: the samples differ from each other
    assert gen.generate(["def"], SamplingParams(n=4, max_new_tokens=12, temperature=5.0, seed=8)) != a


def test_live_module_in_train_mode(tiny_ckpt):
    model = load_model(tiny_ckpt, device="cpu", gradient_checkpointing=True)  # a GRPO policy's setup
    model.train()
    g = TransformersGenerator(model, load_tokenizer(tiny_ckpt))
    (c,) = g.generate(["def f(x):\n"], GREEDY)[0]
    assert c.text == F_BODY
    assert model.training  # mode restored for the trainer
    ids = torch.tensor([c.token_ids])  # the trainer's next step on the sampled ids still backpropagates
    model(ids, labels=ids).loss.backward()
    assert model.model.embed_tokens.weight.grad is not None
    with torch.no_grad():  # the generator holds the module itself: an update shows up in the next call
        model.model.embed_tokens.weight.mul_(0.0)
    assert g.generate(["def f(x):\n"], GREEDY)[0][0].text != F_BODY
    with pytest.raises(ValueError, match="tokenizer is required"):
        TransformersGenerator(model)


def test_chat_template_auto(tiny_ckpt):
    tok = load_tokenizer(tiny_ckpt)
    assert TransformersGenerator(str(tiny_ckpt), tok).use_chat_template is False  # embedded: no template
    tok.chat_template = (
        "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    g = TransformersGenerator(str(tiny_ckpt), tok)
    assert g.use_chat_template is True
    assert g.render("hi") == "[user]hi[assistant]"
    assert TransformersGenerator(str(tiny_ckpt), tok, use_chat_template=False).render("hi") == "hi"


def test_static_cache_path_matches_plain_generate(tiny_ckpt, gen):
    # The GPU fast path's shape bucketing (batch padded to max_batch_size, prompt/cache rounded up) must not change
    # results; on CPU it runs without torch.compile.
    static = TransformersGenerator(str(tiny_ckpt), max_batch_size=8, fast_path="static", pad_to_multiple_of=16)
    assert static.mode == "static"
    prompts = PROMPTS + ["def"]  # 3 prompts x 2 samples = 6 rows -> padded to 8
    sp = SamplingParams(n=2, max_new_tokens=40, temperature=0, stop=["# end"])
    assert static.generate(prompts, sp) == gen.generate(prompts, sp)
    assert static.generate(PROMPTS, SamplingParams(max_new_tokens=40, temperature=0)) == gen.generate(PROMPTS, GREEDY)


@pytest.mark.slow
def test_continuous_batching_path_matches(tiny_ckpt, gen):
    cont = TransformersGenerator(str(tiny_ckpt), fast_path="continuous")
    out = cont.generate(PROMPTS, GREEDY)
    assert [o[0].text for o in out] == [F_BODY, G_BODY]
    # On CPU the paged cache holds this call's rows, one 256-token page each, not transformers' share of the host's
    # free RAM (about 14 GiB on a 24 GiB machine, benchmarks/continuous_cache.py).
    ids, max_new = cont._encode(PROMPTS, GREEDY.max_new_tokens)
    cfg = cont._paged_cache_for(ids, max_new)["continuous_batching_config"]
    assert (cfg.num_blocks, cfg.max_batch_tokens) == (2, sum(map(len, ids)))


def test_long_prompt_is_clamped_to_model_positions(gen):
    # tiny model: 256 positions; a 300-token prompt + 40 new tokens must not overflow RoPE/cache
    (c,) = gen.generate(["x " * 300 + "\ndef f(x):\n"], GREEDY)[0]
    assert c.num_tokens <= 40


def test_ignore_eos_runs_to_max_new_tokens(gen):
    (c,) = gen.generate(["def f(x):\n"], SamplingParams(max_new_tokens=30, temperature=0, ignore_eos=True))[0]
    assert c.num_tokens == 30 and c.finish_reason == "length"
    assert gen.tokenizer.eos_token_id not in c.token_ids


def test_static_decode_loop_matches_generate_on_stops_sampling_and_ignore_eos(tiny_ckpt, gen):
    # corecode's own static decode loop (GPU: compiled with CUDA graphs; CPU: eager): stop strings cut token ids where
    # generate's stop_strings stop, EOS masking for ignore_eos, seeded sampling reproducible, GQA attention unchanged.
    static = TransformersGenerator(str(tiny_ckpt), max_batch_size=4, fast_path="static", pad_to_multiple_of=16)
    assert static.model.config.num_key_value_heads < static.model.config.num_attention_heads  # grouped path taken
    stop = SamplingParams(max_new_tokens=40, temperature=0, stop=["\n", "return"])
    assert static.generate(PROMPTS, stop) == gen.generate(PROMPTS, stop)
    ign = SamplingParams(max_new_tokens=30, temperature=0, ignore_eos=True)
    assert static.generate(PROMPTS, ign) == gen.generate(PROMPTS, ign)
    (c,), _ = static.generate(PROMPTS, ign)
    assert c.num_tokens == 30 and static.tokenizer.eos_token_id not in c.token_ids
    hot = SamplingParams(n=3, max_new_tokens=20, temperature=5.0, top_p=0.9, seed=3)
    a = static.generate(PROMPTS, hot)
    assert static.generate(PROMPTS, hot) == a and len({c.text for c in a[0]}) > 1
    assert static._decoder.grouped and static.model.config._attn_implementation == "sdpa"  # restored after decoding
