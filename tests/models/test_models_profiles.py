"""``corecode profile apply|list``: profiles merged onto params.yaml, validated, bad keys named with their file."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from corecode.cli import app
from corecode.config import load_params
from corecode.models.profiles import PROFILES, apply_profile, deep_merge

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


def test_deep_merge_and_builtin_profiles(tmp_path):
    assert deep_merge({"a": {"b": 1, "c": [1]}, "d": 0}, {"a": {"c": [2]}}) == {"a": {"b": 1, "c": [2]}, "d": 0}
    base = tmp_path / "params.yaml"
    base.write_text("seed: 0\n")
    for name, keys in PROFILES.items():  # every built-in profile still fits the params model
        merged = apply_profile(name, base)
        assert merged["model"]["name_or_path"] == keys["model.name_or_path"]


def test_profile_list(monkeypatch):
    monkeypatch.chdir(ROOT)
    res = CliRunner().invoke(app, ["profile", "list"])
    assert res.exit_code == 0, res.output
    first_comment = next(line for line in GPU_DEV.read_text().splitlines() if line.startswith("#"))
    line = next(line for line in res.stdout.splitlines() if line.startswith("gpu-dev "))
    assert "configs/profiles/gpu-dev.yaml" in line and first_comment.lstrip("# ") in line
    assert any(line.startswith("qwen2.5-coder-7b ") for line in res.stdout.splitlines())
