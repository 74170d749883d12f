"""benchmarks/large_test_seeds.py: the make run's seed scored from its own checkpoints, every other seed trained first
(both stages, that seed only) and scored from its own, finished steps reused, and the pooled tables with the seeds as
the unit beside the problems."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from scipy.stats import ttest_1samp

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "large_test_seeds.py"
N = 40


def _module():
    spec = importlib.util.spec_from_file_location("large_test_seeds", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scores(reports: Path, team: str, passed: int) -> None:
    path = reports / f"eval/planner_coder_{team}/composite_test.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"task_id": f"t{i}", "n": 1, "c": int(i < passed), "pass_at_1": float(i < passed)} for i in range(N)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# Stand-ins for `corecode` and large_test.sh, each call appended to calls.jsonl. `grpo-team` writes its stage's two
# checkpoints holding the seed; the large test scores the SFT team 10 of 40, and the GRPO team and the control
# 10 + 2 x seed and 10 + seed of 40, the seed read off the checkpoints it was given (GRPO_FROM, or the make run's).
FAKE_CLI = r"""
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps(["cli", Path.cwd().name, args]) + "\n")
seed = args[args.index("--set") + 1].split("=")[1]
for role in ("planner", "coder"):
    d = Path("data/checkpoints") / (("ptx_" if "--ptx-control" in args else "grpo_") + role)
    d.mkdir(parents=True)
    (d / "seed").write_text(seed)
"""
FAKE_LARGE_TEST = r"""
import json, os, sys
from pathlib import Path
src, out = Path(os.environ.get("GRPO_FROM", os.getcwd())), Path(os.environ["W"])
with open(os.environ["CALLS"], "a") as f:
    f.write(json.dumps(["large_test", os.environ.get("GRPO_FROM"), sys.argv[1]]) + "\n")
seed = int((src / "data/checkpoints/grpo_coder/seed").read_text())
assert int((src / "data/checkpoints/ptx_coder/seed").read_text()) == seed
for team, passed in (("sft", 10), ("grpo", 10 + 2 * seed), ("ptx", 10 + seed)):
    path = out / f"data/reports/eval/planner_coder_{team}/composite_test.jsonl"
    path.parent.mkdir(parents=True)
    rows = [{"task_id": f"t{i}", "pass_at_1": float(i < passed)} for i in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
"""


def _make_run(root: Path) -> None:
    root.mkdir()
    (root / "params.yaml").write_text("seed: 1\n")
    for rel in ("data/processed", "data/reports/train", "data/checkpoints/sft_planner", "data/checkpoints/sft_coder"):
        (root / rel).mkdir(parents=True)
    for name in ("grpo_planner", "grpo_coder", "ptx_planner", "ptx_coder"):
        (root / "data/checkpoints" / name).mkdir()
        (root / "data/checkpoints" / name / "seed").write_text("1")


def test_other_seeds_are_trained_then_every_seed_scored_and_pooled(tmp_path, monkeypatch):
    mod = _module()
    root, calls = tmp_path / "run", tmp_path / "calls.jsonl"
    _make_run(root)
    (tmp_path / "cli.py").write_text(FAKE_CLI)
    (tmp_path / "lt.py").write_text(FAKE_LARGE_TEST)
    monkeypatch.setenv("CALLS", str(calls))
    monkeypatch.chdir(root)
    argv = ["--seeds", "1", "2", "3", "--work", str(tmp_path / "w"), "--n", "40"]
    argv += ["--cli", f"{sys.executable} {tmp_path / 'cli.py'}"]
    argv += ["--large-test", f"{sys.executable} {tmp_path / 'lt.py'}"]
    table = mod.main_table(argv)
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    trained = [(d, a[a.index("--set") + 1], "--ptx-control" in a) for kind, d, a in rows if kind == "cli"]
    # the make run's seed (1) is not trained again; seeds 2 and 3 train both stages, each at its own seed
    assert sorted(trained) == [("train_s2", "seed=2", False), ("train_s2", "seed=2", True),
                               ("train_s3", "seed=3", False), ("train_s3", "seed=3", True)]  # fmt: skip
    scored = [(r[1], r[2]) for r in rows if r[0] == "large_test"]
    assert scored == [(None, "40"), (str(tmp_path / "w/train_s2"), "40"), (str(tmp_path / "w/train_s3"), "40")]
    # per seed: grpo > sft by 2 x seed of 40 problems (5, 10, 15 points); the t-test is scipy's over those deltas
    assert "| grpo | 30.00 | 35.00 | 40.00 |" in table and "+5.00" in table and "+15.00" in table
    p = ttest_1samp([5.0, 10.0, 15.0], 0, alternative="greater").pvalue
    grpo_sft = next(line for line in table.splitlines() if line.startswith("| grpo > sft |"))
    assert grpo_sft.endswith(f"| +10.00 (2.89; {p:.3f}) |")
    assert (tmp_path / "w/large_test_seeds.md").read_text() == table

    # a second call reuses every finished step: nothing is trained or scored again
    calls.unlink()
    assert mod.main_table(argv) == table and not calls.exists()


def test_a_failed_step_names_its_log_and_keeps_what_is_done(tmp_path, monkeypatch):
    mod = _module()
    root = tmp_path / "run"
    _make_run(root)
    (tmp_path / "lt.py").write_text(FAKE_LARGE_TEST)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls.jsonl"))
    monkeypatch.chdir(root)
    argv = ["--seeds", "1", "2", "--work", str(tmp_path / "w"), "--cli", f"{sys.executable} -c 'raise SystemExit(3)'"]
    argv += ["--large-test", f"{sys.executable} {tmp_path / 'lt.py'}"]
    with pytest.raises(SystemExit, match=r"train_grpo_s2 failed \(exit 3\): .*train_grpo_s2.log"):
        mod.main_table(argv)
    assert (tmp_path / "w/test_s1/data/reports/eval/planner_coder_grpo/composite_test.jsonl").is_file()


def test_bad_input_is_named(tmp_path, monkeypatch, capsys):
    mod = _module()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="data/checkpoints/sft_planner.*finished make run"):
        mod.main_table(["--seeds", "0", "--work", str(tmp_path / "w")])
    for argv in (["--seeds", "0", "0"], [], ["d", "--seeds", "0"]):
        with pytest.raises(SystemExit):
            mod.parse_args(argv)
    assert "names a seed twice" in capsys.readouterr().err
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        for team in ("sft", "grpo", "ptx"):
            _scores(d, team, 10)
    (b / "eval/planner_coder_ptx/composite_test.jsonl").write_text('{"task_id": "x", "pass_at_1": 1.0}\n')
    with pytest.raises(SystemExit, match=f"{b}: its ptx team scored other problems"):
        mod.pool([a, b])
    with pytest.raises(SystemExit, match="c/eval/planner_coder_sft/composite_test.jsonl: missing"):
        mod.pool([tmp_path / "c"])
