import json

import pytest
import torch
import typer
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2ForCausalLM
from typer.testing import CliRunner

from corecode.models import cli as models_cli
from corecode.models.config import ModelParams
from corecode.models.factory import POINTER_FILE, count_parameters, init_base_checkpoint, load_model, load_tokenizer

ROWS = [
    {
        "prompt": '### Problem\ndef add(a, b):\n    """Sum."""\n### Code\n',
        "completion": "```python\ndef add(a, b):\n    return a + b\n```",
        "task_id": "t0",
    },
    {
        "prompt": '### Problem\ndef neg(xs):\n    """Negate all."""\n### Plan\n',
        "completion": "<plan>\n1. Loop over xs.\n2. Negate each.\n</plan>",
        "task_id": "t1",
    },
    {
        "prompt": "### Problem\ndef big(xs, k):\n### Code\n",
        "completion": "```python\ndef big(xs, k):\n    return [x for x in xs if x > k]\n```",
        "task_id": "t2",
    },
] * 10


@pytest.fixture()
def project(tmp_path):
    proc = tmp_path / "data" / "processed"
    proc.mkdir(parents=True)
    for name in ("planner", "coder", "single"):
        (proc / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "params.yaml").write_text("seed: 3\nmodel:\n  embedded:\n    num_hidden_layers: 2\n")
    return tmp_path


def _app():
    app = typer.Typer()
    models_cli.register(app)

    @app.command("noop")
    def noop():  # a second command keeps typer in multi-command mode
        pass

    return app


def _run(project, *args):
    corpus = [str(project / "data/processed" / f"{n}.jsonl") for n in ("planner", "coder", "single")]
    argv = ["init-model", "--params", str(project / "params.yaml"), "--out", str(project / "base")]
    argv += [a for c in corpus for a in ("--corpus", c)] + list(args)
    return CliRunner().invoke(_app(), argv)


def test_init_model_embedded_writes_a_standard_checkpoint(project):
    res = _run(project)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output[res.output.index("{") :])
    model = AutoModelForCausalLM.from_pretrained(project / "base")
    tok = AutoTokenizer.from_pretrained(project / "base")
    assert isinstance(model, Qwen2ForCausalLM)
    assert model.config.num_hidden_layers == 2  # params.yaml override
    assert model.config.vocab_size == len(tok) == summary["vocab_size"]
    assert (model.config.pad_token_id, model.config.eos_token_id) == (tok.pad_token_id, tok.eos_token_id)
    assert summary["parameters"] == count_parameters(model)
    ids = tok("def add(a, b):\n    return a + b", return_tensors="pt")["input_ids"]
    assert model(ids).logits.shape == (1, ids.shape[1], len(tok))


def test_default_embedded_size_is_cpu_trainable(project):
    init_base_checkpoint(ModelParams(), [project / "data/processed/coder.jsonl"], project / "b", seed=0)
    n = count_parameters(load_model(project / "b", device="cpu"))
    assert 1_000_000 <= n <= 5_000_000


def test_init_model_is_deterministic_from_seed(project):
    assert _run(project).exit_code == 0
    first = load_model(project / "base", device="cpu").state_dict()
    assert _run(project).exit_code == 0
    second = load_model(project / "base", device="cpu").state_dict()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert _run(project, "--set", "seed=4").exit_code == 0
    third = load_model(project / "base", device="cpu").state_dict()
    assert not all(torch.equal(first[k], third[k]) for k in first)


def test_bad_corpus_line_is_named(project):
    bad = project / "data/processed/coder.jsonl"
    bad.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    res = _run(project)
    assert res.exit_code != 0
    assert f"{bad}:2: not valid JSON" in str(res.exception)
    bad.write_text(json.dumps({"task_id": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"coder.jsonl:1: row has none of the text fields"):
        init_base_checkpoint(ModelParams(), [bad], project / "b")
    with pytest.raises(FileNotFoundError, match="missing.jsonl: training corpus file not found"):
        init_base_checkpoint(ModelParams(), [project / "missing.jsonl"], project / "b")


def test_bad_param_is_named(project):
    res = _run(project, "--set", "model.embedded.num_attention_heads=5")
    assert res.exit_code == 2
    assert "model.embedded" in res.output and "divisible" in res.output


def test_path_checkpoint_is_copied_or_pointed_to(project, tiny_ckpt):
    res = _run(project, "--set", f"model.name_or_path={tiny_ckpt}")
    assert res.exit_code == 0, res.output
    src, copy = load_model(tiny_ckpt, device="cpu"), load_model(project / "base", device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(src.state_dict().values(), copy.state_dict().values()))
    assert load_tokenizer(project / "base").get_vocab() == load_tokenizer(tiny_ckpt).get_vocab()

    # same output dir: the copy's files are replaced by the pointer
    res = _run(project, "--set", f"model.name_or_path={tiny_ckpt}", "--set", "model.copy_weights=false")
    assert res.exit_code == 0, res.output
    assert json.loads((project / "base" / POINTER_FILE).read_text())["name_or_path"] == str(tiny_ckpt)
    assert sorted(p.name for p in (project / "base").iterdir()) == [POINTER_FILE]
    pointed = load_model(project / "base", device="cpu")
    assert torch.equal(pointed.model.embed_tokens.weight, src.model.embed_tokens.weight)
    assert load_tokenizer(project / "base").eos_token_id == load_tokenizer(tiny_ckpt).eos_token_id
