"""compile_decoder_layers (grpo.team.compile_model): each decoder layer compiled for training passes only."""

import pytest
import torch
from peft import LoraConfig, get_peft_model
from torch._dynamo.utils import counters
from transformers import Qwen2Config, Qwen2ForCausalLM

from corecode.models.factory import compile_decoder_layers, decoder_parts
from corecode.models.testing import TINY_SHAPE


def _model():
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE | {"vocab_size": 64}))


def test_layers_compile_in_training_mode_only_and_give_the_eager_logits():
    model, reference = _model(), _model()
    compile_decoder_layers(model)
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    counters.clear()
    model.eval()
    with torch.no_grad():
        model(input_ids=ids)  # eval (the rollouts' prefill): eager
    assert not counters["stats"]["unique_graphs"]
    model.train()
    reference.train()
    torch.testing.assert_close(model(input_ids=ids).logits, reference(input_ids=ids).logits, rtol=1e-4, atol=1e-5)
    assert counters["stats"]["unique_graphs"] >= 1  # one layer's graph, reused by the others


def test_layers_are_found_under_a_peft_wrapper_and_a_model_without_them_is_refused():
    peft = get_peft_model(_model(), LoraConfig(r=2, target_modules=["q_proj"]))
    assert decoder_parts(peft)[1].layers is peft.get_base_model().model.layers
    with pytest.raises(ValueError, match="no decoder layer list"):
        compile_decoder_layers(torch.nn.Linear(2, 2))
