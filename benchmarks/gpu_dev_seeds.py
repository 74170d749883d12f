"""Both-roles team GRPO against Coder-only team GRPO and their ptx-only controls, several seeds, one SFT team, scored on
the build's own test split: issue 18's GPU check (docs/benchmarks.md, "GPU profile", "Both roles against the Coder only
...").

In a work directory: the profile's params (`corecode profile apply`) with the test split enlarged to `--n-test`
problems, build-data, init-model, the SFT of both roles (at once), the SFT team's evaluation; then for every seed four
team-GRPO runs from that SFT team, each in its own directory beside the shared data and SFT checkpoints:

- `both`: both roles trained (`grpo.team.frozen_roles: []`);
- `coder`: the Coder only (`frozen_roles: [planner]`), the same rollouts a step;
- `ptx_both`, `ptx_coder`: the same two with the RL term zeroed (`rl_coef: 0`, the pipeline's ptx-only control).

Two more arms, asked for by name (`--arms`), train both roles in CoRe-Code's order: the Coder first, then the Planner
against that trained Coder. Each starts once the same seed's `coder` run has saved its Coder, from the SFT Planner
and that Coder, frozen (`grpo.team.coder_model`: that run's `grpo_coder`, `frozen_roles: [coder]`):

- `planner_after`: the Planner's stage, the same length and rollouts as the Coder's;
- `ptx_planner_after`: that stage with the RL term zeroed, its ptx-only control.

`--arm-set ARM KEY=VALUE` gives one arm's training an override of its own (the frozen Coder's rollout temperature in
the Planner's stage, say), in the dev-split runs of `--tune` too.

With `--tune VARIANTS.yaml` the recipe is first chosen on the build's dev split: every variant (a name and its `--set`
overrides, the format of `notebooks/sweep.py --variants`) is trained from the SFT team as `both` and as `coder`, or
only as the arm `--tune-arm` names, once per seed of `--tune-seed`, and scored on `composite_dev` by
`notebooks/sweep.py`. The variant whose `both` runs (or `--tune-arm`'s) have the highest mean dev pass@1 becomes the
recipe of every arm and seed; the test split is read only after that choice. The dev table and the choice go to
`<out>/tune.tsv` and into the report; with `--tune-only` the script stops there, before any test-split run.

A recipe without a ptx term (`grpo.team.ptx_coef: 0`) has no ptx-only control: its `rl_coef: 0` run would update
nothing, so it is the SFT team. The ptx arms are then not run, and the report says that `sft` is their control.

With `--tune-planner VARIANTS.yaml`, before that, the SFT team's Planner is chosen on the dev split: a variant's
`sft.*` overrides retrain the Planner from the base checkpoint (`corecode sft --role planner`; variants with the same
`sft.*` overrides share one training), its other overrides (the Planner's sampling, say) apply to its evaluation. Every
variant, and the profile's own Planner (`profile`), is scored as a team with the one SFT Coder on `composite_dev`, with
the Coder alone beside it (its Collaboration Gain). The variant with the highest dev pass@1 (the Coder is the same in
every row, so also the highest Collaboration Gain) gives the SFT team of every later step: its Planner replaces the
profile's and its overrides join every command. The table goes to `<out>/tune_planner.tsv` and into the report, the
overrides to `<work>/sft_team_overrides.json`, which a later run with `--sft-from <work>` applies too.

Every team is evaluated on the same test problems, one sample each, with the same sampling seed (common random numbers),
and compared per seed and pooled over seeds by one-sided paired bootstraps
(`corecode.evaluation.stats.paired_bootstrap`). The recipe (`--set` overrides; the defaults are the embedded default's
dev-split recipe) is to be fixed before the run: reading the test split is then a final report, and a recipe chosen
after reading these numbers is reported as such. Writes `<out>/results.md` (tables), `<out>/results.json`,
`<out>/scores.json` (every team's per-problem pass@1), `<out>/steps.tsv` (every command's return code and seconds) and
keeps every log under the work directory.

`--pool OUT [OUT ...]` runs nothing: it pools the seeds of earlier runs' `out` directories (seeds run on different
machines, say) into one report under `--out`, from their `scores.json` and `results.json`. Their SFT teams' per-problem
scores must be equal (the same build and SFT team, as a rebuilt gpu-dev profile gives), and each run may come once.

    python3 benchmarks/gpu_dev_seeds.py --work /tmp/seeds --out /tmp/seeds/out --seeds 1 2 3 --jobs 4
    python3 benchmarks/gpu_dev_seeds.py --work /tmp/tuned --tune benchmarks/gpu_dev_variants.yaml --jobs 8 \
        --set data.composite.n_dev=1500
    python3 benchmarks/gpu_dev_seeds.py --pool /tmp/a/out /tmp/b/out --out /tmp/pooled
    python3 benchmarks/gpu_dev_seeds.py --work /tmp/pa --arms coder ptx_coder planner_after ptx_planner_after \
        --seeds 0 1 2 --jobs 8 --gpus 0 1 --set data.composite.n_dev=1500 --set grpo.team.learning_rate=2e-05
    python3 benchmarks/gpu_dev_seeds.py --work /tmp/tp --tune-planner benchmarks/gpu_dev_planner_variants.yaml \
        --tune benchmarks/gpu_dev_variants.yaml --jobs 12 --set data.composite.n_dev=1500

Written by hand: the run directories, the job pool and the report are what `notebooks/sweep.py` does for dev-split
sweeps, which refuses a test split on purpose.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = "composite_test"
DEV = "composite_dev"
# The evaluation of a --tune-planner variant: the SFT team and the Coder alone on the dev split.
PLANNER_DEV = [f"evaluate.benchmarks=[{DEV}]", "evaluate.collaboration_gain=true",
               f"evaluate.collaboration_gain_benchmarks=[{DEV}]"]  # fmt: skip
PROFILE = "profile"  # the --tune-planner row of the profile's own Planner
SFT_TEAM = "sft_team_overrides.json"  # in a work directory: the overrides of its SFT team's Planner (--tune-planner)
ARMS = {
    "both": ["grpo.team.frozen_roles=[]"],
    "coder": ["grpo.team.frozen_roles=[planner]"],
    "ptx_both": ["grpo.team.frozen_roles=[]", "grpo.team.rl_coef=0.0"],
    "ptx_coder": ["grpo.team.frozen_roles=[planner]", "grpo.team.rl_coef=0.0"],
    "planner_after": ["grpo.team.frozen_roles=[coder]"],
    "ptx_planner_after": ["grpo.team.frozen_roles=[coder]", "grpo.team.rl_coef=0.0"],
}
DEFAULT_ARMS = ["both", "coder", "ptx_both", "ptx_coder"]
PTX_ARMS = {arm for arm, sets in ARMS.items() if "grpo.team.rl_coef=0.0" in sets}  # the ptx-only controls
# Arms that start from the same seed's `coder` run's trained Coder (module doc).
AFTER_CODER = {"planner_after", "ptx_planner_after"}
# (a, b): is a better than b?  The order: both-roles > Coder-only > ptx-only.
PAIRS = [
    ("both", "coder"),
    ("coder", "ptx_coder"),
    ("both", "ptx_both"),
    ("planner_after", "coder"),
    ("planner_after", "ptx_planner_after"),
    ("both", "sft"),
    ("coder", "sft"),
    ("ptx_coder", "sft"),
    ("ptx_both", "sft"),
    ("planner_after", "sft"),
    ("ptx_planner_after", "sft"),
]
# The embedded default's recipe (params.yaml grpo.team, tuned on the dev split on the CPU) at the profile's group shape.
RECIPE = [
    "grpo.team.learning_rate=0.0002",
    "grpo.team.ptx_coef=2.0",
    "grpo.team.temperature=0.7",
    "grpo.team.max_steps=100",
    "grpo.team.problems_per_step=8",
    "grpo.team.num_plans=4",
    "grpo.team.num_programs=4",
    "grpo.team.save_steps=1000",
    "grpo.team.eval_steps=25",
    "grpo.team.eval_problems=32",
]
# What --sft-from links from the earlier work directory.
SFT_FROM = ("data/processed", "data/checkpoints/sft_planner", "data/checkpoints/sft_coder",
            "data/reports/eval/planner_coder_sft")  # fmt: skip
PLANNER_KEYS = [
    "planner/plan_accuracy",
    "planner/sample_entropy",
    "planner/zero_std_frac",
    "coder/zero_std_frac",
    "pass_rate/coder",
]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, help="Work directory (created); required unless --pool.")
    ap.add_argument("--out", type=Path, help="Where the tables go (default <work>/out).")
    ap.add_argument("--profile", default="gpu-dev", help="Profile to apply to params.yaml ('' = params.yaml as is).")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--arms", nargs="+", default=DEFAULT_ARMS, choices=list(ARMS), help=f"default {DEFAULT_ARMS}")
    ap.add_argument("--n-test", type=int, default=3000, help="Test problems of the build (default 3000).")
    ap.add_argument("--jobs", type=int, default=4, help="Runs at once (default 4).")
    ap.add_argument("--sandbox-workers", type=int, default=3, help="sandbox.workers of every command (default 3).")
    ap.add_argument(
        "--gpus", nargs="+", metavar="ID", help="CUDA devices the commands take in turn (default: all on the first)."
    )
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override for every command, after the recipe; repeatable.",
    )
    ap.add_argument(
        "--arm-set",
        dest="arm_sets",
        nargs=2,
        action="append",
        default=[],
        metavar=("ARM", "KEY=VALUE"),
        help="Override for one arm's training only, after --set; repeatable.",
    )
    ap.add_argument("--sft-from", type=Path, help="Reuse this earlier work directory's data and SFT team.")
    ap.add_argument("--deadline", type=float, default=0, help="Seconds after which no run starts (0: none).")
    ap.add_argument("--tune", type=Path, help="Variants file: choose the recipe on the dev split first (see above).")
    ap.add_argument(
        "--tune-seed", type=int, nargs="+", default=[0], help="Training seeds of the dev-split runs (default 0)."
    )
    ap.add_argument(
        "--tune-arm",
        choices=["both", "coder"],
        help="Train and choose the dev-split variants by this arm only (default: train both and coder, choose by both)",
    )
    ap.add_argument(
        "--tune-only", action="store_true", help="Stop after the dev-split choice of --tune: no test-split run."
    )
    ap.add_argument(
        "--tune-planner", type=Path, help="Variants file: choose the SFT team's Planner on the dev split first (above)."
    )
    ap.add_argument("--pool", type=Path, nargs="+", metavar="OUT", help="Pool earlier runs' out directories (above).")
    args = ap.parse_args(argv)
    if args.pool and not args.out:
        ap.error("--pool needs --out, the directory the pooled report goes to")
    if not args.pool and not args.work:
        ap.error("--work is required (unless --pool)")
    if AFTER_CODER & set(args.arms) and "coder" not in args.arms:
        ap.error("--arms planner_after / ptx_planner_after need the coder arm: they start from its trained Coder")
    for arm, kv in args.arm_sets:
        if arm not in args.arms or "=" not in kv:
            ap.error(f"--arm-set {arm} {kv}: needs an arm of --arms ({' '.join(args.arms)}) and a KEY=VALUE")
    if args.tune_arm and not args.tune:
        ap.error("--tune-arm needs --tune, the variants to choose among on the dev split")
    if args.tune_only and not args.tune:
        ap.error("--tune-only needs --tune, the variants to choose among on the dev split")
    if args.tune_planner and args.sft_from:
        ap.error("--tune-planner trains Planners from this work directory's own build; it cannot take --sft-from")
    return args


class Driver:
    def __init__(self, args):
        self.args, self.t0 = args, time.time()
        self.work = args.work.resolve()
        self.out = (args.out or args.work / "out").resolve()
        self.lock = threading.Lock()
        self.cli = [sys.executable, "-m", "corecode.cli", "--pipeline-outputs"]
        self.isolation: list[str] = []  # sandbox.isolation=<the first that passes its self-test>
        self.recipe: list[str] = []  # the overrides chosen by tune()
        self.planner: list[str] = []  # the overrides chosen by tune_planner()
        self.gpus = itertools.cycle(args.gpus) if args.gpus else None
        self.coder_done = {s: threading.Event() for s in args.seeds}  # the AFTER_CODER arms wait for these
        self.ran_arms = list(args.arms)  # run_all's arms: --arms less the ptx arms of a recipe without ptx

    def execute(self, name: str, cmd: list[str], cwd: Path) -> int:
        """Run one command in cwd (output to cwd/<name>.log); one line to steps.tsv."""
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            TOKENIZERS_PARALLELISM="false",
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        )
        env.setdefault("OMP_NUM_THREADS", "2")
        if self.gpus:
            with self.lock:
                env["CUDA_VISIBLE_DEVICES"] = next(self.gpus)
        t = time.time()
        with open(cwd / f"{name}.log", "w") as log:
            rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        line = f"{name}\t{cwd.name}\t{rc}\t{time.time() - t:.1f}\t{time.time() - self.t0:.0f}"
        with self.lock, open(self.out / "steps.tsv", "a") as f:
            f.write(line + "\n")
        print(line, flush=True)
        return rc

    def corecode(self, name: str, cwd: Path, *args: str, sets: list[str] = ()) -> int:
        return self.execute(name, self.cli + list(args) + [x for kv in sets for x in ("--set", kv)], cwd)

    def params(self, extra: list[str]) -> None:
        a = self.args
        sets = [
            f"data.composite.n_test={a.n_test}",
            f"evaluate.benchmarks=[{BENCH}]",
            "evaluate.n_samples=1",
            "evaluate.ks=[1]",
            "evaluate.collaboration_gain=false",
            "tracking.enabled=false",
            f"sandbox.workers={a.sandbox_workers}",
            *RECIPE,
            *a.sets,
            *extra,
        ]
        profile = str(REPO / "configs/profiles" / f"{a.profile}.yaml") if a.profile else str(self.work / "none.yaml")
        if not a.profile:  # params.yaml as it is
            Path(profile).write_text("{}\n")
        cmd = ["profile", "apply", profile, "-o", "params.yaml", "--base", str(REPO / "params.yaml")]
        if self.corecode("params", self.work, *cmd, sets=sets):
            sys.exit(f"corecode profile apply failed: {self.work / 'params.log'}")

    def pick_isolation(self) -> list[str]:
        """The first sandbox isolation whose self-test passes (bubblewrap is often absent on GPU hosts)."""
        for iso in ("bwrap", "unshare", "none"):
            if not self.corecode(f"selftest_{iso}", self.work, "sandbox-selftest", "--isolation", iso):
                return [f"sandbox.isolation={iso}"]
        sys.exit("no sandbox isolation passed its self-test")

    def setup(self) -> None:
        if self.args.sft_from and (missing := [r for r in SFT_FROM if not (self.args.sft_from / r).is_dir()]):
            sys.exit(f"--sft-from {self.args.sft_from}: no {', '.join(missing)} (not a finished run of this script)")
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        if self.args.sft_from and (self.args.sft_from / SFT_TEAM).is_file():  # the Planner chosen there is the team
            self.planner = json.loads((self.args.sft_from / SFT_TEAM).read_text())
            (self.work / SFT_TEAM).write_text(json.dumps(self.planner) + "\n")
        self.params([])
        self.isolation = self.pick_isolation()
        self.params(self.isolation + self.planner)
        if self.args.sft_from:  # another work directory's data, SFT team and its evaluation
            src = self.args.sft_from.resolve()
            for rel in SFT_FROM:
                (self.work / rel).parent.mkdir(parents=True, exist_ok=True)
                if not (self.work / rel).exists():
                    (self.work / rel).symlink_to(src / rel)
            return
        for stage in (["build-data"], ["init-model"]):
            if self.corecode(stage[0], self.work, *stage):
                sys.exit(f"{stage[0]} failed: {self.work / (stage[0] + '.log')}")
        with ThreadPoolExecutor(2) as pool:
            rcs = list(
                pool.map(lambda r: self.corecode(f"sft_{r}", self.work, "sft", "--role", r), ["planner", "coder"])
            )
        if any(rcs):
            sys.exit(f"SFT failed: {self.work}/sft_*.log")

    def scratch_dir(self, d: Path, links: tuple[str, ...]) -> Path:
        """d with the work directory's params.yaml copied in and ``links`` (paths under it) linked."""
        (d / "data/checkpoints").mkdir(parents=True, exist_ok=True)
        shutil.copy(self.work / "params.yaml", d / "params.yaml")
        for rel in links:
            if not os.path.lexists(d / rel):
                (d / rel).symlink_to(self.work / rel)
        return d

    def planner_dir(self, name: str) -> Path:
        """A --tune-planner variant's directory: the build's data, base checkpoint and SFT Coder, linked."""
        links = ("data/processed", "data/checkpoints/base", "data/checkpoints/sft_coder")
        return self.scratch_dir(self.work / "tune_planner" / name, links)

    def planner_group(self, train_sets: tuple[str, ...], names: list[str], variants: dict[str, list[str]]) -> None:
        """Train one Planner (or link the profile's where train_sets is empty), then evaluate each variant using it."""
        first = self.planner_dir(names[0]) / "data/checkpoints/sft_planner"
        if not train_sets:
            first.symlink_to(self.work / "data/checkpoints/sft_planner")
        elif self.corecode("sft_planner", first.parents[2], "sft", "--role", "planner", sets=list(train_sets)):
            return

        def evaluate(name: str) -> None:
            d = self.planner_dir(name)
            if not os.path.lexists(d / "data/checkpoints/sft_planner"):
                (d / "data/checkpoints/sft_planner").symlink_to(first)
            self.corecode("eval_dev", d, "evaluate", "--method", "planner_coder_sft", sets=PLANNER_DEV + variants[name])

        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(evaluate, names))

    def tune_planner(self) -> None:
        """Choose the SFT team's Planner on the dev split (module doc); it and its overrides are used from here on."""
        import yaml

        path = self.args.tune_planner
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict) or PROFILE in loaded:
            sys.exit(f"{path}: must map variant names (not {PROFILE!r}, the profile's own row) to overrides")
        variants = {PROFILE: []} | {str(n): tune_overrides(path, n, spec) for n, spec in loaded.items()}
        groups: dict[tuple[str, ...], list[str]] = {}
        for name, sets in variants.items():
            groups.setdefault(tuple(kv for kv in sets if kv.startswith("sft.")), []).append(name)
        with ThreadPoolExecutor(self.args.jobs) as pool:
            list(pool.map(lambda key: self.planner_group(key, groups[key], variants), groups))
        rows = planner_rows(self.work / "tune_planner", variants)
        write_planner_table(rows, self.out / "tune_planner.tsv")
        chosen = choose_planner(rows, self.out / "tune_planner.tsv")
        (self.out / "planner_chosen.txt").write_text(chosen + "\n")
        print(f"Planner chosen on the dev split: {chosen}", flush=True)
        self.planner = variants[chosen]
        if any(kv.startswith("sft.") for kv in self.planner):  # its Planner becomes the SFT team's
            ckpt = self.work / "data/checkpoints/sft_planner"
            ckpt.rename(ckpt.with_name(f"sft_planner_{PROFILE}"))
            ckpt.symlink_to((self.work / "tune_planner" / chosen / "data/checkpoints/sft_planner").resolve())
        (self.work / SFT_TEAM).write_text(json.dumps(self.planner) + "\n")
        self.params(self.isolation + self.planner)

    def run_dir(self, run: str) -> Path:
        links = ("data/processed", "data/checkpoints/sft_planner", "data/checkpoints/sft_coder")
        return self.scratch_dir(self.work / "runs" / run, links)

    def arm_overrides(self, arm: str) -> list[str]:
        """What makes a run this arm: its ARMS entry, then its --arm-set overrides."""
        return ARMS[arm] + [kv for a, kv in self.args.arm_sets if a == arm]

    def train_and_eval(self, arm: str, seed: int) -> None:
        try:
            self._train_and_eval(arm, seed)
        finally:
            if arm == "coder":  # failed or skipped too: the arms after it do not wait for ever
                self.coder_done[seed].set()

    def _train_and_eval(self, arm: str, seed: int) -> None:
        sets = self.arm_overrides(arm) + [f"seed={seed}"]
        if arm in AFTER_CODER:
            self.coder_done[seed].wait()
            coder = self.run_dir(f"coder_s{seed}") / "data/checkpoints/grpo_coder"
            if not coder.is_dir():
                print(f"{arm}_s{seed}: no trained Coder at {coder}, not started", flush=True)
                return
            sets.append(f"grpo.team.coder_model={coder}")
        if self.args.deadline and time.time() - self.t0 > self.args.deadline:
            print(f"{arm}_s{seed}: past the deadline, not started", flush=True)
            return
        d = self.run_dir(f"{arm}_s{seed}")
        rc = self.corecode("train", d, "grpo-team", sets=sets)
        if arm == "coder":  # its Coder is saved: the arms after it start beside its evaluation
            self.coder_done[seed].set()
        if rc == 0:
            self.corecode("eval", d, "evaluate", "--method", "planner_coder_grpo")

    def tune(self) -> None:
        """Choose the recipe on the dev split (notebooks/sweep.py); its overrides join every arm's command."""
        import yaml

        variants = yaml.safe_load(self.args.tune.read_text()) or {}
        arms = [self.args.tune_arm] if self.args.tune_arm else ["both", "coder"]
        runs = {
            f"{name}{TUNE_SEP}{arm}": tune_overrides(self.args.tune, name, spec) + self.arm_overrides(arm)
            for name, spec in variants.items()
            for arm in arms
        }
        (self.work / "tune_variants.yaml").write_text(yaml.safe_dump(runs, width=1000))
        cmd = [sys.executable, str(REPO / "notebooks/sweep.py"), "--from", str(self.work), "--params",
               str(self.work / "params.yaml"), "--workdir", str(self.work / "tune"), "--variants",
               str(self.work / "tune_variants.yaml"), "--seeds", *map(str, self.args.tune_seed), "--jobs",
               str(self.args.jobs), "--out", str(self.out / "tune.tsv"), "--reuse"]  # fmt: skip
        if self.execute("tune", cmd, self.work):
            sys.exit(f"the dev-split sweep failed: {self.work / 'tune.log'}")
        name = choose_recipe(self.out / "tune.tsv", self.args.tune_arm or "both")
        (self.out / "chosen.txt").write_text(name + "\n")
        print(f"recipe chosen on the dev split: {name}", flush=True)
        self.recipe = tune_overrides(self.args.tune, name, variants[name])
        self.params(self.isolation + self.planner + self.recipe)

    def ptx_on(self) -> bool:
        """Whether the work directory's recipe has a ptx term: without one, a ptx arm would update nothing."""
        from corecode.config import load_params

        return load_params(self.work / "params.yaml").grpo.team.has_ptx

    def arms(self) -> list[str]:
        """--arms, less the ptx arms where the recipe has no ptx term (noted in <out>/ptx_note.txt for the report)."""
        if self.ptx_on():
            (self.out / PTX_NOTE).unlink(missing_ok=True)  # an earlier recipe's note in the same out directory
            return list(self.args.arms)
        (self.out / PTX_NOTE).write_text(NO_PTX + "\n")
        print(NO_PTX, flush=True)
        return [a for a in self.args.arms if a not in PTX_ARMS]

    def run_all(self) -> None:
        """Every arm and seed, then the SFT team's evaluation, then the arms after the Coder: the runs take the first
        slots (a run whose slot comes after --deadline is not started), the evaluation, never skipped, a later one.
        An arm after the Coder holds its slot while it waits; every run it waits for was queued, so started, before."""
        arms = self.ran_arms = self.arms()
        first = [a for a in arms if a not in AFTER_CODER]
        after = [a for a in arms if a in AFTER_CODER]
        with ThreadPoolExecutor(self.args.jobs) as pool:
            jobs = [pool.submit(self.train_and_eval, arm, s) for s in self.args.seeds for arm in first]
            if not self.args.sft_from:
                jobs.append(
                    pool.submit(self.corecode, "eval_sft", self.work, "evaluate", "--method", "planner_coder_sft")
                )
            jobs += [pool.submit(self.train_and_eval, arm, s) for s in self.args.seeds for arm in after]
            for j in jobs:
                j.result()


TUNE_SEP = "__"  # between a variant's name and its arm in the dev sweep's run names
PTX_NOTE = "ptx_note.txt"  # in <out>: why the ptx arms did not run
NO_PTX = (
    "grpo.team.ptx_coef is 0 (or grpo.team.ptx_data is empty): a ptx-only control would update nothing, so its team "
    "is the SFT team; the ptx arms were not run, and each arm's control is `sft`"
)


def tune_overrides(path: Path, name: str, spec) -> list[str]:
    """A variant of the --tune file as KEY=VALUE strings (a mapping or a list of them, as notebooks/sweep.py reads)."""
    if isinstance(spec, dict):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in spec.items()]
    if isinstance(spec, list) and all(isinstance(x, str) and "=" in x for x in spec):
        return list(spec)
    sys.exit(f"{path}: variant {name!r} must be a mapping or a list of KEY=VALUE strings")


def choose_recipe(tsv: Path, arm: str = "both") -> str:
    """The variant whose ``arm`` runs have the highest mean dev pass@1 over their seeds in the sweep's table (first
    listed on a tie). A variant with a failed run is not chosen: its mean would be over fewer seeds."""
    import csv

    runs: dict[str, list[str]] = {}
    with tsv.open() as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["variant"].endswith(f"{TUNE_SEP}{arm}"):
                runs.setdefault(r["variant"].removesuffix(f"{TUNE_SEP}{arm}"), []).append(r["pass_at_1"])
    means = {name: statistics.fmean(map(float, p1)) for name, p1 in runs.items() if all(p1)}
    if not means:
        sys.exit(f"{tsv}: no variant's {arm} runs of the dev sweep all have a pass@1")
    return max(means, key=means.__getitem__)


PLANNER_COLUMNS = ["variant", "overrides", "planner_val_loss", "pass_at_1", "coder_alone", "collaboration_gain",
                   "delta_vs_profile", "p_greater"]  # fmt: skip


def planner_rows(root: Path, variants: dict[str, list[str]]) -> list[dict]:
    """One row per --tune-planner variant: its Planner's SFT val loss, the team's dev pass@1, the Coder alone, the
    Collaboration Gain, and the paired comparison with the profile's own Planner (empty cells where a step failed)."""
    ref = read_scores(root / PROFILE, "planner_coder_sft", DEV)
    rows = []
    for name, sets in variants.items():
        d = root / name
        row = dict.fromkeys(PLANNER_COLUMNS, "") | {"variant": name, "overrides": " ".join(sets)}
        try:  # the summary beside the checkpoint the variant used (a link where it shares one)
            trained = (d / "data/checkpoints/sft_planner").resolve().parents[1]
            loss = json.loads((trained / "reports/train/sft_planner_summary.json").read_text())["eval_loss"]
            row["planner_val_loss"] = f"{loss:.4f}"
        except (OSError, ValueError, KeyError):
            pass
        scores = read_scores(d, "planner_coder_sft", DEV)
        if scores:
            bench = json.loads((d / "data/reports/eval/planner_coder_sft/summary.json").read_text())["benchmarks"][DEV]
            row |= {"pass_at_1": f"{statistics.fmean(scores.values()):.4f}",
                    "coder_alone": f"{bench['coder_alone_pass_at_1']:.4f}",
                    "collaboration_gain": f"{bench['collaboration_gain']:+.4f}"}  # fmt: skip
            if ref and name != PROFILE:
                c = compare(scores, ref)
                row |= {"delta_vs_profile": f"{c['delta_points']:+.2f}", "p_greater": f"{c['p_greater']:.4f}"}
        rows.append(row)
    return rows


def write_planner_table(rows: list[dict], path: Path) -> None:
    lines = ["\t".join(PLANNER_COLUMNS)] + ["\t".join(r[c] for c in PLANNER_COLUMNS) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def choose_planner(rows: list[dict], table: Path) -> str:
    """The variant with the highest dev pass@1 (the first listed on a tie: the profile's own Planner first)."""
    scored = [r for r in rows if r["pass_at_1"]]
    if not scored:
        sys.exit(f"{table}: no Planner variant was scored on the dev split (logs under its tune_planner/)")
    return max(scored, key=lambda r: float(r["pass_at_1"]))["variant"]


def read_scores(directory: Path, method: str, bench: str = BENCH) -> dict[str, float] | None:
    """A team's per-problem pass@1 from the evaluate stage's file under a (run) directory; None where it is missing."""
    from corecode.pipeline.metrics import per_problem_scores

    try:
        return per_problem_scores(method, bench, directory / "data/reports/eval")
    except FileNotFoundError:
        return None


def log_summary(path: Path) -> dict:
    """Median step time; the Planner's and Coder's training measurements by quarter; Collaboration Gain by eval."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    steps = [r["step_time_s"] for r in rows if "step_time_s" in r]
    if steps:
        out["median_step_s"] = round(statistics.median(steps[1:] or steps), 3)
    for key in PLANNER_KEYS:
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = [
                round(statistics.fmean(vals[i * len(vals) // 4 : (i + 1) * len(vals) // 4] or [0]), 3) for i in range(4)
            ]
    out["collaboration_gain"] = [
        (r["step"], round(r["eval/collaboration_gain"], 3)) for r in rows if "eval/collaboration_gain" in r
    ]
    return out


def compare(a: dict, b: dict) -> dict:
    from corecode.evaluation.stats import paired_bootstrap

    r = paired_bootstrap(a, b, 10_000, alternative="greater")
    return {
        "delta_points": round(100 * r.delta, 2),
        "ci95": [round(100 * r.ci_low, 2), round(100 * r.ci_high, 2)],
        "p_greater": round(r.p_value, 4),
        "n": r.n_problems,
    }


def planner_tune_lines(out: Path) -> list[str]:
    """The --tune-planner table and its choice, for the report (nothing without --tune-planner)."""
    if not (out / "planner_chosen.txt").is_file():
        return []
    rows = [r.split("\t") for r in (out / "tune_planner.tsv").read_text().splitlines()]
    lines = [f"SFT team's Planner chosen on the dev split: **{(out / 'planner_chosen.txt').read_text().strip()}**", ""]
    lines += ["| " + " | ".join(rows[0]) + " |", "|---|---|" + "---:|" * (len(rows[0]) - 2)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows[1:]] + [""]


def tune_lines(out: Path) -> list[str]:
    """The dev sweep's table and the choice, for the report (nothing without --tune)."""
    if not (out / "chosen.txt").is_file():
        return []
    rows = (out / "tune.tsv").read_text().splitlines()
    cols = rows[0].split("\t")
    keep = [cols.index(c) for c in ("run", "overrides", "pass_at_1", "ref_pass_at_1", "delta_points", "p_greater")]
    lines = [f"Recipe chosen on the dev split: **{(out / 'chosen.txt').read_text().strip()}**", ""]
    lines += ["| dev run | overrides | pass@1 | SFT pass@1 | delta | p (run > SFT) |", "|---|---|---:|---:|---:|---:|"]
    for row in rows[1:]:
        cells = row.split("\t")
        lines.append("| " + " | ".join(cells[i] for i in keep) + " |")
    return lines + [""]


def report(work: Path, out: Path, seeds: list[int], arms: list[str]) -> None:
    """The report of one work directory's runs (module doc)."""
    sft = read_scores(work, "planner_coder_sft")
    scores = {(arm, s): read_scores(work / "runs" / f"{arm}_s{s}", "planner_coder_grpo") for arm in arms for s in seeds}
    logs = {(arm, s): log_summary(work / "runs" / f"{arm}_s{s}/data/reports/train/grpo_team.json") for arm, s in scores}
    write_report(out, sft, scores, logs, seeds, arms)


def pool(dirs: list[Path], out: Path) -> None:
    """One report over the seeds of several earlier runs' out directories (their scores.json and results.json)."""
    sft, first, scores, logs = None, None, {}, {}
    for d in dirs:
        path = d / "scores.json"
        teams, runs = _read_out(path, "teams"), _read_out(d / "results.json", "runs")
        if "sft" in teams:
            if sft is None:
                sft, first = teams["sft"], path
            elif teams["sft"] != sft:
                sys.exit(f"{path}: its SFT team's per-problem scores differ from {first}'s (another build or SFT team)")
        for run, sc in teams.items():
            if run == "sft":
                continue
            arm, _, seed = run.rpartition("_s")
            if arm not in ARMS or not seed.isdigit():
                sys.exit(f"{path}: team {run!r} is not <arm>_s<seed> with an arm of {sorted(ARMS)}")
            if (arm, int(seed)) in scores:
                sys.exit(f"{path}: {run} is in an earlier directory too; give each run once")
            scores[arm, int(seed)], logs[arm, int(seed)] = sc, runs.get(run, {})
    if sft is None:
        sys.exit(f"--pool: none of {', '.join(map(str, dirs))} holds the SFT team's scores")
    seeds = sorted({s for _, s in scores})
    arms = [a for a in ARMS if any(arm == a for arm, _ in scores)]
    out.mkdir(parents=True, exist_ok=True)
    pooled = {(a, s): scores.get((a, s)) for a in arms for s in seeds}
    write_report(out, sft, pooled, logs, seeds, arms, sources=dirs)


def _read_out(path: Path, key: str) -> dict:
    """``key`` of a JSON file that a finished run of this script wrote under its out directory."""
    try:
        return json.loads(path.read_text())[key]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{path}: cannot read its {key!r} ({e!r}); only a finished run of this script writes it")


def write_report(out: Path, sft, scores: dict, logs: dict, seeds: list[int], arms: list[str], sources=()) -> None:
    """results.md, results.json and scores.json under ``out``: each run's pass@1 and training measurements, and the
    paired comparisons per seed and pooled over the seeds that have both runs."""

    def scores_of(method: str, seed: int) -> dict | None:
        return sft if method == "sft" else scores.get((method, seed))

    chosen = (out / "chosen.txt").read_text().strip() if (out / "chosen.txt").is_file() else None
    planner = out / "planner_chosen.txt"
    result = {
        "planner_chosen_on_dev": planner.read_text().strip() if planner.is_file() else None,
        "chosen_on_dev": chosen,
        "sft": {"pass_at_1": statistics.fmean(sft.values()) if sft else None},
        "runs": {},
        "pairs": {},
    }
    lines = [f"Pooled from: {', '.join(map(str, sources))}", ""] if sources else []
    if (out / PTX_NOTE).is_file():
        lines += [(out / PTX_NOTE).read_text().strip() + ".", ""]
    lines += planner_tune_lines(out) + tune_lines(out)  # the dev-split choices, where there were any
    lines += ["Test split:", ""] if lines else []
    lines += [
        "| run | pass@1 | median step s | plan accuracy by quarter | Planner zero-var groups | Coder zero-var groups "
        "| Collaboration Gain |",
        "|---|---:|---:|---|---|---|---|",
    ]
    if sft:
        lines.append(f"| SFT team | {100 * result['sft']['pass_at_1']:.2f}% | | | | | |")
    for (arm, s), sc in scores.items():
        log = logs.get((arm, s), {})
        result["runs"][f"{arm}_s{s}"] = {"pass_at_1": statistics.fmean(sc.values()) if sc else None, **log}
        p1 = f"{100 * statistics.fmean(sc.values()):.2f}%" if sc else "missing"
        acc, zero = log.get("planner/plan_accuracy", ""), log.get("planner/zero_std_frac", "")
        coder_zero = log.get("coder/zero_std_frac", "")
        gain = " ".join(f"{g:+.2f}" for _, g in log.get("collaboration_gain", []))
        lines.append(f"| {arm}_s{s} | {p1} | {log.get('median_step_s', '')} | {acc} | {zero} | {coder_zero} | {gain} |")
    lines += ["", "| seed | a | b | delta (points) | 95% CI | p (a > b) |", "|---|---|---|---:|---|---:|"]
    for a, b in PAIRS:
        if not {a, b} <= set(arms) | {"sft"}:
            continue
        per_seed = {}
        for s in seeds:
            xa, xb = scores_of(a, s), scores_of(b, s)
            if xa and xb:
                per_seed[s] = compare(xa, xb)
        if len(per_seed) > 1:  # each problem's pass@1 averaged over the seeds that have both runs
            xa, xb = (
                {k: statistics.fmean(scores_of(m, t)[k] for t in per_seed) for k in scores_of(a, next(iter(per_seed)))}
                for m in (a, b)
            )
            per_seed["pooled"] = compare(xa, xb)
        for s, c in per_seed.items():
            lines.append(f"| {s} | {a} | {b} | {c['delta_points']:+.2f} | {c['ci95']} | {c['p_greater']} |")
        result["pairs"][f"{a}>{b}"] = per_seed
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    teams = {"sft": sft} if sft else {}
    teams |= {f"{arm}_s{s}": sc for (arm, s), sc in scores.items() if sc}
    (out / "scores.json").write_text(json.dumps({"benchmark": BENCH, "teams": teams}) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.pool:
        return pool(args.pool, args.out)
    drv = Driver(args)
    drv.setup()
    if args.tune_planner:
        drv.tune_planner()
    if args.tune:
        drv.tune()
    if args.tune_only:  # the dev table and the choice are in <out>; the test split stays unread
        return
    drv.run_all()
    report(drv.work, drv.out, args.seeds, drv.ran_arms)


if __name__ == "__main__":
    main()
