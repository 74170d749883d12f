"""The path a user with a GPU takes, on CPU in minutes: a stand-in hub checkpoint (a random-weight Qwen2 saved with
``save_pretrained``, a BPE tokenizer with ChatML's chat template) in a directory of its own, an instruct profile
applied with ``corecode profile apply``, and the repository's dvc.yaml under real ``dvc repro`` in a scratch git + DVC
repo: init-model (a pointer to the directory), SFT of every role with LoRA, team GRPO of both roles with LoRA on one
shared base and then on two separate models, the baselines, evaluation on composite and real-schema benchmark fixtures
(MBPP, LiveBench), report and promote into an MLflow registry in the repo.

The stand-in starts from random weights, so whatever the SFT team solves it learnt in SFT, reading its prompts
through the chat template; solving held-out problems at evaluation shows that evaluation renders them the same way.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch
import yaml
from test_pipeline_params_stage import ROOT, _dvc, _edit_params, pipeline_repo

from corecode.models.profiles import deep_merge

FIXTURES = ROOT / "tests" / "fixtures" / "data"
PROFILE = ROOT / "configs" / "profiles" / "qwen2.5-coder-7b-instruct.yaml"  # one shared base, SFT adapters, pointer

# A composite suite a random tiny model learns to plan and code in two minutes of LoRA SFT: integer lists,
# statements in plan order, one phrasing, chains of two steps; the test split's chains each hold a step pair that no
# training problem has.
COMPOSITE = dict(
    n_train=500,
    n_val=16,
    n_test=40,
    n_rl=8,
    n_dev=16,
    train_max_steps=2,
    test_max_steps=2,
    test_longer_frac=0.0,
    test_unseen_chain_frac=0.0,
    start_types=["ints"],
    phrasing_variety=1,
    styles=["sequential"],
    n_examples=0,
    steps=["filter", "map", "sort", "reverse", "reduce"],
)
SOURCES = {
    "mbpp": {"loader": "mbpp", "path": str(FIXTURES / "mbpp.jsonl"), "split": "test", "role": "eval"},
    "livebench": {"loader": "livebench", "path": str(FIXTURES / "livebench.parquet"), "role": "eval"},
}
TINY_GRPO = dict(static_cache=False, bf16=False, gradient_checkpointing=False, eval_steps=0, eval_problems=2)


def cpu_profile(standin: Path) -> dict:
    """The 7B instruct profile with the stand-in as its model and CPU-sized data, steps and token budgets.

    SFT: LoRA of rank 64 (the stand-in's width) with the embedding and the LM head trained beside it
    (``modules_to_save``, as for special tokens a base never learnt): a random model's output layer cannot otherwise
    give any token a high probability. The loss covers the prompt too, which is what makes a model trained from
    scratch read the statement.
    """
    cpu = {
        "model": {"name_or_path": str(standin), "dtype": "float32", "device": "cpu"},
        "data": {"composite": COMPOSITE, "sources": SOURCES},
        "agents": {"sampling": {role: {"max_new_tokens": 96} for role in ("planner", "coder", "helper", "main")}},
        "sft": {
            "max_steps": 300,
            "batch_size": 8,
            "eval_batch_size": 16,
            "learning_rate": 0.005,
            "max_length": 256,
            "warmup_ratio": 0.05,
            "eval_steps": 300,
            "logging_steps": 50,
            "completion_only_loss": False,
            "dtype": "float32",
            "gradient_checkpointing": False,
            "torch_threads": 1,
            "check_n": 0,
            "lora": {"r": 64, "alpha": 64, "dropout": 0.0, "modules_to_save": ["embed_tokens", "lm_head"]},
            "single": {"max_steps": 10},
        },
        "grpo": {
            "team": {
                **TINY_GRPO,
                "problems_per_step": 2,
                "num_plans": 2,
                "num_programs": 2,
                "max_plan_tokens": 48,
                "max_code_tokens": 80,
                "generation_batch_size": 8,
                "micro_batch_size": 8,
                "max_steps": 2,
            },
            "magrpo": {
                **TINY_GRPO,
                "problems_per_step": 1,
                "num_generations": 2,
                "max_helper_tokens": 48,
                "max_main_tokens": 80,
                "generation_batch_size": 8,
                "micro_batch_size": 8,
                "max_steps": 1,
            },
            "single": {
                "batch_size": 2,
                "num_generations": 2,
                "max_completion_length": 80,
                "max_steps": 1,
                "dtype": "float32",
                "gradient_checkpointing": False,
            },
        },
        "evaluate": {"benchmarks": ["composite_test", "mbpp", "livebench"], "collaboration_gain": False},
        "report": {"n_resamples": 200},
        "promote": {"n_resamples": 200},
        "tracking": {"log_system_metrics": False},
    }
    return deep_merge(yaml.safe_load(PROFILE.read_text()), cpu)


def make_standin(out: Path) -> Path:
    """A random Qwen2 of the tiny shape, its LM head untied from the embedding as in the 7B and 14B checkpoints, with a
    Qwen-style instruct tokenizer: byte-level BPE trained (as init-model trains the embedded one) on composite text of
    another seed, ChatML's special tokens and template."""
    from corecode.data.composite import generate_composite
    from corecode.data.config import CompositeParams
    from corecode.models.testing import make_qwen_standin
    from corecode.models.tokenizer import train_bpe_tokenizer

    corpus = generate_composite(CompositeParams(n_train=300, n_val=0, n_test=0, n_rl=0), seed=123)["train"]
    texts = [t for p in corpus for t in (p.prompt, p.plan, p.reference_solution)]
    tokenizer = train_bpe_tokenizer(texts, 1024, 2)
    return make_qwen_standin(out, tokenizer, "tiny", instruct=True, dtype=torch.float32, tie_word_embeddings=False)


def _repro(repo: Path, *targets: str) -> float:
    t0 = time.perf_counter()
    res = _dvc(repo, "repro", *targets)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    if targets:
        assert [line.split("'")[1] for line in res.stdout.splitlines() if line.startswith("Running stage")] == [
            "params",
            "grpo",
            *targets,
        ], res.stdout
    return time.perf_counter() - t0


def _json(repo: Path, rel: str):
    return json.loads((repo / rel).read_text())


def _solved(repo: Path, method: str) -> tuple[int, int]:
    """(problems solved, problems) of ``method`` on the run's held-out composite test split (one sample each)."""
    s = _json(repo, f"data/reports/eval/{method}/summary.json")["benchmarks"]["composite_test"]
    return round(s["pass_at_1"] * s["n_problems"]), s["n_problems"]


def _weights_differ(a: Path, b: Path) -> bool:
    from corecode.models.factory import load_model

    first, second = load_model(a, "float32", "cpu").state_dict(), load_model(b, "float32", "cpu").state_dict()
    assert first.keys() == second.keys()
    return any(not torch.equal(first[k], second[k]) for k in first)


@pytest.mark.e2e
@pytest.mark.slow  # 6.5 CPU minutes: 7.7 min on a busy 2-core machine (the run's 17 stage commands, SFT 2 min)
def test_profile_path_trains_and_evaluates_a_standin_hub_checkpoint(tmp_path, monkeypatch):
    standin = make_standin(tmp_path / "hub" / "Qwen2.5-Coder-tiny-Instruct")
    repo = pipeline_repo(tmp_path / "repo")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # tracking.uri: sqlite:///mlflow.db in the repo
    monkeypatch.chdir(repo)
    profile = tmp_path / "qwen2.5-coder-tiny-instruct-cpu.yaml"
    profile.write_text(yaml.safe_dump(cpu_profile(standin), sort_keys=False))
    from typer.testing import CliRunner

    from corecode.cli import app

    res = CliRunner().invoke(app, ["profile", "apply", str(profile), "-o", "params.yaml"])
    assert res.exit_code == 0, res.output

    shared_s = _repro(repo)
    assert sorted(p.name for p in (repo / "data/checkpoints/base").iterdir()) == ["corecode_pointer.json"]
    assert _json(repo, "data/checkpoints/base/corecode_pointer.json")["name_or_path"] == str(standin)
    for role in ("planner", "coder"):
        summary = _json(repo, f"data/reports/train/sft_{role}_summary.json")
        assert summary["chat_template"] is True
        assert summary["first_train_row"].startswith("<|im_start|>system\n")
        assert "<|im_start|>user\n### Problem\n" in summary["first_train_row"]
        assert summary["first_train_row"].endswith("<|im_end|>")  # the completion ends where generation stops
        assert (repo / f"data/checkpoints/sft_{role}/adapter_config.json").is_file()  # sft.lora.merge: false
        assert _weights_differ(repo / f"data/checkpoints/sft_{role}", repo / f"data/checkpoints/grpo_{role}"), role

    sft_team = _json(repo, "data/reports/eval/planner_coder_sft/summary.json")["benchmarks"]
    assert set(sft_team) == {"composite_test", "mbpp", "livebench"}
    solved = {"sft": _solved(repo, "planner_coder_sft"), "grpo shared base": _solved(repo, "planner_coder_grpo")}
    assert solved["sft"][0] > 0, sft_team["composite_test"]  # every test chain has a step pair no training problem has
    assert solved["grpo shared base"][0] > 0, solved  # two small steps from the SFT team: still solves some
    metrics = _json(repo, "data/reports/metrics.json")
    assert {"planner_coder_sft", "planner_coder_grpo", "single_sft", "single_grpo", "magrpo"} <= set(metrics["methods"])
    assert (repo / "data/reports/report.md").is_file()
    promotion = _json(repo, "data/reports/promotion.json")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")  # tracking.uri, relative to the repo
    (version,) = client.search_model_versions("name='corecode-team'")
    assert str(version.version) == promotion["version"] and version.tags["corecode.method"] == "planner_coder_grpo"

    # The other layout: the Planner and the Coder as two models, each its own LoRA adapter on its SFT weights. The
    # change reruns team GRPO and what reads it, nothing before.
    _edit_params(repo, lambda raw: raw["grpo"]["team"].update(shared_base=False))
    separate_s = _repro(repo, "evaluate@planner_coder_grpo")
    for role in ("planner", "coder"):
        assert _weights_differ(repo / f"data/checkpoints/sft_{role}", repo / f"data/checkpoints/grpo_{role}"), role
    solved["grpo separate models"] = _solved(repo, "planner_coder_grpo")
    assert solved["grpo separate models"][0] > 0, solved
    print(f"\nprofile path on {os.cpu_count()} CPUs: dvc repro {shared_s:.0f} s, then {separate_s:.0f} s; {solved}")
