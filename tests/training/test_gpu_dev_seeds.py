"""benchmarks/gpu_dev_seeds.py's report: per-seed and pooled paired comparisons from the runs' evaluation files, the
training logs' Planner measurements by quarter, and runs that are missing left out rather than failing the report."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "gpu_dev_seeds.py"
BENCH = "composite_test"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_dev_seeds", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scores(path: Path, passed: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"task_id": f"t{i}", "n": 1, "c": int(p), "pass_at_1": p} for i, p in enumerate(passed)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _run(work: Path, run: str, passed: list[float], log: list[dict]) -> None:
    _scores(work / "runs" / run / f"data/reports/eval/planner_coder_grpo/{BENCH}.jsonl", passed)
    (work / "runs" / run / "data/reports/train").mkdir(parents=True)
    (work / "runs" / run / "data/reports/train/grpo_team.json").write_text(json.dumps(log))


def test_report_pairs_per_seed_and_pooled(tmp_path):
    mod = _module()
    n = 40
    _scores(tmp_path / f"data/reports/eval/planner_coder_sft/{BENCH}.jsonl", [0.0] * n)
    log = [{"step": s, "step_time_s": 1.0, "planner/plan_accuracy": s / 8} for s in range(1, 9)]
    log.append({"step": 8, "eval/collaboration_gain": 0.25})
    _run(tmp_path, "both_s1", [1.0] * 20 + [0.0] * 20, log)  # 50%
    _run(tmp_path, "both_s2", [1.0] * 10 + [0.0] * 30, log)  # 25%
    _run(tmp_path, "coder_s1", [1.0] * 10 + [0.0] * 30, log)  # 25%
    # coder_s2 is missing: its pairs are left out, and the pooled comparison needs two seeds with both runs
    mod.report(tmp_path, tmp_path, [1, 2], ["both", "coder"])

    res = json.loads((tmp_path / "results.json").read_text())
    pairs = res["pairs"]
    assert pairs["both>coder"]["1"]["delta_points"] == 25.0 and set(pairs["both>coder"]) == {"1"}
    assert pairs["both>sft"]["1"]["delta_points"] == 50.0 and pairs["both>sft"]["2"]["delta_points"] == 25.0
    # pooled: each problem's pass@1 averaged over the seeds, so the mean of the per-seed deltas here
    assert pairs["both>sft"]["pooled"]["delta_points"] == 37.5 and pairs["both>sft"]["pooled"]["n"] == n
    assert pairs["both>sft"]["pooled"]["p_greater"] < 0.01
    assert "pooled" not in pairs["coder>sft"] and res["runs"]["coder_s2"]["pass_at_1"] is None
    run = res["runs"]["both_s1"]
    assert run["planner/plan_accuracy"] == [0.188, 0.438, 0.688, 0.938]  # quarters of steps 1-2, 3-4, 5-6, 7-8
    assert run["collaboration_gain"] == [[8, 0.25]] and run["median_step_s"] == 1.0
    table = (tmp_path / "results.md").read_text()
    assert "| coder_s2 | missing |" in table and "| pooled | both | sft | +37.50 |" in table


def test_sft_from_without_an_sft_team_stops_before_any_command(tmp_path):
    mod = _module()
    (tmp_path / "earlier/data/processed").mkdir(parents=True)  # data but no SFT team
    try:
        mod.main(["--work", str(tmp_path / "w"), "--sft-from", str(tmp_path / "earlier"), "--profile", ""])
    except SystemExit as e:
        message = str(e.code)
    assert "data/checkpoints/sft_planner" in message and "data/processed" not in message.split("no ")[1]
    assert not (tmp_path / "w").exists()  # nothing run, nothing written
