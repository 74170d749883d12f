"""TRL's SFTTrainer with report_to=["mlflow"] logs into the stage's run (no second run is created)."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from corecode.tracking.config import TrackingParams
from corecode.tracking.runs import stage_run


def _tiny_model_and_tokenizer():
    """A 1-layer GPT-2 and a word-level tokenizer built in memory (no hub access on this machine)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", "<unk>", "def", "f", "(", ")", ":", "return", "1", "x", "+"]
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    config = GPT2Config(
        vocab_size=len(words),
        n_positions=32,
        n_embd=16,
        n_layer=1,
        n_head=2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return GPT2LMHeadModel(config), tokenizer


def test_sft_trainer_logs_into_active_stage_run(store, tmp_path):
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    ds = Dataset.from_dict({"text": ["def f ( x ) : return x + 1"] * 8})
    args = SFTConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=3,
        logging_steps=1,
        per_device_train_batch_size=2,
        report_to=["mlflow"],
        save_strategy="no",
        use_cpu=True,
        max_length=16,
        dataset_num_proc=None,
    )
    ours = {"seed": 0, "sft": {"lr": 1e-3}}  # the trainer logs its own `seed` (42) into the same run
    with stage_run("sft_coder", ours, TrackingParams(log_system_metrics=False)) as run:
        SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer).train()
    client = MlflowClient()
    history = client.get_metric_history(run.run_id, "loss")
    assert [m.step for m in history] == [1, 2, 3]
    data = client.get_run(run.run_id).data
    assert data.params["sft.lr"] == "0.001" and "learning_rate" in data.params  # ours and the trainer's
    assert data.params["corecode.seed"] == "0" and data.params["seed"] == "42"
    exp = client.get_run(run.run_id).info.experiment_id
    assert len(client.search_runs([exp])) == 2  # the parent and this stage: the trainer made no run of its own


pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
