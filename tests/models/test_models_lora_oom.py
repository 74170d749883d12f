import pytest
import torch
from peft import PeftModel

from corecode.models.config import LoraParams
from corecode.models.factory import load_model, load_tokenizer, resolve_device, resolve_dtype
from corecode.models.lora import add_role_adapters, load_role_model
from corecode.models.oom import OutOfMemory, oom_guard

LORA = LoraParams(r=4, alpha=8, dropout=0.0)


def _logits(model, tok, text="def f(x):\n"):
    ids = tok(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(ids).logits


def _perturb_lora(model, value=0.05):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.fill_(value)


def test_role_adapter_train_save_load(tiny_ckpt, tmp_path):
    tok = load_tokenizer(tiny_ckpt)
    base_logits = _logits(load_model(tiny_ckpt, device="cpu"), tok)
    coder = load_role_model(tiny_ckpt, None, device="cpu", trainable=True, lora=LORA)
    assert isinstance(coder, PeftModel)
    trainable = [n for n, p in coder.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert torch.allclose(_logits(coder, tok), base_logits)  # fresh LoRA (B = 0) is the identity
    _perturb_lora(coder)
    trained_logits = _logits(coder, tok)
    assert not torch.allclose(trained_logits, base_logits)
    coder.save_pretrained(tmp_path / "coder_adapter")

    reloaded = load_role_model(tiny_ckpt, tmp_path / "coder_adapter", device="cpu")
    assert torch.allclose(_logits(reloaded, tok), trained_logits, atol=1e-6)
    assert not any(p.requires_grad for p in reloaded.parameters())  # inference by default
    plain = load_role_model(tiny_ckpt, None, device="cpu")
    assert torch.allclose(_logits(plain, tok), base_logits)


def test_missing_adapter_dir_is_named(tiny_ckpt, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope: not a LoRA adapter directory"):
        load_role_model(tiny_ckpt, tmp_path / "nope", device="cpu")


def test_one_base_two_role_adapters(tiny_ckpt):
    tok = load_tokenizer(tiny_ckpt)
    team = add_role_adapters(load_model(tiny_ckpt, device="cpu"), ["planner", "coder"], LORA)
    with torch.no_grad():
        for name, p in team.named_parameters():
            if "lora_B.planner" in name:
                p.fill_(0.05)
            elif "lora_B.coder" in name:
                p.fill_(-0.05)
    team.set_adapter("planner")
    planner_logits = _logits(team, tok)
    team.set_adapter("coder")
    coder_logits = _logits(team, tok)
    assert not torch.allclose(planner_logits, coder_logits)


def test_dtype_and_device_selection():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert resolve_dtype("bfloat16", "cpu") == torch.bfloat16
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


def test_gradient_checkpointing_flag(tiny_ckpt):
    model = load_model(tiny_ckpt, device="cpu", gradient_checkpointing=True)
    assert any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    assert model.config.use_cache is False


def test_oom_guard_names_the_settings_on_a_real_allocation_failure():
    with pytest.raises(OutOfMemory) as info:
        with oom_guard("sft"):
            torch.empty(1 << 45, dtype=torch.uint8)  # 32 TiB: the CPU allocator refuses
    msg = str(info.value)
    assert "stage 'sft' ran out of memory" in msg
    for knob in ("batch size", "generation.max_batch_size", "max_new_tokens", "gradient_checkpointing: true", "lora"):
        assert knob in msg


def test_oom_guard_as_decorator_and_passthrough():
    @oom_guard("grpo", hints=["lower grpo.magrpo.num_generations"])
    def step(kind):
        if kind == "oom":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        raise ValueError("unrelated")

    with pytest.raises(OutOfMemory, match=r"(?s)stage 'grpo'.*CUDA out of memory.*grpo.magrpo.num_generations"):
        step("oom")
    with pytest.raises(ValueError, match="unrelated"):
        step("other")
