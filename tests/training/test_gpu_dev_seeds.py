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
    log = [
        {"step": s, "step_time_s": 1.0, "planner/plan_accuracy": s / 8, "coder/zero_std_frac": 1 - s / 8}
        for s in range(1, 9)
    ]
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
    # the Coder's zero-variance groups by quarter, beside the Planner's measurements
    assert "| [0.188, 0.438, 0.688, 0.938] |  | [0.812, 0.562, 0.312, 0.062] | +0.25 |" in table


def test_sft_from_without_an_sft_team_stops_before_any_command(tmp_path):
    mod = _module()
    (tmp_path / "earlier/data/processed").mkdir(parents=True)  # data but no SFT team
    try:
        mod.main(["--work", str(tmp_path / "w"), "--sft-from", str(tmp_path / "earlier"), "--profile", ""])
    except SystemExit as e:
        message = str(e.code)
    assert "data/checkpoints/sft_planner" in message and "data/processed" not in message.split("no ")[1]
    assert not (tmp_path / "w").exists()  # nothing run, nothing written


def _tune_table(out: Path, rows: list[tuple]) -> None:
    """rows: (variant, pass@1) or (variant, pass@1, seed)."""
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
        "\t".join([f"{v}_s{s}", v, s, "k=v", "0", p, "0.40" if p else "", "+0.0" if p else "", "0.5"])
        for v, p, s in (row if len(row) == 3 else (*row, "0") for row in rows)
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
    assert table.startswith("Recipe chosen on the dev split: **lr_b**") and "| lr_a__coder_s0 | k=v | 0.60 |" in table


def test_tune_without_a_scored_both_roles_run_names_the_table(tmp_path):
    mod = _module()
    _tune_table(tmp_path, [("lr_a__both", ""), ("lr_a__coder", "0.60")])
    with pytest.raises(SystemExit, match="tune.tsv: no variant's both runs"):
        mod.choose_recipe(tmp_path / "tune.tsv")


def test_tune_arm_chooses_by_that_arms_mean_over_the_tune_seeds(tmp_path):
    mod = _module()
    rows = [
        ("a__coder", "0.60", "11"), ("a__coder", "0.40", "12"),  # mean 0.50: its best seed is the best run
        ("b__coder", "0.52", "11"), ("b__coder", "0.50", "12"),  # mean 0.51
        ("c__coder", "0.90", "11"), ("c__coder", "", "12"),  # a failed seed: not chosen
        ("d__both", "0.99", "11"),  # another arm: not read
    ]  # fmt: skip
    _tune_table(tmp_path, rows)
    assert mod.choose_recipe(tmp_path / "tune.tsv", "coder") == "b"
    assert mod.choose_recipe(tmp_path / "tune.tsv") == "d"  # by the both-roles runs (the default)
    with pytest.raises(SystemExit):
        mod.parse_args(["--work", "w", "--tune-arm", "coder"])


def test_tune_arm_trains_only_that_arm_for_every_tune_seed(tmp_path, monkeypatch):
    mod = _module()
    variants = "lr_a: {grpo.team.learning_rate: 1.0e-5}\nlr_b: {grpo.team.learning_rate: 2.0e-5}\n"
    (tmp_path / "v.yaml").write_text(variants)
    args = ["--work", str(tmp_path / "w"), "--tune", str(tmp_path / "v.yaml"), "--tune-arm", "coder"]
    arm_set = ["--arm-set", "coder", "grpo.team.roles.coder.beta=0.1"]
    drv = mod.Driver(mod.parse_args(args + ["--tune-seed", "11", "12"] + arm_set))
    drv.out.mkdir(parents=True)
    drv.work.mkdir(parents=True, exist_ok=True)
    seen = {}

    def sweep(name, cmd, cwd):  # stands in for notebooks/sweep.py: records its variants and seeds, writes its table
        import yaml

        seen["variants"] = yaml.safe_load(Path(cmd[cmd.index("--variants") + 1]).read_text())
        seen["seeds"] = cmd[cmd.index("--seeds") + 1 : cmd.index("--jobs")]
        _tune_table(drv.out, [("lr_a__coder", "0.3", "11"), ("lr_a__coder", "0.3", "12"),
                              ("lr_b__coder", "0.5", "11"), ("lr_b__coder", "0.4", "12")])  # fmt: skip
        return 0

    monkeypatch.setattr(drv, "execute", sweep)
    monkeypatch.setattr(drv, "params", lambda extra: seen.setdefault("params", extra))
    drv.tune()
    assert sorted(seen["variants"]) == ["lr_a__coder", "lr_b__coder"] and seen["seeds"] == ["11", "12"]
    coder = ["grpo.team.frozen_roles=[planner]", "grpo.team.roles.coder.beta=0.1"]  # the arm, then its --arm-set
    assert seen["variants"]["lr_b__coder"][-2:] == coder
    assert drv.recipe == ["grpo.team.learning_rate=2e-05"] and seen["params"][-1] == "grpo.team.learning_rate=2e-05"
    assert (drv.out / "chosen.txt").read_text() == "lr_b\n"


def test_a_recipe_without_ptx_runs_no_ptx_arm_and_the_report_says_sft_is_their_control(tmp_path):
    mod = _module()
    argv = ["--work", str(tmp_path), "--seeds", "1", "--arms", "coder", "ptx_coder", "--jobs", "2"]
    drv = mod.Driver(mod.parse_args(argv))
    drv.cli = [sys.executable, "-c", "pass"]  # every command succeeds at once
    drv.out.mkdir(parents=True)
    (tmp_path / "params.yaml").write_text("{}\n")  # the defaults: ptx 2.0 on the SFT rows
    drv.run_all()
    assert drv.ran_arms == ["coder", "ptx_coder"] and not (drv.out / mod.PTX_NOTE).exists()
    ran = {line.split("\t")[1] for line in (drv.out / "steps.tsv").read_text().splitlines()}
    assert ran == {"coder_s1", "ptx_coder_s1", tmp_path.name}
    (drv.out / "steps.tsv").unlink()
    (tmp_path / "params.yaml").write_text("grpo:\n  team:\n    ptx_coef: 0.0\n")
    drv.run_all()
    ran = {line.split("\t")[1] for line in (drv.out / "steps.tsv").read_text().splitlines()}
    assert drv.ran_arms == ["coder"] and ran == {"coder_s1", tmp_path.name}
    _scores(tmp_path / f"data/reports/eval/planner_coder_sft/{BENCH}.jsonl", [0.0, 1.0])
    mod.report(tmp_path, drv.out, [1], drv.ran_arms)
    table = (drv.out / "results.md").read_text()
    assert table.startswith("grpo.team.ptx_coef is 0") and "each arm's control is `sft`" in table
    assert "ptx_coder" not in table.split("\n", 1)[1]
    (tmp_path / "params.yaml").write_text("{}\n")  # ptx again, in the same out directory: the note goes
    drv.run_all()
    assert drv.ran_arms == ["coder", "ptx_coder"] and not (drv.out / mod.PTX_NOTE).exists()


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


# A stand-in for `python -m corecode.cli` that writes what the --tune-planner step reads: `sft --role planner` writes a
# checkpoint holding its max_steps and a val loss; `evaluate` writes the team's dev results, 10 problems, where the
# Planner's max_steps/1000 + (0.1 at temperature 0.2) of them pass. Every call is appended to calls.txt.
FAKE_CLI = r"""
import json, sys
from pathlib import Path
args = sys.argv[1:]
sets = dict(a.split("=", 1) for a in args if "=" in a)
with open(sys.argv[0] + ".calls", "a") as f:
    f.write(Path.cwd().name + " " + " ".join(a for a in args if "=" not in a and a != "--set") + "\n")
if "sft" in args:
    Path("data/checkpoints/sft_planner").mkdir(parents=True)
    Path("data/checkpoints/sft_planner/steps").write_text(sets["sft.planner.max_steps"])
    Path("data/reports/train").mkdir(parents=True)
    Path("data/reports/train/sft_planner_summary.json").write_text(json.dumps({"eval_loss": 0.5}))
if "evaluate" in args:
    steps = int(Path("data/checkpoints/sft_planner/steps").read_text())
    n = round(10 * (steps / 1000 + (0.1 if sets.get("agents.sampling.planner.temperature") == "0.2" else 0)))
    out = Path("data/reports/eval/planner_coder_sft")
    out.mkdir(parents=True)
    rows = [{"task_id": f"t{i}", "n": 1, "c": int(i < n), "pass_at_1": float(i < n)} for i in range(10)]
    out.joinpath("composite_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = {"pass_at_1": n / 10, "coder_alone_pass_at_1": 0.3, "collaboration_gain": n / 10 - 0.3}
    out.joinpath("summary.json").write_text(json.dumps({"benchmarks": {"composite_dev": bench}}))
"""


def test_tune_planner_trains_once_per_sft_overrides_and_the_best_dev_planner_becomes_the_teams(tmp_path):
    mod = _module()
    variants = tmp_path / "planner.yaml"
    variants.write_text(
        "t0.2: {agents.sampling.planner.temperature: 0.2}\n"
        "s300: {sft.planner.max_steps: 300}\n"
        "s300_t0.2: [sft.planner.max_steps=300, agents.sampling.planner.temperature=0.2]\n"
        "s200: {sft.planner.max_steps: 200}\n"
    )
    work = tmp_path / "w"
    drv = mod.Driver(mod.parse_args(["--work", str(work), "--tune-planner", str(variants), "--profile", ""]))
    fake = tmp_path / "cli.py"
    fake.write_text(FAKE_CLI)
    drv.cli = [sys.executable, str(fake)]
    drv.params = lambda extra: None  # profile apply is not under test
    drv.out.mkdir(parents=True)
    (work / "params.yaml").write_text("{}\n")
    (work / "data/checkpoints/sft_planner").mkdir(parents=True)
    (work / "data/checkpoints/sft_planner/steps").write_text("100")  # the profile's own Planner
    drv.tune_planner()

    calls = Path(str(fake) + ".calls").read_text().splitlines()
    assert sorted(c for c in calls if " sft " in c) == ["s200 sft --role planner", "s300 sft --role planner"]
    assert len([c for c in calls if "evaluate" in c]) == 5
    rows = {r.split("\t")[0]: r.split("\t") for r in (drv.out / "tune_planner.tsv").read_text().splitlines()}
    # s300 at 0.2: 4 of 10 pass against the profile's 1; t0.2 uses the profile's Planner (2 of 10)
    assert rows["s300_t0.2"][3:6] == ["0.4000", "0.3000", "+0.1000"] and rows["t0.2"][3] == "0.2000"
    assert rows["s300_t0.2"][2] == "0.5000" and rows["profile"][6] == ""  # val loss of the shared training
    assert (drv.out / "planner_chosen.txt").read_text() == "s300_t0.2\n"
    assert drv.planner == ["sft.planner.max_steps=300", "agents.sampling.planner.temperature=0.2"]
    assert json.loads((work / mod.SFT_TEAM).read_text()) == drv.planner  # for a later --sft-from run
    # the chosen Planner is now the team's; the profile's own is kept beside it
    assert (work / "data/checkpoints/sft_planner/steps").read_text() == "300"
    assert (work / "data/checkpoints/sft_planner_profile/steps").read_text() == "100"
    mod.report(work, drv.out, [1], ["both"])
    assert (drv.out / "results.md").read_text().startswith("SFT team's Planner chosen on the dev split: **s300_t0.2**")


def test_tune_planner_refuses_a_variant_named_profile_and_sft_from(tmp_path):
    mod = _module()
    (tmp_path / "v.yaml").write_text("profile: {sft.planner.max_steps: 3}\n")
    drv = mod.Driver(mod.parse_args(["--work", str(tmp_path / "w"), "--tune-planner", str(tmp_path / "v.yaml")]))
    with pytest.raises(SystemExit, match="v.yaml: must map variant names"):
        drv.tune_planner()
    with pytest.raises(SystemExit):
        mod.parse_args(["--work", "w", "--tune-planner", "v.yaml", "--sft-from", "x"])
    assert not (tmp_path / "w").exists()


def test_choose_planner_without_a_scored_variant_names_the_table(tmp_path):
    mod = _module()
    rows = [{"variant": "profile", "pass_at_1": ""}, {"variant": "s3", "pass_at_1": ""}]
    with pytest.raises(SystemExit, match="tune_planner.tsv: no Planner variant was scored"):
        mod.choose_planner(rows, tmp_path / "tune_planner.tsv")


def test_sft_from_applies_the_planner_chosen_there(tmp_path):
    mod = _module()
    earlier = tmp_path / "earlier"
    for rel in mod.SFT_FROM:
        (earlier / rel).mkdir(parents=True)
    chosen = ["sft.planner.max_steps=1500", "agents.sampling.planner.temperature=0.2"]
    (earlier / mod.SFT_TEAM).write_text(json.dumps(chosen))
    work = tmp_path / "w"
    drv = mod.Driver(mod.parse_args(["--work", str(work), "--sft-from", str(earlier), "--profile", ""]))
    drv.cli = [sys.executable, "-c", "pass"]  # the sandbox self-test passes at once
    calls = []
    drv.params = calls.append  # what each `profile apply` would add
    drv.setup()
    assert drv.planner == chosen and calls[-1] == drv.isolation + chosen
    assert json.loads((work / mod.SFT_TEAM).read_text()) == chosen  # passed on to a run that starts from this one
    assert (work / "data/checkpoints/sft_planner").resolve() == (earlier / "data/checkpoints/sft_planner").resolve()


def _out_dir(tmp_path: Path, name: str, sft: list[float], runs: dict[str, list[float]]) -> Path:
    """A finished run of the script: its work directory's evaluation files and training logs, and its report."""
    mod = _module()
    work = tmp_path / name
    _scores(work / f"data/reports/eval/planner_coder_sft/{BENCH}.jsonl", sft)
    for run, passed in runs.items():
        _run(work, run, passed, [{"step": 1, "step_time_s": 2.0, "planner/plan_accuracy": 0.5}])
    seeds = sorted({int(r.rpartition("_s")[2]) for r in runs})
    (work / "out").mkdir()
    mod.report(work, work / "out", seeds, ["both", "coder"])
    return work / "out"


def test_pool_reports_the_seeds_of_several_out_directories_as_one_run_would(tmp_path):
    mod = _module()
    sft = [0.0] * 20 + [1.0] * 20
    a = _out_dir(tmp_path, "a", sft, {"both_s1": [1.0] * 30 + [0.0] * 10, "coder_s1": [1.0] * 20 + [0.0] * 20})
    b = _out_dir(tmp_path, "b", sft, {"both_s2": [1.0] * 26 + [0.0] * 14, "coder_s2": [1.0] * 22 + [0.0] * 18})
    # the same four runs in one work directory, for the report a single run would have given
    one = _out_dir(
        tmp_path,
        "one",
        sft,
        {
            "both_s1": [1.0] * 30 + [0.0] * 10,
            "coder_s1": [1.0] * 20 + [0.0] * 20,
            "both_s2": [1.0] * 26 + [0.0] * 14,
            "coder_s2": [1.0] * 22 + [0.0] * 18,
        },
    )
    mod.main(["--pool", str(a), str(b), "--out", str(tmp_path / "pooled")])
    pooled, single = (json.loads((d / "results.json").read_text()) for d in (tmp_path / "pooled", one))
    assert pooled["pairs"] == single["pairs"] and pooled["runs"] == single["runs"]  # the training logs come along
    assert pooled["pairs"]["both>coder"]["pooled"]["delta_points"] == 17.5  # (+25 + +10) / 2
    table = (tmp_path / "pooled/results.md").read_text()
    assert table.startswith(f"Pooled from: {a}, {b}") and "| pooled | both | coder | +17.50 |" in table


def test_pool_refuses_another_sft_team_or_a_run_given_twice_and_names_the_file(tmp_path):
    mod = _module()
    a = _out_dir(tmp_path, "a", [0.0, 1.0] * 10, {"both_s1": [1.0] * 20})
    other = _out_dir(tmp_path, "other", [1.0, 0.0] * 10, {"both_s2": [1.0] * 20})
    again = _out_dir(tmp_path, "again", [0.0, 1.0] * 10, {"both_s1": [0.0] * 20})
    with pytest.raises(SystemExit, match=f"{other / 'scores.json'}: its SFT team's per-problem scores differ"):
        mod.main(["--pool", str(a), str(other), "--out", str(tmp_path / "p1")])
    with pytest.raises(SystemExit, match=f"{again / 'scores.json'}: both_s1 is in an earlier directory too"):
        mod.main(["--pool", str(a), str(again), "--out", str(tmp_path / "p2")])
    with pytest.raises(SystemExit, match=f"{tmp_path / 'none' / 'scores.json'}: cannot read"):
        mod.main(["--pool", str(a), str(tmp_path / "none"), "--out", str(tmp_path / "p3")])
    assert not (tmp_path / "p1").exists() and not (tmp_path / "p2").exists()  # nothing written before the checks


def test_tune_only_stops_after_the_dev_choice_before_any_test_run(tmp_path, monkeypatch, capsys):
    mod = _module()
    steps = []
    monkeypatch.setattr(mod.Driver, "setup", lambda self: steps.append("setup"))
    monkeypatch.setattr(mod.Driver, "tune", lambda self: steps.append("tune"))
    monkeypatch.setattr(mod.Driver, "run_all", lambda self: steps.append("run_all"))
    monkeypatch.setattr(mod, "report", lambda *a: steps.append("report"))
    (tmp_path / "v.yaml").write_text("a: {}\n")
    mod.main(["--work", str(tmp_path / "w"), "--tune", str(tmp_path / "v.yaml"), "--tune-only"])
    assert steps == ["setup", "tune"]
    mod.main(["--work", str(tmp_path / "w"), "--tune", str(tmp_path / "v.yaml")])
    assert steps[2:] == ["setup", "tune", "run_all", "report"]
    with pytest.raises(SystemExit):
        mod.parse_args(["--work", "w", "--tune-only"])
    assert "--tune-only needs --tune" in capsys.readouterr().err


# A stand-in for `python -m corecode.cli` for the arms after the Coder: it records each call's run directory, its
# CUDA device and its overrides, and `grpo-team` writes the trained Coder half a second later (none for the Coder-only
# run of seed 2, which fails).
AFTER_CLI = r"""
import json, os, sys, time
from pathlib import Path
args = sys.argv[1:]
sets = dict(a.split("=", 1) for a in args if "=" in a)
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps([Path.cwd().name, args[0], os.environ.get("CUDA_VISIBLE_DEVICES"), sets]) + "\n")
if args[0] == "grpo-team":
    if Path.cwd().name == "coder_s2":
        sys.exit(1)
    time.sleep(0.5)
    Path("data/checkpoints/grpo_coder").mkdir(parents=True)
"""


def test_planner_after_starts_from_its_seeds_trained_coder_and_waits_for_it(tmp_path, monkeypatch):
    mod = _module()
    cli, calls = tmp_path / "cli.py", tmp_path / "calls.jsonl"
    cli.write_text(AFTER_CLI)
    monkeypatch.setenv("CALLS", str(calls))
    argv = ["--work", str(tmp_path / "w"), "--seeds", "1", "2", "--jobs", "8", "--gpus", "0", "1"]
    arm_set = ["--arm-set", "planner_after", "grpo.team.roles.coder.temperature=0.7"]
    args = mod.parse_args(argv + ["--arms", "planner_after", "coder", "ptx_planner_after"] + arm_set)
    drv = mod.Driver(args)
    drv.cli = [sys.executable, str(cli)]
    drv.out.mkdir(parents=True)
    (drv.work / "params.yaml").write_text("{}\n")
    drv.run_all()
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    trained = [(run, sets) for run, cmd, _, sets in rows if cmd == "grpo-team"]
    order = [run for run, _ in trained]
    coder = drv.work / "runs/coder_s1/data/checkpoints/grpo_coder"
    for arm in ("planner_after", "ptx_planner_after"):
        # after the same seed's Coder-only run, from its Coder, with the Coder frozen
        assert order.index(f"{arm}_s1") > order.index("coder_s1")
        sets = dict(trained)[f"{arm}_s1"]
        assert sets["grpo.team.coder_model"] == str(coder) and sets["grpo.team.frozen_roles"] == "[coder]"
        assert f"{arm}_s2" not in order  # seed 2's Coder failed: nothing to start from
    assert dict(trained)["ptx_planner_after_s1"]["grpo.team.rl_coef"] == "0.0"
    assert "grpo.team.coder_model" not in dict(trained)["coder_s1"]
    # --arm-set reaches its arm's training and no other's
    assert dict(trained)["planner_after_s1"]["grpo.team.roles.coder.temperature"] == "0.7"
    assert not any("grpo.team.roles.coder.temperature" in sets for run, sets in trained if run != "planner_after_s1")
    assert {gpu for _, _, gpu, _ in rows} == {"0", "1"}  # the commands take the devices in turn
    with pytest.raises(SystemExit):
        mod.parse_args(argv + ["--arms", "planner_after"])
    with pytest.raises(SystemExit):  # an arm that does not run
        mod.parse_args(argv + ["--arms", "coder"] + arm_set)
