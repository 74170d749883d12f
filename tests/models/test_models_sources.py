"""Bad model input stops before any work with one error naming the key and the fix, and leaves what init-model wrote
before untouched: a hub id that cannot be fetched (offline: seconds, not the hub client's minute of retries), a
directory without config.json, a chat template the tokenizer lacks, a model too big for the GPU."""

import sys
import time
from pathlib import Path

import pytest
import torch
from transformers import Qwen2Config

from corecode.models.config import LoraParams
from corecode.models.factory import ModelSourceError, check_source, load_model
from corecode.models.memory import GIB, check_fits, parameter_counts, role_bytes, training_bytes
from corecode.models.testing import QWEN25_CODER_SHAPES, make_qwen_standin
from corecode.models.tokenizer import train_bpe_tokenizer

sys.path.insert(0, str(Path(__file__).parent))
from test_models_contract import TEXTS, init_model  # noqa: E402

UNKNOWN_HUB_ID = "corecode-tests-nonexistent-org/no-such-model-3f9a"


@pytest.fixture(scope="module")
def base_standin(tmp_path_factory) -> Path:
    """A stand-in of a base (not instruct) hub checkpoint: its tokenizer has no chat template."""
    tok = train_bpe_tokenizer(TEXTS, 400, 1)
    return make_qwen_standin(tmp_path_factory.mktemp("hub") / "base-model", tok, "tiny", instruct=False)


@pytest.fixture()
def project(tmp_path, base_standin):
    """A project whose init-model already wrote a copy of the stand-in: what a bad re-run must not destroy."""
    res = init_model(tmp_path, f"model.name_or_path={base_standin}")
    assert res.exit_code == 0, res.output
    return tmp_path


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _one_error_line(res) -> str:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


def test_unreachable_hub_id_fails_in_seconds_naming_the_key_and_fix(project):
    before = _files(project / "base")
    t0 = time.perf_counter()
    res = init_model(project, f"model.name_or_path={UNKNOWN_HUB_ID}")
    elapsed = time.perf_counter() - t0
    line = _one_error_line(res)
    assert elapsed < 15, f"{elapsed:.1f} s"  # transformers alone retries for ~25 s before giving up
    assert "model.name_or_path" in line and UNKNOWN_HUB_ID in line
    assert "--local-dir" in line and "HF_HUB_OFFLINE" in line
    assert _files(project / "base") == before  # the previous checkpoint is intact


def test_hf_hub_offline_fails_without_asking_the_network(monkeypatch):
    import huggingface_hub.constants

    # what HF_HUB_OFFLINE=1 in the environment sets when huggingface_hub is imported
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(
        ModelSourceError, match=r"^sft.base_checkpoint: .* not in the Hugging Face cache and HF_HUB_OFF"
    ):
        check_source(UNKNOWN_HUB_ID, "sft.base_checkpoint")


def test_directory_without_config_json(project, tmp_path):
    empty = tmp_path / "downloaded"
    empty.mkdir()
    (empty / "README.md").write_text("weights went elsewhere\n")
    before = _files(project / "base")
    line = _one_error_line(init_model(project, f"model.name_or_path={empty}"))
    assert f"model.name_or_path: {empty} has no config.json" in line
    assert _files(project / "base") == before
    with pytest.raises(ModelSourceError, match=r"^sft.base_checkpoint: .* has no config.json.*corecode init-model"):
        check_source(empty, "sft.base_checkpoint", hint=" (run `corecode init-model` first)")
    with pytest.raises(ModelSourceError, match=r"^grpo.team.coder_model: .*/nope does not exist"):
        load_model(tmp_path / "nope", key="grpo.team.coder_model")


def test_a_pointer_to_a_vanished_source_names_model_name_or_path(project, base_standin, tmp_path):
    moved = tmp_path / "moved"
    base_standin.rename(moved)
    try:
        assert init_model(project, f"model.name_or_path={moved}", "model.copy_weights=false").exit_code == 0
    finally:
        moved.rename(base_standin)
    moved.mkdir()  # the pointer's source is now a directory without config.json
    with pytest.raises(ModelSourceError, match=r"^model.name_or_path \(via .*corecode_pointer.json\): .*config.json"):
        load_model(project / "base", key="sft.base_checkpoint")


def test_chat_template_asked_of_a_tokenizer_without_one(project, base_standin):
    before = _files(project / "base")
    sets = (f"model.name_or_path={base_standin}", "generation.use_chat_template=true")
    line = _one_error_line(init_model(project, *sets))
    assert "generation.use_chat_template is true" in line and "no chat template" in line
    assert "set generation.use_chat_template: null (or false)" in line
    line = _one_error_line(init_model(project, "generation.use_chat_template=true"))  # the embedded tokenizer
    assert "generation.use_chat_template" in line and "embedded" in line
    assert _files(project / "base") == before


def test_memory_estimate_numbers():
    # 7.62e9 parameters trained in full: fp32 weight + gradient + 2 AdamW moments = 16 bytes each, 113.5 GiB
    assert training_bytes(0, 0, 7_615_616_512) == 7_615_616_512 * 16
    # a bf16 base + a 40.4M-parameter adapter: 2 bytes per frozen weight, 16 per adapter weight
    assert training_bytes(7_615_616_512, 2, 40_370_176) == 7_615_616_512 * 2 + 40_370_176 * 16
    assert training_bytes(10, 4, 0, n_sampler=10) == 60  # a full model trained in bf16 keeps a bf16 sampling copy
    check_fits(79 * GIB, 80 * GIB, "x", "y")  # fits: no error
    with pytest.raises(ModelSourceError, match=r"^sft --role coder needs at least 113.5 GiB .* 79.2 GiB free; set "):
        check_fits(training_bytes(0, 0, 7_615_616_512), int(79.2 * GIB), "sft --role coder", "set sft.lora.enabled")


def test_parameter_counts_from_config_json_alone(tmp_path):
    """The real Qwen2.5-Coder-7B shape, built on the meta device from its config.json: no weights, no memory."""
    Qwen2Config(**QWEN25_CODER_SHAPES["7b"]).save_pretrained(tmp_path / "7b")
    lora = LoraParams(enabled=True, r=16)
    n_params, n_lora = parameter_counts(tmp_path / "7b", lora)
    assert n_params == 7_615_616_512  # Qwen2.5-Coder-7B's published size (7.61B)
    h, i, kv, layers = 3584, 18944, 4 * 128, 28  # LoRA r(in + out) on q, k, v, o, gate, up, down of every layer
    assert n_lora == 16 * layers * ((h + h) + 2 * (h + kv) + (h + h) + 2 * (h + i) + (i + h))
    full = role_bytes(tmp_path / "7b", None, torch.float32)
    assert full / GIB > 110  # a full fine-tune of 7B cannot fit an 80 GB GPU ...
    assert role_bytes(tmp_path / "7b", lora, torch.bfloat16) / GIB < 16  # ... a bf16 base with LoRA does
    with pytest.raises(ModelSourceError, match="grpo.team.lora.enabled"):
        check_fits(2 * full, 80 * GIB, "grpo.team with sft_planner and sft_coder", "set grpo.team.lora.enabled: true")


def test_memory_check_looks_at_this_processes_gpu(monkeypatch):
    """Under accelerate launch each rank checks its own card (cuda:LOCAL_RANK), not the current device, which is GPU 0
    in every process before accelerate sets it."""
    from corecode.models.memory import process_gpu

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert process_gpu() == torch.device("cuda", 0)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert process_gpu() == torch.device("cuda", 1)
