"""benchmarks/gpu_dev_seeds.py's report: per-seed and pooled paired comparisons from the runs' evaluation files, the
training logs' Planner measurements by quarter, and runs that are missing left out rather than failing the report."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

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


def _tune_table(out: Path, rows: list[tuple[str, str]]) -> None:
    cols = [
        "run",
        "variant",
        "seed",
        "overrides",
        "train_rc",
        "pass_at_1",
        "ref_pass_at_1",
        "delta_points",
        "p_greater",
    ]
    lines = ["\t".join(cols)]
    lines += [
        "\t".join([f"{v}_s0", v, "0", "k=v", "0", p, "0.40" if p else "", "+0.0" if p else "", "0.5"]) for v, p in rows
    ]
    (out / "tune.tsv").write_text("\n".join(lines) + "\n")


def test_tune_chooses_the_best_both_roles_run_on_dev_and_the_report_shows_it(tmp_path):
    mod = _module()
    # the Coder-only run of lr_a is the best dev run overall, but the choice is made on the both-roles runs;
    # a both-roles run that failed (no pass@1) is never chosen
    _tune_table(tmp_path, [("lr_a__both", "0.45"), ("lr_a__coder", "0.60"), ("lr_b__both", "0.50"), ("lr_c__both", "")])
    assert mod.choose_recipe(tmp_path / "tune.tsv") == "lr_b"
    (tmp_path / "chosen.txt").write_text("lr_b\n")
    _scores(tmp_path / f"data/reports/eval/planner_coder_sft/{BENCH}.jsonl", [0.0, 1.0])
    mod.report(tmp_path, tmp_path, [1], ["both"])
    assert json.loads((tmp_path / "results.json").read_text())["chosen_on_dev"] == "lr_b"
    table = (tmp_path / "results.md").read_text()
    assert table.startswith("Recipe chosen on the dev split: **lr_b**") and "| lr_a__coder | k=v | 0.60 |" in table


def test_tune_without_a_scored_both_roles_run_names_the_table(tmp_path):
    mod = _module()
    _tune_table(tmp_path, [("lr_a__both", ""), ("lr_a__coder", "0.60")])
    with pytest.raises(SystemExit, match="tune.tsv: no both-roles run"):
        mod.choose_recipe(tmp_path / "tune.tsv")


def test_tune_variant_of_the_wrong_shape_names_the_file(tmp_path):
    mod = _module()
    assert mod.tune_overrides(tmp_path / "v.yaml", "a", {"x.y": 1.0, "x.z": [1]}) == ["x.y=1.0", "x.z=[1]"]
    with pytest.raises(SystemExit, match="v.yaml: variant 'a' must be"):
        mod.tune_overrides(tmp_path / "v.yaml", "a", "lr=1")


def test_runs_take_the_first_slots_and_the_sft_evaluation_is_never_skipped(tmp_path):
    mod = _module()
    args = mod.parse_args(["--work", str(tmp_path), "--seeds", "1", "--arms", "both", "coder", "--jobs", "1"])
    drv = mod.Driver(args)
    drv.cli = [sys.executable, "-c", "pass"]  # every command succeeds at once
    drv.out.mkdir(parents=True)
    (tmp_path / "params.yaml").write_text("{}\n")
    drv.run_all()
    names = [line.split("\t")[:2] for line in (drv.out / "steps.tsv").read_text().splitlines()]
    assert names[0] == ["train", "both_s1"] and names[-1] == ["eval_sft", tmp_path.name]
    assert names.count(["eval", "coder_s1"]) == 1
    # past the deadline no run starts, but the SFT team is still evaluated
    (drv.out / "steps.tsv").unlink()
    drv.args.deadline, drv.t0 = 1, drv.t0 - 10
    drv.run_all()
    assert [line.split("\t")[0] for line in (drv.out / "steps.tsv").read_text().splitlines()] == ["eval_sft"]
