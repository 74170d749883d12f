"""The large clean test over several seeds of the team's GRPO stage and its ptx-only control, from a finished `make
run`: each seed's teams scored by `benchmarks/large_test.sh` on the same 3000 problems, then paired bootstraps per seed
and pooled, and a t-test with the seeds as the unit (docs/benchmarks.md, "Team GRPO: the embedded default's recipe").

Run from the repo root after `make run`:

    python benchmarks/large_test_seeds.py --seeds 0 1 2 3 4 --work /tmp/lts

The make run's own seed (params.yaml `seed`) is scored with the make run's checkpoints. Every other seed first trains
the same two stages from the make run's SFT team in `<work>/train_s<seed>` (`corecode grpo-team` and `grpo-team
--ptx-control` with `--set seed=<seed>`, nothing else changed), then is scored from those checkpoints
(`GRPO_FROM=<work>/train_s<seed> bash benchmarks/large_test.sh`, output under `<work>/test_s<seed>`). A step whose
output is already there is skipped, so an interrupted run picks up where it stopped. CPU: about 3 minutes a seed to
train (both stages) and 4-7 to score. The tables go to stdout and `<work>/large_test_seeds.md`.

Given directories instead of `--seeds`, it only pools: each is a large_test.sh output's `data/reports`, one a seed.

    python benchmarks/large_test_seeds.py /tmp/lt0/data/reports /tmp/lt1/data/reports /tmp/lt2/data/reports

Each directory holds `eval/planner_coder_{sft,grpo,ptx}/composite_test.jsonl` for the same problems. Problem-runs are
keyed seed:task_id and each directory's SFT evaluation stands for its seed, as notebooks/rl_longer_dev.py pools dev;
the pooled bootstrap resamples problems with the seeds fixed, so the per-seed deltas and the across-seed t-test (one
sided, on the per-seed deltas) are printed beside it. `--other DIR ...` (one a seed, the same seeds in the same order):
another GRPO recipe's large-test directories, whose `planner_coder_grpo` is compared as `other` with this one's teams.

Written by hand: the per-seed runs are `benchmarks/large_test.sh` and the pipeline's own training commands; what is
here is their order, the reuse of finished steps and the pooling, which no library does for these files.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corecode.data.io import read_jsonl  # noqa: E402
from corecode.evaluation.stats import paired_bootstrap  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TEAMS = ("sft", "grpo", "ptx")
PAIRS = (("grpo", "sft"), ("grpo", "ptx"), ("ptx", "sft"))
# What a seed's training takes from the make run: its params, problems and SFT team.
SFT_TEAM = ("sft_planner", "sft_coder")
# A stage's command and the checkpoints it writes (params.yaml grpo.team: *_output, ptx_control).
STAGES = {"grpo": ([], ("grpo_planner", "grpo_coder")), "ptx": (["--ptx-control"], ("ptx_planner", "ptx_coder"))}
TEST_EVAL = "eval/planner_coder_{team}/composite_test.jsonl"  # under a large_test.sh output's data/reports


def read_team(reports: Path, team: str) -> dict[str, float]:
    """pass@1 by task id of one team's large-test evaluation."""
    path = reports / TEST_EVAL.format(team=team)
    if not path.is_file():
        raise SystemExit(f"{path}: missing (run benchmarks/large_test.sh with that team's checkpoints)")
    return {r["task_id"]: r["pass_at_1"] for r in read_jsonl(path)}


def seeds_ttest(deltas: list[float]) -> tuple[float, float] | None:
    """Standard error and one-sided p (mean > 0, scipy's one-sample t-test) of per-seed deltas, the seeds as the unit;
    None under two seeds. Equal deltas have no t statistic: p is then 0 or 1 by their sign."""
    from scipy.stats import ttest_1samp

    if len(deltas) < 2:
        return None
    se = statistics.stdev(deltas) / len(deltas) ** 0.5
    if se == 0:
        return 0.0, 0.0 if statistics.fmean(deltas) > 0 else 1.0
    return se, float(ttest_1samp(deltas, 0.0, alternative="greater").pvalue)


def pool(reports: list[Path], other: list[Path] = (), names: list[str] | None = None) -> str:
    """The per-seed and pooled tables (markdown) of large_test.sh outputs, one a seed (module doc)."""
    if other and len(other) != len(reports):
        raise SystemExit(f"--other: {len(other)} directories for {len(reports)} seeds")
    names = names or [f"dir {i}" for i in range(len(reports))]
    runs = {t: [read_team(d, t) for d in reports] for t in TEAMS}
    pairs = PAIRS
    if other:
        runs["other"] = [read_team(d, "grpo") for d in other]
        pairs += (("other", "grpo"), ("other", "ptx"), ("other", "sft"))
    ids = set(runs["sft"][0])
    for t in runs:
        for d, r in zip(other if t == "other" else reports, runs[t]):
            if set(r) != ids:
                raise SystemExit(f"{d}: its {t} team scored other problems than {reports[0]}")

    def pooled(team: str) -> dict[str, float]:
        return {f"{s}:{t}": v for s, r in enumerate(runs[team]) for t, v in r.items()}

    lines = ["| team | " + " | ".join(names) + " |", "|---|" + "---:|" * len(reports)]
    for t in runs:
        lines.append(f"| {t} | " + " | ".join(f"{100 * sum(r.values()) / len(r):.2f}" for r in runs[t]) + " |")
    lines += ["", "| a > b | per seed, points (p) | pooled (95% CI; p) | across seeds: mean (SE; t-test p) |"]
    lines.append("|---|---|---|---|")
    for a, b in pairs:
        per = [paired_bootstrap(ra, rb, alternative="greater") for ra, rb in zip(runs[a], runs[b])]
        pa, pb = pooled(a), pooled(b)
        one, two = paired_bootstrap(pa, pb, alternative="greater"), paired_bootstrap(pa, pb)
        seeds = "; ".join(f"{100 * r.delta:+.2f} ({r.p_value:.4f})" for r in per)
        deltas = [100 * r.delta for r in per]
        tt = seeds_ttest(deltas)
        across = f"{statistics.fmean(deltas):+.2f} ({tt[0]:.2f}; {tt[1]:.3f})" if tt else ""
        lines.append(f"| {a} > {b} | {seeds} | {100 * one.delta:+.2f} ({100 * two.ci_low:+.2f} to "
                     f"{100 * two.ci_high:+.2f}; {one.p_value:.4f}) | {across} |")  # fmt: skip
    return "\n".join(lines) + "\n"


class SeedRuns:
    """Train the seeds the make run does not have, score every seed on the large test, pool (module doc)."""

    def __init__(self, args):
        self.args, self.root, self.work = args, Path.cwd().resolve(), args.work.resolve()
        self.cli = shlex.split(args.cli)
        self.large_test = shlex.split(args.large_test)

    def make_run_seed(self) -> int:
        import yaml

        path = self.root / "params.yaml"
        try:
            return int(yaml.safe_load(path.read_text())["seed"])
        except (OSError, KeyError, TypeError, ValueError) as e:
            raise SystemExit(f"{path}: no integer 'seed' ({e!r}); run this from a make run's directory") from e

    def check_make_run(self) -> None:
        need = [f"data/checkpoints/{c}" for c in SFT_TEAM + STAGES["grpo"][1] + STAGES["ptx"][1]]
        need += ["data/processed", "data/reports/train"]
        missing = [p for p in need if not (self.root / p).exists()]
        if missing:
            raise SystemExit(f"{self.root}: no {', '.join(missing)}: run this from a finished make run's directory")

    def run(self, name: str, cmd: list[str], cwd: Path, env: dict | None = None) -> None:
        """One command, its output to <work>/<name>.log; a failure stops the run and names the log."""
        log = self.work / f"{name}.log"
        print(f"{name}: {' '.join(cmd)}", flush=True)
        with open(log, "w") as f:
            rc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
        if rc:
            raise SystemExit(f"{name} failed (exit {rc}): {log}")

    def train(self, seed: int) -> Path:
        """The GRPO stage and its ptx-only control at this seed, from the make run's SFT team; their directory."""
        d = self.work / f"train_s{seed}"
        (d / "data/checkpoints").mkdir(parents=True, exist_ok=True)
        shutil.copy(self.root / "params.yaml", d / "params.yaml")
        for rel in ["data/processed"] + [f"data/checkpoints/{c}" for c in SFT_TEAM]:
            if not os.path.lexists(d / rel):
                (d / rel).symlink_to(self.root / rel)
        for stage, (flags, outputs) in STAGES.items():
            if all((d / "data/checkpoints" / o).is_dir() for o in outputs):
                continue  # trained by an earlier call
            sets = ["--set", f"seed={seed}", "--set", "tracking.enabled=false"]
            self.run(f"train_{stage}_s{seed}", self.cli + ["grpo-team", *flags, *sets], d)
        return d

    def score(self, seed: int, source: Path | None) -> Path:
        """large_test.sh on this seed's checkpoints (the make run's where source is None); its data/reports."""
        out = self.work / f"test_s{seed}"
        reports = out / "data/reports"
        if not all((reports / TEST_EVAL.format(team=t)).is_file() for t in TEAMS):
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            env = dict(os.environ, W=str(out))
            if source is not None:
                env["GRPO_FROM"] = str(source)
            self.run(f"test_s{seed}", self.large_test + [str(self.args.n)], self.root, env)
        return reports

    def main(self) -> str:
        self.check_make_run()
        self.work.mkdir(parents=True, exist_ok=True)
        own = self.make_run_seed()
        reports = [self.score(s, None if s == own else self.train(s)) for s in self.args.seeds]
        names = [f"seed {s}" + (" (the make run's)" if s == own else "") for s in self.args.seeds]
        table = pool(reports, names=names)
        (self.work / "large_test_seeds.md").write_text(table)
        return table


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", type=Path, nargs="*", help="large_test.sh outputs' data/reports, one a seed (pool only)")
    ap.add_argument("--other", type=Path, nargs="+", default=[], help="another recipe's, the same seeds (pool only)")
    ap.add_argument("--seeds", type=int, nargs="+", help="Train (where needed), score and pool these seeds.")
    ap.add_argument("--work", type=Path, default=Path("data/large_test_seeds"), help="Scratch root (with --seeds).")
    ap.add_argument("--n", type=int, default=3000, help="Test problems (large_test.sh's N; default 3000).")
    cli = f"{shlex.quote(sys.executable)} -m corecode.cli --pipeline-outputs"
    ap.add_argument("--cli", default=cli, help="How to call corecode (default: this interpreter's).")
    ap.add_argument("--large-test", default=f"bash {REPO / 'benchmarks/large_test.sh'}", help="How to call it.")
    args = ap.parse_args(argv)
    if bool(args.seeds) == bool(args.reports):
        ap.error("give either --seeds (train, score and pool) or large_test.sh output directories (pool only)")
    if args.seeds and args.other:
        ap.error("--other pools given directories; it does not go with --seeds")
    if args.seeds and len(set(args.seeds)) != len(args.seeds):
        ap.error(f"--seeds: {args.seeds} names a seed twice")
    return args


def main_table(argv=None) -> str:
    args = parse_args(argv)
    return SeedRuns(args).main() if args.seeds else pool(args.reports, args.other)


def main(argv=None) -> None:
    print(main_table(argv), end="")


if __name__ == "__main__":
    main()
