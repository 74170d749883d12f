"""Registry versions and models:/ URI resolution against a real MLflow sqlite store."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from corecode.tracking.config import TrackingParams
from corecode.tracking.registry import PER_PROBLEM_TAG, load_per_problem, register_checkpoint, resolve_model_uri
from corecode.tracking.runs import stage_run


def _checkpoint(root, tag: str) -> dict:
    dirs = {}
    for role in ("planner", "coder"):
        d = root / f"ckpt_{tag}_{role}"
        (d / "sub").mkdir(parents=True)
        (d / "config.json").write_text(f'{{"role": "{role}", "tag": "{tag}"}}')
        (d / "sub" / "weights.bin").write_bytes(bytes(range(256)) * 4)
        dirs[role] = d
    return dirs


def test_versions_per_run_and_models_uri_round_trip(store, tmp_path):
    tp = TrackingParams(log_system_metrics=False)
    per_problem = {"composite_test": {"t1": 1.0, "t2": 0.5}}
    versions = []
    for tag in ("a", "b"):
        with stage_run("promote", {}, tp) as run:
            mv = register_checkpoint(
                _checkpoint(tmp_path, tag),
                "team",
                run,
                per_problem=per_problem,
                tags={"corecode.method": "planner_coder_grpo"},
            )
        versions.append(mv)
    assert [v.version for v in versions] == ["1", "2"] or [v.version for v in versions] == [1, 2]
    client = MlflowClient()
    v1 = client.get_model_version("team", "1")
    assert v1.run_id == versions[0].run_id and v1.tags["corecode.method"] == "planner_coder_grpo"
    assert v1.tags[PER_PROBLEM_TAG].endswith("eval/team/per_problem.json")
    assert load_per_problem("team", 1) == per_problem

    client.set_registered_model_alias("team", "champion", "1")
    cache = tmp_path / "cache"
    local = resolve_model_uri("models:/team@champion", cache_dir=cache)
    assert local == cache / "team" / "1"
    for role in ("planner", "coder"):
        src = tmp_path / f"ckpt_a_{role}"
        assert (local / role / "config.json").read_text() == (src / "config.json").read_text()
        assert (local / role / "sub" / "weights.bin").read_bytes() == (src / "sub" / "weights.bin").read_bytes()
    # cached: a second resolve does not download again
    (local / "planner" / "marker").write_text("kept")
    assert (resolve_model_uri("models:/team@champion", cache_dir=cache) / "planner" / "marker").exists()
    # the alias moves -> the new version is fetched
    client.set_registered_model_alias("team", "champion", "2")
    moved = resolve_model_uri("models:/team@champion", cache_dir=cache)
    assert moved == cache / "team" / "2"
    assert '"tag": "b"' in (moved / "coder" / "config.json").read_text()
    assert resolve_model_uri("models:/team/1", cache_dir=cache) == local
    assert resolve_model_uri("models:/team@champion/coder", cache_dir=cache) == moved / "coder"
    with pytest.raises(FileNotFoundError, match="has no 'helper'"):
        resolve_model_uri("models:/team/1/helper", cache_dir=cache)
    run_copy = resolve_model_uri(f"runs:/{versions[0].run_id}/checkpoint/planner", cache_dir=cache)
    assert (run_copy / "config.json").read_text() == (tmp_path / "ckpt_a_planner" / "config.json").read_text()


def test_resolve_errors_and_local_paths(store, tmp_path):
    (tmp_path / "ckpt").mkdir()
    assert resolve_model_uri(str(tmp_path / "ckpt")) == tmp_path / "ckpt"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        resolve_model_uri(str(tmp_path / "nowhere"))
    with pytest.raises(LookupError, match="models:/ghost@champion"):
        resolve_model_uri("models:/ghost@champion", cache_dir=tmp_path / "c")


def test_register_missing_checkpoint_names_the_dir(store, tmp_path):
    with stage_run("promote", {}, TrackingParams(log_system_metrics=False)) as run:
        with pytest.raises(FileNotFoundError, match="no_such_dir"):
            register_checkpoint({"coder": tmp_path / "no_such_dir"}, "team", run)
