"""`corecode grpo-team` end to end from a params file (tiny models, real sandbox, MLflow sqlite in a temp dir),
and the errors for bad inputs."""

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, TINY_TEAM, build_team  # noqa: E402

from corecode.cli import app  # noqa: E402
from corecode.data.io import read_problems  # noqa: E402


def test_grpo_team_command(tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("CORECODE_PARENT_RUN_ID", raising=False)
    planner, coder = build_team(tmp_path / "sft")
    Path("train.jsonl").write_text("\n".join(p.model_dump_json() for p in PROBLEMS) + "\n")
    Path("val.jsonl").write_text("\n".join(p.model_dump_json() for p in PROBLEMS[:2]) + "\n")
    params = {
        "seed": 1,
        "sandbox": {"workers": 2, "cache_dir": None},
        "tracking": {"uri": f"sqlite:///{tmp_path}/mlflow.db", "log_system_metrics": False},
        "grpo": {
            "team": {
                **TINY_TEAM,
                "planner_model": str(planner),
                "coder_model": str(coder),
                "train_problems": "train.jsonl",
                "val_problems": "val.jsonl",
                "max_steps": 2,
                "save_steps": 1,
                "eval_steps": 1,
                "eval_problems": 2,
                "max_plan_tokens": 32,
                "max_code_tokens": 40,
            }
        },
    }
    Path("params.yaml").write_text(yaml.safe_dump(params))
    argv = ["--pipeline-outputs", "grpo-team", "--params", "params.yaml", "--set", "grpo.team.num_programs=2"]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output + repr(res.exception)
    final = json.loads(res.output[res.output.index("{") :])
    assert "eval/collaboration_gain" in final
    for d in ("data/checkpoints/grpo_planner", "data/checkpoints/grpo_coder"):
        assert (Path(d) / "model.safetensors").exists() and (Path(d) / "tokenizer.json").exists()
    log = json.loads(Path("data/reports/train/grpo_team.json").read_text())
    assert [r["step"] for r in log[:2]] == [1, 2] and "eval/collaboration_gain" in log[0]
    assert (Path("data/run_state/grpo_team") / "step-1").is_dir()

    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("corecode").experiment_id], "tags.`corecode.stage` = 'grpo_team'"
    )
    assert len(runs) == 1
    history = client.get_metric_history(runs[0].info.run_id, "reward_planner")
    assert [m.step for m in history] == [1, 2]
    assert "collaboration_gain" in " ".join(runs[0].data.metrics)


def test_bad_params_and_problem_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text("grpo:\n  num_planz: 3\n")
    res = CliRunner().invoke(app, ["grpo-team", "--params", "params.yaml"])
    assert res.exit_code != 0 and "grpo.num_planz" in res.output
    bad = tmp_path / "p.jsonl"
    bad.write_text(PROBLEMS[0].model_dump_json() + "\n{not json}\n")
    with pytest.raises(ValueError, match=r"p\.jsonl:2"):
        read_problems(bad)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        read_problems(tmp_path / "missing.jsonl")
