"""`corecode promote`: the paired-bootstrap gate on a real registry, driven through the CLI."""

from __future__ import annotations

import json
import random

import typer
import yaml
from mlflow import MlflowClient
from typer.testing import CliRunner

from corecode.tracking.cli import register
from corecode.tracking.config import PromoteParams
from corecode.tracking.promote import decide

runner = CliRunner()
app = typer.Typer()  # only this package's commands: other packages' CLIs are not under test here
register(app)
N_PROBLEMS = 60


def _rates(p: float, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"t{i}": float(rng.random() < p) for i in range(N_PROBLEMS)}


def _write_eval(root, rates: dict[str, float], method="planner_coder_grpo", bench="composite_test"):
    d = root / "data/reports/eval" / method
    d.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"task_id": t, "n": 4, "c": int(round(r * 4)), "verdicts": []}) for t, r in rates.items()]
    (d / f"{bench}.jsonl").write_text("\n".join(lines) + "\n")


def _setup(root):
    for role in ("planner", "coder"):
        d = root / f"data/checkpoints/grpo_{role}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text("{}")
    params = {"tracking": {"log_system_metrics": False}, "promote": {"n_resamples": 2000}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))


def _promote():
    res = runner.invoke(app, ["promote"])
    assert res.exit_code == 0, res.output
    return json.loads(open("data/reports/promotion.json").read())


def test_decide_gate_cases():
    pp = PromoteParams(n_resamples=2000)
    weak, strong = _rates(0.3, 1), _rates(0.9, 2)
    assert decide(weak, None, pp, None)[0] is True
    ok, reason, stats = decide(strong, weak, pp, "1")
    assert ok and stats["p_value"] < 0.05 and stats["delta"] > 0.3, reason
    ok, reason, stats = decide(weak, weak, pp, "1")
    assert not ok and "not significantly better" in reason and stats["p_value"] > 0.5
    ok, reason, _ = decide(strong, {"t0": 1.0}, pp, "1")
    assert not ok and "different problems" in reason


def test_promote_cli_moves_champion_only_on_significant_gain(store, tmp_path):
    _setup(tmp_path)
    client = MlflowClient()

    _write_eval(tmp_path, _rates(0.3, 1))  # no champion yet -> v1 becomes champion
    d1 = _promote()
    assert d1["promoted"] and d1["previous_champion"] is None and "no champion" in d1["reason"]
    assert client.get_model_version_by_alias("corecode-team", "champion").version in ("1", 1)

    _write_eval(tmp_path, _rates(0.9, 2))  # clearly better -> v2 becomes champion
    d2 = _promote()
    assert d2["promoted"] and d2["previous_champion"] == "1" and d2["p_value"] < 0.05, d2
    assert str(client.get_model_version_by_alias("corecode-team", "champion").version) == "2"

    same = _rates(0.9, 2)
    same["t0"] = 1.0 - same["t0"]  # one problem flipped: not a significant gain
    _write_eval(tmp_path, same)
    d3 = _promote()
    assert not d3["promoted"] and d3["p_value"] >= 0.05, d3
    assert str(client.get_model_version_by_alias("corecode-team", "champion").version) == "2"
    v3 = client.get_model_version("corecode-team", "3")
    assert v3.tags["challenger"] == d3["reason"] and "not significantly better" in v3.tags["challenger"]
    assert "vs champion v2" in v3.tags["challenger"]
    # each version's files and per-problem results live with its promote stage run
    run = client.get_run(v3.run_id)
    assert run.data.tags["corecode.stage"] == "promote" and run.data.metrics["promoted"] == 0.0


def test_promote_cli_bad_input_names_file_and_line(store, tmp_path):
    _setup(tmp_path)
    res = runner.invoke(app, ["promote"])
    assert res.exit_code == 2 and "composite_test.jsonl" in res.output
    _write_eval(tmp_path, _rates(0.5, 3))
    path = tmp_path / "data/reports/eval/planner_coder_grpo/composite_test.jsonl"
    path.write_text(path.read_text() + '{"task_id": "t99", "n": 2}\n')
    res = runner.invoke(app, ["promote"])
    assert res.exit_code == 2 and f"composite_test.jsonl:{N_PROBLEMS + 1}" in res.output, res.output
    res = runner.invoke(app, ["promote", "--set", "promote.p_value_threshold=2"])
    assert res.exit_code != 0 and "promote.p_value_threshold" in res.output
