"""The static decoder's compiled step at Qwen2.5's vocabulary (151,936): the top-p nucleus reaches torch.compile as
one opaque operator (``hf._top_p_filter_op``), so Inductor generates no vocabulary-long scan of its own (its split scan
failed to compile at 128 x 151,936 on an H100), and the compiled step samples the tokens the eager step samples."""

import pytest
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from transformers import Qwen2Config, Qwen2ForCausalLM

from corecode.generation.hf import _StaticDecoder, _top_p_filter_op, pick_tokens
from corecode.models.testing import QWEN25_CODER_SHAPES

VOCAB = QWEN25_CODER_SHAPES["1.5b"]["vocab_size"]
ROWS, PROMPT, NEW, CACHE = 4, 16, 10, 32


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    cfg = Qwen2Config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=VOCAB,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )
    m = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():  # random init is near-uniform over 151,936 tokens; this gives a top token of ~0.3
        m.model.embed_tokens.weight.mul_(10)
    return m


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def decode(decoder, temperature=1.0, top_p=0.95, seed=123):
    ids = torch.randint(0, VOCAB, (ROWS, PROMPT), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :5] = 0  # left padding, as the generator lays a batch out
    torch.manual_seed(seed)
    with torch.no_grad():
        return decoder.run(ids, mask, ROWS, NEW, CACHE, 0, {VOCAB - 1}, temperature, top_p, False, lambda *_: False)


def recording_backend(graphs: list):
    """torch.compile backend: the aten graph Inductor would be given, recorded and run as it is."""

    def record(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    return aot_autograd(fw_compiler=record)


def test_compiled_step_calls_the_nucleus_as_one_operator_and_samples_the_eager_tokens(model):
    eager = decode(_StaticDecoder(model, compile=False))
    graphs: list = []
    traced = _StaticDecoder(model, compile=False)
    traced.step_fn = torch.compile(traced._step, backend=recording_backend(graphs))
    assert torch.equal(decode(traced), eager)  # same aten ops, same RNG stream: same tokens
    targets = [n.target for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert graphs and torch.ops.corecode.top_p_filter.default in targets
    assert torch.ops.aten.cumsum.default not in targets and torch.ops.aten.sort.default not in targets
    assert len(set(eager[:, 1:].flatten().tolist())) > ROWS  # sampled, not one repeated token per row


def test_graph_and_eager_pickers_keep_the_same_nucleus_at_qwen_vocabulary():
    # The static step's picker (the sorted nucleus, as one operator) and the eager one (top-k first, the full sort for
    # flat rows) draw the same tokens from the same uniforms, sharp rows and flat ones alike.
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, VOCAB, generator=g) * torch.tensor([0.05, 1.0, 4.0, 12.0]).repeat(2)[:, None]
    is_eos = torch.zeros(VOCAB, dtype=torch.bool)
    for temperature, top_p in ((1.0, 0.95), (0.7, 0.5), (1.0, 0.99)):
        kept = (~_top_p_filter_op(logits / temperature, top_p).isinf()).sum(-1)
        assert kept.min() <= 64 < kept.max()  # both of the eager picker's branches are taken
        for seed in range(3):
            torch.manual_seed(seed)
            graph_picker = pick_tokens(logits, temperature, top_p, is_eos, False)
            torch.manual_seed(seed)
            assert torch.equal(graph_picker, pick_tokens(logits, temperature, top_p, is_eos, False, eager=True))


@pytest.mark.slow
def test_inductor_compiled_static_decoder_at_qwen_vocabulary(model):
    # Inductor's CPU code generation of the whole step; with Inductor drawing its random numbers from the eager
    # generator (fallback_random), the compiled decoder samples the eager tokens.
    eager = decode(_StaticDecoder(model, compile=False))
    with torch._inductor.config.patch(fallback_random=True):
        assert torch.equal(decode(_StaticDecoder(model, compile=True)), eager)
