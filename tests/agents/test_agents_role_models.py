"""Role models: MLflow registry URIs (real sqlite store) and base + LoRA adapter checkpoints (real tiny Qwen2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corecode.agents.config import RoleModel
from corecode.agents.factory import model_generator_factory, resolve_role_model
from corecode.config import Params
from corecode.generation.base import SamplingParams


@pytest.fixture
def registry(tmp_path, monkeypatch):
    import mlflow

    prev = mlflow.get_tracking_uri()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)  # resolve_model_uri caches downloads under ./.corecode
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(prev)  # leave no global state pointing at a deleted store


def test_models_uri_resolves_to_the_roles_subdirectory(registry, tmp_path):
    import mlflow
    from mlflow import MlflowClient

    from corecode.tracking.registry import register_checkpoint

    for role in ("planner", "coder"):
        (tmp_path / "ck" / role).mkdir(parents=True)
        (tmp_path / "ck" / role / "config.json").write_text(f'{{"role": "{role}"}}')
    with mlflow.start_run() as run:
        mv = register_checkpoint({r: tmp_path / "ck" / r for r in ("planner", "coder")}, "team", run)
    MlflowClient().set_registered_model_alias("team", "champion", mv.version)
    rm = RoleModel(model="models:/team@champion")
    planner, _ = resolve_role_model(rm, "planner")
    coder, _ = resolve_role_model(rm, "coder")
    repair, _ = resolve_role_model(rm, "repair")  # no repair model registered: the Coder's weights
    assert Path(planner).name == "planner" and '"planner"' in (Path(planner) / "config.json").read_text()
    assert Path(coder).name == "coder" and Path(repair) == Path(coder)
    with pytest.raises(LookupError, match="models:/ghost@champion"):
        resolve_role_model(RoleModel(model="models:/ghost@champion"), "coder")


def test_base_plus_lora_adapter_generates_and_models_are_shared(tmp_path):
    from peft import LoraConfig, get_peft_model

    from corecode.models.factory import load_model
    from corecode.models.testing import make_tiny_checkpoint

    base = make_tiny_checkpoint(tmp_path / "base", ["def add(a, b):\n    return a + b\n"])
    peft_model = get_peft_model(
        load_model(base, "float32", "cpu"),
        LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], task_type="CAUSAL_LM"),
    )
    peft_model.save_pretrained(tmp_path / "adapter")
    make = model_generator_factory(Params())
    with_adapter = make("coder", RoleModel(model=str(base), adapter=str(tmp_path / "adapter")))
    assert make("repair", RoleModel(model=str(base), adapter=str(tmp_path / "adapter"))) is with_adapter
    plain = make("planner", RoleModel(model=str(base)))
    assert plain is not with_adapter and type(with_adapter.model).__name__ == "PeftModelForCausalLM"
    out = with_adapter.generate(["def add"], SamplingParams(n=2, max_new_tokens=4, temperature=1.0, seed=0))
    assert len(out) == 1 and len(out[0]) == 2 and all(c.num_tokens >= 1 for c in out[0])
    with pytest.raises(FileNotFoundError, match="not a LoRA adapter directory"):
        make("coder", RoleModel(model=str(base), adapter=str(tmp_path)))
