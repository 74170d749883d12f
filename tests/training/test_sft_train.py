"""SFT with TRL's SFTTrainer on a tiny Qwen2: data handling, completion-only loss + EOS, training, determinism, LoRA,
the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_sft_fixtures import make_tiny_checkpoint, tiny_problems, write_problems, write_role_dataset
from typer.testing import CliRunner

from corecode.training.sft import SFTDataError, build_sft_trainer, read_pta_rows, read_sft_rows, train_sft
from corecode.training.sft_config import SFTParams

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_thread")]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_tiny_checkpoint(tmp_path_factory.mktemp("base") / "base")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("processed")
    for role in ("planner", "coder", "single"):
        write_role_dataset(d / f"{role}.jsonl", role, tiny_problems())
    return d


def _params(tmp_path: Path, **kw) -> SFTParams:
    # Test-sized: the config defaults are the embedded default's (1200 steps, 3300 for the Planner).
    defaults = dict(
        max_steps=12,
        batch_size=4,
        logging_steps=3,
        eval_steps=6,
        learning_rate=3e-3,
        completion_only_loss=True,
        max_eval_rows=256,
        check_n=32,
        planner={},
        work_dir=str(tmp_path / "work"),
    )
    return SFTParams(**(defaults | kw))


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


# --- data -------------------------------------------------------------------------------------------------------------


def test_bad_rows_name_file_and_line(tmp_path):
    p = tmp_path / "coder.jsonl"
    p.write_text('{"prompt": "a", "completion": "b", "split": "train"}\n{not json}\n')
    with pytest.raises(SFTDataError, match=r"coder.jsonl:2: not valid JSON"):
        read_sft_rows(p)
    p.write_text('{"prompt": "a", "completion": "b"}\n\n{"prompt": "a", "split": "train"}\n')
    with pytest.raises(SFTDataError, match=r"coder.jsonl:3: key 'completion' missing"):
        read_sft_rows(p)
    p.write_text('{"prompt": "a", "completion": "b", "split": "val"}\n')
    with pytest.raises(SFTDataError, match="no rows with split == 'train'"):
        read_sft_rows(p)
    with pytest.raises(SFTDataError, match="not found"):
        read_sft_rows(tmp_path / "missing.jsonl")


def test_splits_are_separated(data):
    rows = read_sft_rows(data / "coder.jsonl")
    assert len(rows["train"]) == 6 and len(rows["val"]) == 2
    assert set(rows["train"][0]) == {"prompt", "completion"}


def test_pta_rows_join_plan_and_code(data):
    rows = read_pta_rows(data / "planner.jsonl", data / "coder.jsonl")
    p = tiny_problems()[0]
    first = rows["train"][0]
    assert first["prompt"].endswith("### Plan\n")
    assert first["completion"].startswith("<plan>\n1. keep x > 0")
    assert "</plan>\n### Code\n```python\ndef sum_pos" in first["completion"]
    # The same text a team produces: planner prompt + PTA completion == coder prompt (with plan) + code completion.
    from corecode.agents.prompts import coder_prompt, format_code

    assert first["prompt"] + first["completion"] == coder_prompt(p, p.plan) + format_code(p.reference_solution)
    assert len(rows["val"]) == 2


def test_role_overrides_and_unknown_role():
    p = SFTParams(max_steps=100, planner={"max_steps": 7, "seed": 3})
    assert p.for_role("planner", default_seed=0).max_steps == 7
    assert p.for_role("planner", default_seed=0).seed == 3
    assert p.for_role("coder", default_seed=5).max_steps == 100
    assert p.for_role("coder", default_seed=5).seed == 5
    with pytest.raises(ValueError, match="unknown role 'critic'"):
        p.for_role("critic")


def test_loss_only_on_completion_and_eos_appended(tmp_path, base, data):
    cfg = _params(tmp_path).for_role("coder")
    trainer = build_sft_trainer(cfg, data / "coder.jsonl", base)
    tok = trainer.processing_class
    row = trainer.train_dataset[0]
    ids, labels = row["input_ids"], row["labels"]
    assert ids[-1] == tok.eos_token_id  # EOS appended to the completion
    n_prompt = next(i for i, lab in enumerate(labels) if lab != -100)
    prompt_text = tok.decode(ids[:n_prompt])
    assert prompt_text.endswith("### Code\n") and "```python" not in prompt_text
    assert labels[:n_prompt] == [-100] * n_prompt  # no loss on the prompt
    assert labels[n_prompt:] == ids[n_prompt:]  # the whole completion (EOS included) is supervised
    assert tok.decode(ids[n_prompt:]).startswith("```python\ndef sum_pos")
    assert trainer.args.completion_only_loss is True
    batch = trainer.data_collator([trainer.train_dataset[0]])
    assert batch["labels"][0].tolist()[: len(labels)] == labels


def test_prompt_loss_when_completion_only_loss_is_off(tmp_path, base, data):
    # sft.completion_only_loss: false (the embedded default's setting, per role too): every token is supervised
    cfg = _params(tmp_path, coder={"completion_only_loss": False}).for_role("coder")
    trainer = build_sft_trainer(cfg, data / "coder.jsonl", base)
    assert trainer.args.completion_only_loss is False
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    assert labels == ids  # prompt tokens included (one row: no padding)


# --- training ---------------------------------------------------------------------------------------------------------


def test_sft_trains_saves_and_logs(tmp_path, base, data):
    out, log = tmp_path / "sft_coder", tmp_path / "reports" / "sft_coder.json"
    res = train_sft(
        "coder",
        _params(tmp_path, max_steps=30),
        data_path=data / "coder.jsonl",
        base_checkpoint=base,
        output_dir=out,
        log_path=log,
    )
    assert res.global_step == 30 and res.train_rows == 6 and res.val_rows == 2
    hist = json.loads(log.read_text())
    losses = [h["loss"] for h in hist if "loss" in h]
    assert losses[-1] < losses[0] - 0.3, losses  # it learns
    assert any("eval_loss" in h for h in hist) and [h["step"] for h in hist] == sorted(h["step"] for h in hist)
    summary = json.loads(log.with_name("sft_coder_summary.json").read_text())
    assert summary["global_step"] == 30 and summary["eval_loss"] == pytest.approx(res.eval_loss)
    # A standard checkpoint: loads with from_pretrained, weights changed from the base, no Trainer leftovers.
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoModelForCausalLM.from_pretrained(out)
    AutoTokenizer.from_pretrained(out)
    assert not torch.equal(_weights(out)["model.embed_tokens.weight"], _weights(base)["model.embed_tokens.weight"])
    assert not (tmp_path / "work" / "sft_coder").exists()


def test_sft_is_deterministic_from_the_seed(tmp_path, base, data):
    def run(name: str, seed: int) -> dict[str, torch.Tensor]:
        out = tmp_path / name
        train_sft(
            "planner",
            _params(tmp_path, max_steps=8),
            seed=seed,
            data_path=data / "planner.jsonl",
            base_checkpoint=base,
            output_dir=out,
            log_path=tmp_path / f"{name}.json",
        )
        return _weights(out)

    a, b, c = run("a", 0), run("b", 0), run("c", 1)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)  # same seed -> bit-identical weights
    assert any(not torch.equal(a[k], c[k]) for k in a)  # another seed (data order) -> different weights


def test_lora_sft_saves_a_merged_plain_model(tmp_path, base, data):
    out = tmp_path / "sft_single"
    lora = {"enabled": True, "r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}
    p = _params(tmp_path, max_steps=6, lora=lora)
    train_sft(
        "single", p, data_path=data / "single.jsonl", base_checkpoint=base, output_dir=out, log_path=tmp_path / "l.json"
    )
    w, w0 = _weights(out), _weights(base)
    assert not any("lora" in k for k in w)  # merged: later stages load a plain Qwen2
    assert not torch.equal(w["model.layers.0.self_attn.q_proj.weight"], w0["model.layers.0.self_attn.q_proj.weight"])
    assert torch.equal(w["model.layers.0.mlp.up_proj.weight"], w0["model.layers.0.mlp.up_proj.weight"])  # not adapted


def test_cli_sft_runs_a_role_from_params(tmp_path, base, data, monkeypatch):
    import typer

    from corecode.cli_common import STATE
    from corecode.training.cli import register

    app = typer.Typer()
    register(app)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(STATE, "pipeline_outputs", True)  # the pipeline's places, as dvc.yaml runs it
    (tmp_path / "data" / "processed").mkdir(parents=True)
    (tmp_path / "data" / "processed" / "planner.jsonl").write_text((data / "planner.jsonl").read_text())
    write_problems(tmp_path / "data" / "processed" / "composite_val.jsonl", tiny_problems()[:2])
    (tmp_path / "params.yaml").write_text(
        f"seed: 0\ntracking: {{enabled: false}}\nsft:\n  base_checkpoint: {base}\n  max_steps: 4\n  batch_size: 4\n"
        "  planner: {max_steps: 3}\n  check_n: 2\n  check_max_new_tokens: 8\n"
    )
    r = CliRunner().invoke(app, ["sft", "--role", "planner", "--set", "sft.logging_steps=1"])
    assert r.exit_code == 0, r.output
    assert "3 steps" in r.output
    assert (tmp_path / "data" / "checkpoints" / "sft_planner" / "model.safetensors").exists()
    hist = json.loads((tmp_path / "data" / "reports" / "train" / "sft_planner.json").read_text())
    assert [h["step"] for h in hist if "loss" in h] == [1, 2, 3]
    summary = json.loads((tmp_path / "data" / "reports" / "train" / "sft_planner_summary.json").read_text())
    assert summary["global_step"] == 3 and summary["check_n"] == 2.0  # the post-SFT sample check ran
    assert summary["check_plan_ok"] == 0.0  # 3 steps from scratch: no well-formed plan yet
    assert "sample check: check_n=2.000" in r.output

    bad = CliRunner().invoke(app, ["sft", "--role", "critic"])
    assert bad.exit_code != 0 and "critic" in bad.output
    (tmp_path / "params.yaml").write_text("sft:\n  max_stepz: 4\n")
    bad = CliRunner().invoke(app, ["sft", "--role", "planner"])
    assert bad.exit_code != 0 and "sft.max_stepz" in bad.output


def test_training_cli_registers_without_importing_torch():
    import subprocess
    import sys

    code = (
        "import sys, typer\nfrom corecode.training.cli import register\napp = typer.Typer(); register(app)\n"
        "print(sorted(c.name for c in app.registered_commands), 'torch' in sys.modules, 'trl' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['grpo-magrpo', 'grpo-single', 'grpo-team', 'sft'] False False"


def test_cli_sft_logs_per_step_metrics_to_mlflow(tmp_path, base, data, monkeypatch):
    """TRL's report_to=["mlflow"] logs into the stage run opened by corecode.tracking (real sqlite store)."""
    import typer
    from mlflow import MlflowClient

    from corecode.training.cli import register

    app = typer.Typer()
    register(app)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("CORECODE_PARENT_RUN_ID", raising=False)
    (tmp_path / "data" / "processed").mkdir(parents=True)
    (tmp_path / "data" / "processed" / "coder.jsonl").write_text((data / "coder.jsonl").read_text())
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "params.yaml").write_text(
        f"tracking: {{enabled: true, uri: '{uri}', experiment: t, log_system_metrics: false}}\n"
        f"sft: {{base_checkpoint: {base}, max_steps: 4, batch_size: 4, logging_steps: 1, eval_steps: 2}}\n"
    )
    r = CliRunner().invoke(app, ["sft", "--role", "coder"])
    assert r.exit_code == 0, r.output
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("t").experiment_id], "tags.`corecode.stage` = 'sft_coder'")
    assert len(runs) == 1
    run_id = runs[0].info.run_id
    assert [m.step for m in client.get_metric_history(run_id, "loss")] == [1, 2, 3, 4]
    assert [m.step for m in client.get_metric_history(run_id, "eval_loss")][:2] == [2, 4]
    assert runs[0].data.params["sft.max_steps"] == "4"
    assert "final_eval_loss" in runs[0].data.metrics


def test_warmup_ratio_reaches_the_scheduler(tmp_path, base, data):
    cfg = _params(tmp_path, max_steps=40, warmup_ratio=0.1).for_role("coder")
    args = build_sft_trainer(cfg, data / "coder.jsonl", base).args
    assert args.get_warmup_steps(40) == 4


# --- loss from the full logits (sft.fused_lm_head: false) -------------------------------------------------------------


def test_logits_loss_equals_trls_fused_loss_and_logs_its_metrics(tmp_path, base, data):
    """The same batch through TRL's fused LM head and through LogitsLossSFTTrainer: the same loss, the same gradients,
    the same entropy / token-accuracy metrics; auto picks the logits loss off CUDA."""
    from trl import SFTTrainer

    from corecode.training.sft import sft_trainer_class
    from corecode.training.sft_trainer import LogitsLossSFTTrainer

    assert sft_trainer_class(None) is LogitsLossSFTTrainer  # no CUDA here
    assert sft_trainer_class(True) is SFTTrainer and sft_trainer_class(False) is LogitsLossSFTTrainer
    results = {}
    for fused in (True, False):
        trainer = build_sft_trainer(
            _params(tmp_path, fused_lm_head=fused, logging_steps=1).for_role("coder"), data / "coder.jsonl", base
        )
        assert type(trainer) is (SFTTrainer if fused else LogitsLossSFTTrainer)
        batch = trainer.data_collator([trainer.train_dataset[i] for i in range(4)])
        assert (batch["labels"] == -100).any() and (batch["labels"] != -100).any()  # prompt and padding masked
        model = trainer.model.train()
        model.zero_grad()
        loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=(batch["labels"][:, 1:] != -100).sum())
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
        results[fused] = (loss.item(), grads, metrics)
    (l_f, g_f, m_f), (l_l, g_l, m_l) = results[True], results[False]
    assert l_l == pytest.approx(l_f, rel=1e-5)
    assert g_f.keys() == g_l.keys() and len(g_f) > 10
    for n, g in g_f.items():
        assert torch.allclose(g_l[n], g, atol=1e-6, rtol=1e-4), n
    assert m_l["entropy"] == pytest.approx(m_f["entropy"], rel=1e-4) and m_l["entropy"] > 0
    assert m_l["mean_token_accuracy"] == pytest.approx(m_f["mean_token_accuracy"])
    assert m_l["num_tokens"] == m_f["num_tokens"] > 0


def test_logits_loss_computes_its_metrics_on_the_logged_steps_only(tmp_path, base, data):
    """Entropy and token accuracy are computed for the steps the Trainer logs (the first, every logging_steps, the
    last) and logged there; num_tokens counts every step."""
    trainer = build_sft_trainer(
        _params(tmp_path, max_steps=7, logging_steps=3, eval_steps=100, fused_lm_head=False).for_role("coder"),
        data / "coder.jsonl",
        base,
    )
    asked = {}
    logs_this_step = trainer._logs_this_step
    trainer._logs_this_step = lambda: asked.setdefault(trainer.state.global_step + 1, logs_this_step())
    trainer.train()
    assert trainer.args.logging_first_step and len(asked) == 7
    assert sorted(step for step, computed in asked.items() if computed) == [1, 3, 6, 7]
    logged = {h["step"]: h for h in trainer.state.log_history if "entropy" in h}
    assert sorted(logged) == [1, 3, 6] and all(h["entropy"] > 0 for h in logged.values())
    assert 0 <= logged[6]["mean_token_accuracy"] <= 1
    assert logged[6]["num_tokens"] > logged[3]["num_tokens"] > 0

    # The metrics never touch the gradient: with them on every step (TRL's way) the run ends on the same weights.
    every = build_sft_trainer(
        _params(tmp_path, max_steps=7, logging_steps=3, eval_steps=100, fused_lm_head=False).for_role("coder"),
        data / "coder.jsonl",
        base,
    )
    every._logs_this_step = lambda: True
    every.train()
    assert [h["loss"] for h in every.state.log_history if "loss" in h] == [
        h["loss"] for h in trainer.state.log_history if "loss" in h
    ]
    mine, theirs = trainer.model.state_dict(), every.model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)


def test_logits_loss_training_matches_the_fused_run(tmp_path, base, data):
    """A whole (short) run with each loss: the same logged losses to float noise, so the option changes speed only."""

    def losses(fused: bool) -> list[float]:
        res = train_sft(
            "coder",
            _params(tmp_path, max_steps=12, logging_steps=1, fused_lm_head=fused),
            data_path=data / "coder.jsonl",
            base_checkpoint=base,
            output_dir=tmp_path / f"o{fused}",
            log_path=tmp_path / f"l{fused}.json",
        )
        return [h["loss"] for h in res.history if "loss" in h]

    fused, logits = losses(True), losses(False)
    assert len(fused) == len(logits) == 12
    assert max(abs(a - b) for a, b in zip(fused, logits)) < 1e-3
    assert fused[-1] < fused[0] - 0.3  # it trained: the comparison is between two learning runs


def test_sft_step_benchmark_runs_both_losses():
    """benchmarks/sft_step.py --tiny: both trainers run the same batches and the script reports their ratio."""
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "sft_step.py"), "--tiny"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    ratio = float(re.search(r"ratio logits/fused: ([0-9.]+)", out.stdout).group(1))
    diff = float(re.search(r"max \|loss difference\| over \d+ logged steps: ([0-9.e+-]+)", out.stdout).group(1))
    assert ratio > 0 and diff < 1e-3, out.stdout
