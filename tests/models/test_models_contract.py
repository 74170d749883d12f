"""One model contract: ``init-model`` with ``model.copy_weights: false`` on a local stand-in of a hub checkpoint (random
Qwen2 weights, a Qwen-style tokenizer with a chat template, save_pretrained) writes only a pointer, and every later
stage's loader reads that pointer through corecode.models.factory: sft, grpo-team (two models, or one shared base with
each role's SFT LoRA adapter), grpo-magrpo, grpo-single, evaluate / solve (the agents' generator factory) and serve."""

import json
from pathlib import Path

import pytest
import torch
import typer
from peft import PeftModel
from typer.testing import CliRunner

from corecode.agents.config import RoleModel
from corecode.agents.factory import model_generator_factory
from corecode.config import Params
from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
from corecode.models import cli as models_cli
from corecode.models.config import LoraParams
from corecode.models.factory import POINTER_FILE, adapter_base, load_model
from corecode.models.testing import make_qwen_standin
from corecode.models.tokenizer import train_bpe_tokenizer
from corecode.training.grpo_config import MAGRPOParams, TeamGRPOParams
from corecode.training.sft import train_sft
from corecode.training.sft_config import SFTParams
from corecode.training.single_grpo import load_policy
from corecode.training.single_grpo_config import SingleGRPOParams
from corecode.training.team_grpo import _load_roles

TEXTS = [
    "### Problem\ndef add(a, b):\n### Plan\n<plan>\n1. Return a + b.\n</plan>",
    "### Problem\ndef neg(xs):\n### Code\n```python\ndef neg(xs):\n    return [-x for x in xs]\n```",
] * 4
ROWS = [
    {"prompt": "### Problem\ndef add(a, b):\n### Code\n", "completion": "return a + b", "split": s}
    for s in ("train",) * 6 + ("val",) * 2
]
TINY_LORA = LoraParams(enabled=True, r=4, alpha=8, dropout=0.0, merge=False)


def _app() -> typer.Typer:
    app = typer.Typer()
    models_cli.register(app)
    app.command("noop")(lambda: None)  # a second command keeps typer in multi-command mode
    return app


def init_model(tmp: Path, *sets: str):
    """``corecode init-model`` into ``tmp/base`` with the given ``--set`` overrides."""
    (tmp / "params.yaml").write_text("seed: 0\n")
    argv = ["init-model", "--params", str(tmp / "params.yaml"), "--out", str(tmp / "base")]
    return CliRunner().invoke(_app(), argv + [a for s in sets for a in ("--set", s)])


@pytest.fixture(scope="module")
def hub_dir(tmp_path_factory) -> Path:
    tok = train_bpe_tokenizer(TEXTS, 400, 1)
    out = tmp_path_factory.mktemp("hub") / "Qwen2.5-Coder-tiny-Instruct"
    return make_qwen_standin(out, tok, "tiny", instruct=True)


@pytest.fixture(scope="module")
def pointer(hub_dir, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("project")
    res = init_model(tmp, f"model.name_or_path={hub_dir}", "model.copy_weights=false")
    assert res.exit_code == 0, res.output
    base = tmp / "base"
    assert sorted(p.name for p in base.iterdir()) == [POINTER_FILE]
    return base


@pytest.fixture(scope="module")
def sft_adapters(pointer, tmp_path_factory) -> tuple[Path, Path]:
    """Planner and Coder SFT'd for two steps with LoRA, saved as adapters (sft.lora.merge: false) on the pointer."""
    tmp = tmp_path_factory.mktemp("sft")
    data = tmp / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    params = SFTParams(
        max_steps=2,
        batch_size=2,
        eval_batch_size=2,
        max_length=64,
        logging_steps=1,
        eval_steps=1,
        lora=TINY_LORA,
        work_dir=str(tmp / "work"),
        fused_lm_head=False,
        check_n=0,
        planner={},
    )
    out = []
    for role in ("planner", "coder"):
        res = train_sft(
            role,
            params,
            data_path=data,
            base_checkpoint=pointer,
            output_dir=tmp / f"sft_{role}",
            log_path=tmp / f"sft_{role}.json",
        )
        out.append(res.output_dir)
    return out[0], out[1]


def _same_weights(model, reference) -> bool:
    ref = reference.state_dict()
    return all(torch.equal(v.float(), ref[k].float()) for k, v in model.state_dict().items() if k in ref)


def test_sft_trains_from_the_pointer_and_saves_an_adapter_on_its_source(sft_adapters, hub_dir):
    planner, coder = sft_adapters
    for adapter in (planner, coder):
        assert (adapter / "adapter_config.json").is_file() and not (adapter / "config.json").exists()
        assert Path(adapter_base(adapter)) == hub_dir  # the pointer's source, so any later stage can find the base
    merged = load_model(planner, "float32", "cpu")  # an adapter directory loads as base + adapter merged
    assert not _same_weights(merged, load_model(hub_dir, "float32", "cpu"))


def test_team_grpo_loads_the_pointer_as_two_models(pointer, hub_dir):
    cfg = TeamGRPOParams(lora={"enabled": True, "r": 4}, bf16=True)
    (planner, tok), (coder, _) = _load_roles(cfg, ("planner", "coder"), (str(pointer),) * 2, ["p", "c"])
    assert planner is not coder and tok.chat_template is not None
    assert planner.dtype == coder.dtype == torch.bfloat16  # LoRA under bf16: the frozen base in bf16
    assert _same_weights(planner, load_model(hub_dir, "bfloat16", "cpu"))
    full = TeamGRPOParams(bf16=True)  # a full fine-tune keeps fp32 master weights
    (planner, _), _ = _load_roles(full, ("planner", "coder"), (str(pointer),) * 2, ["p", "c"])
    assert planner.dtype == torch.float32


def test_team_grpo_shared_base_with_each_roles_sft_adapter(sft_adapters, hub_dir):
    cfg = TeamGRPOParams(lora={"enabled": True, "r": 4}, shared_base=True, bf16=True)
    (model, tok), second = _load_roles(cfg, ("planner", "coder"), tuple(map(str, sft_adapters)), ["p", "c"])
    assert second[0] is model and isinstance(model, PeftModel)
    assert set(model.peft_config) == {"planner", "coder"}
    lora = {n: w for n, w in model.named_parameters() if "lora_" in n}
    assert all(w.dtype == torch.float32 for w in lora.values())  # fp32 adapters ...
    assert {w.dtype for n, w in model.named_parameters() if "lora_" not in n} == {torch.bfloat16}  # ... bf16 base
    for role in ("planner", "coder"):
        assert any(f".{role}." in n for n in lora)
    with pytest.raises(ValueError, match="beta"):  # the KL reference would be the base before SFT
        _load_roles(cfg.model_copy(update={"beta": 0.04}), ("planner", "coder"), tuple(map(str, sft_adapters)), ["p"])


def test_magrpo_and_single_grpo_load_the_pointer(pointer, hub_dir):
    (helper, _), (main, _) = _load_roles(MAGRPOParams(), ("helper", "main"), (str(pointer),) * 2, ["h", "m"])
    reference = load_model(hub_dir, "float32", "cpu")
    assert _same_weights(helper, reference) and _same_weights(main, reference)
    model, tok = load_policy(SingleGRPOParams(), pointer)
    assert _same_weights(model, reference) and tok.padding_side == "left"


def test_evaluate_solve_and_serve_generate_from_the_pointer(pointer, sft_adapters):
    params = Params()
    make = model_generator_factory(params)  # what evaluate and solve build their teams with
    for source in (pointer, sft_adapters[1]):
        gen = make("coder", RoleModel(model=str(source)))
        out = gen.generate(["def f(x):\n"], SamplingParams(n=1, max_new_tokens=3, temperature=0))
        assert len(out) == 1 and out[0][0].num_tokens <= 3
    served = TransformersGenerator(str(pointer), use_chat_template=False, dtype="auto", device="cpu")  # `serve`
    assert served.generate(["x"], SamplingParams(n=1, max_new_tokens=2, temperature=0))[0][0].num_tokens <= 2
