"""``corecode profile apply|list``: profiles merged onto params.yaml, validated, bad keys named with their file."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from corecode.cli import app
from corecode.config import Params, load_params
from corecode.models.profiles import apply_profile, deep_merge

ROOT = Path(__file__).resolve().parents[2]
GPU_DEV = ROOT / "configs" / "profiles" / "gpu-dev.yaml"


def test_gpu_dev_profile_onto_params_yaml(tmp_path):
    out = tmp_path / "params.gpu-dev.yaml"
    res = CliRunner().invoke(
        app,
        [
            "profile",
            "apply",
            str(GPU_DEV),
            "--base",
            str(ROOT / "params.yaml"),
            "-o",
            str(out),
            "--set",
            "sandbox.isolation=unshare",
        ],
    )
    assert res.exit_code == 0, res.output
    merged, base = load_params(out), load_params(ROOT / "params.yaml")
    profile = yaml.safe_load(GPU_DEV.read_text())
    assert merged.model.embedded.hidden_size == profile["model"]["embedded"]["hidden_size"] == 768  # from the profile
    assert merged.sandbox.workers == profile["sandbox"]["workers"]
    assert merged.sandbox.isolation == "unshare"  # --set wins
    assert merged.sandbox.time_limit_s == base.sandbox.time_limit_s  # what the profile does not name: params.yaml's
    assert merged.seed == base.seed


def test_bad_key_names_the_profile_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("# a profile with a typo\nsandbox:\n  wrokers: 4\n")
    out = tmp_path / "out.yaml"
    res = CliRunner().invoke(app, ["profile", "apply", str(bad), "--base", str(ROOT / "params.yaml"), "-o", str(out)])
    assert res.exit_code == 2 and not out.exists()
    assert res.stderr.startswith(f"error: {bad}: sandbox.wrokers: ") and len(res.stderr.splitlines()) == 1


def test_errors_name_the_layer_that_set_the_key(tmp_path):
    base = tmp_path / "params.yaml"
    base.write_text("seed: 0\nmodel:\n  embedded:\n    hidden_size: 64\n")
    prof = tmp_path / "p.yaml"
    prof.write_text("model:\n  embedded:\n    num_attention_heads: 5\n")
    with pytest.raises(ValueError, match=rf"^--set: seed: .*; {prof}: model.embedded: .*divisible"):
        apply_profile(prof, base, ["seed=x"])
    with pytest.raises(ValueError, match="no such profile file"):
        apply_profile("nope", base)


def test_deep_merge():
    assert deep_merge({"a": {"b": 1, "c": [1]}, "d": 0}, {"a": {"c": [2]}}) == {"a": {"b": 1, "c": [2]}, "d": 0}


QWEN_PROFILES = sorted((ROOT / "configs" / "profiles").glob("qwen2.5-coder-*.yaml"))


def test_qwen_profiles_cover_every_size_base_and_instruct():
    names = {p.stem for p in QWEN_PROFILES}
    sizes = ("1.5b", "3b", "7b", "14b")
    assert names == {f"qwen2.5-coder-{s}{kind}" for s in sizes for kind in ("", "-instruct")}


@pytest.mark.parametrize("path", QWEN_PROFILES, ids=lambda p: p.stem)
def test_each_qwen_profile_applies_onto_params_yaml_and_validates(path):
    text = path.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert text.startswith("# Qwen/Qwen2.5-Coder-") and "GPU" in header[0] and len(header) >= 3  # what for, the GPU
    params = Params.model_validate(apply_profile(path, ROOT / "params.yaml"))
    own = yaml.safe_load(text)
    instruct = path.stem.endswith("-instruct")
    size = path.stem.removeprefix("qwen2.5-coder-").removesuffix("-instruct").upper()
    assert params.model.name_or_path == f"Qwen/Qwen2.5-Coder-{size}" + ("-Instruct" if instruct else "")
    assert params.generation.use_chat_template is instruct  # instruct: its chat template; base: raw prompts
    assert params.model.dtype == "bfloat16" and params.grpo.team.bf16
    for role in ("planner", "coder"):
        sft = params.sft.for_role(role)
        assert sft.lora.enabled and sft.gradient_checkpointing and sft.max_steps == -1
        team = params.grpo.team.role_model(role)
        assert team.lora.enabled and team.gradient_checkpointing
    assert params.grpo.single.lora.enabled and params.grpo.magrpo.role_model("main").lora.enabled
    shared = params.grpo.team.shared_base
    assert shared == (size in ("7B", "14B"))  # 7B/14B: one bf16 base for both roles, the SFT adapters on it
    assert params.sft.lora.merge is not shared and params.model.copy_weights is not shared
    assert "embedded" not in own.get("model", {})  # only keys that matter for a hub checkpoint


def test_profile_list(monkeypatch):
    monkeypatch.chdir(ROOT)
    res = CliRunner().invoke(app, ["profile", "list"])
    assert res.exit_code == 0, res.output
    first_comment = next(line for line in GPU_DEV.read_text().splitlines() if line.startswith("#"))
    line = next(line for line in res.stdout.splitlines() if line.startswith("gpu-dev "))
    assert "configs/profiles/gpu-dev.yaml" in line and first_comment.lstrip("# ") in line
    line = next(line for line in res.stdout.splitlines() if line.startswith("qwen2.5-coder-7b-instruct "))
    assert "Qwen/Qwen2.5-Coder-7B-Instruct" in line and "80 GB" in line
