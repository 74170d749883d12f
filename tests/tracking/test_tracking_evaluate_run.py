"""The evaluate stage's MLflow run carries its per-problem results (a tiny real checkpoint, the real sandbox)."""

from __future__ import annotations

import json

import yaml
from mlflow import MlflowClient
from typer.testing import CliRunner

from corecode.cli import app


def test_evaluate_run_logs_per_problem_results(store, tmp_path):
    from corecode.data.composite import generate_composite
    from corecode.data.config import CompositeParams
    from corecode.data.io import write_problems
    from corecode.models.testing import make_tiny_checkpoint

    suite = CompositeParams(n_train=2, n_val=0, n_test=2, n_rl=0, test_unseen_chain_frac=0.0, phrasing_variety=1)
    bench = tmp_path / "bench.jsonl"
    write_problems(bench, generate_composite(suite, seed=0)["test"])
    ckpt = make_tiny_checkpoint(tmp_path / "coder", ["def solve(nums):\n    return nums\n"])
    params = {
        "agents": {
            "default_team": "mini",
            "teams": {"mini": {"type": "single", "roles": {"coder": str(ckpt)}}},
            "sampling": {"coder": {"max_new_tokens": 8}},
        },
        "evaluate": {"benchmarks": [bench.name], "n_samples": 1, "ks": [1]},
        "model": {"device": "cpu"},
        "tracking": {"log_system_metrics": False},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    res = CliRunner().invoke(app, ["evaluate", "--method", "mini", "--out-dir", str(tmp_path / "eval")])
    assert res.exit_code == 0, res.output + repr(res.exception)

    client = MlflowClient()
    exp = client.get_experiment_by_name("corecode").experiment_id
    (run,) = client.search_runs(exp, filter_string="tags.`corecode.stage` = 'evaluate_mini'")
    logged = {a.path for a in client.list_artifacts(run.info.run_id, "eval")}
    assert logged == {f"eval/{p.name}" for p in (tmp_path / "eval" / "mini").iterdir()}
    assert "eval/bench.jsonl.jsonl" in logged  # one line per problem
    rows = client.download_artifacts(run.info.run_id, "eval/bench.jsonl.jsonl", str(tmp_path / "dl"))
    assert [json.loads(x)["task_id"] for x in open(rows)] == [json.loads(x)["task_id"] for x in open(bench)]
