"""Sweep GRPO variants from one fixed SFT team and compare each with that team on the dev split.

Exploration tool, not part of the pipeline (dvc.yaml never runs it). Start from a finished `make run` (or any
directory with `data/processed/` and the SFT checkpoints). For every variant and seed the sweep makes a scratch
directory, runs the trainer (`corecode grpo-team` by default) with the variant's `--set` overrides, evaluates the
trained team (`corecode evaluate`), and compares it with the SFT team's own evaluation on the same problems (paired
bootstrap over problems, one-sided: variant better). One table comes out, one row per run.

Overrides are free-form `KEY=VALUE` (dotted params key, YAML value), passed to the commands unchanged:

* `--set KEY=VALUE` (repeatable): every command of every run, the reference evaluation included (e.g. dtype,
  sandbox, generation settings);
* a variant's overrides and `seed=S`: the trainer only. Evaluations see only the `--set` overrides, so every run
  and the reference are sampled with the same seed: common random numbers, and a paired delta that shows where the
  models differ rather than where the dice fell differently.

Examples (from the repo root after `make run`):

    python notebooks/sweep.py --dry-run --seeds 0 1 2 \\
        --variant s100 grpo.team.max_steps=100 --variant s200 grpo.team.max_steps=200

    python notebooks/sweep.py --jobs 6 --seeds 0 1 --variants notebooks/variants.example.yaml \\
        --set model.dtype=float32 --set sandbox.isolation=unshare --set sandbox.workers=1 \\
        --set generation.fast_path=lean --set grpo.team.eval_steps=0 --out data/sweep/results.tsv

A variants file maps a run name to its overrides, as a mapping or as a list of KEY=VALUE strings:

    ptx2_lr2e4: {grpo.team.ptx_coef: 2.0, grpo.team.learning_rate: 2.0e-4}
    adherence: [grpo.team.coder_reward.plan_adherence=0.3]

Other trainers: `--trainer grpo-single --method single_grpo --ref-method single_sft --checkpoints sft_single
--train-log data/reports/train/grpo_single.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = [
    "run",
    "variant",
    "seed",
    "overrides",
    "train_rc",
    "train_s",
    "step_s",
    "train_pass_by_quarter",
    "eval_rc",
    "pass_at_1",
    "ref_pass_at_1",
    "delta_points",
    "p_greater",
]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="Base params file (default params.yaml).")
    ap.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=Path("."),
        help="Directory holding data/processed/ and data/checkpoints/<--checkpoints> (default: .).",
    )
    ap.add_argument(
        "--set",
        dest="common",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override for every command of every run, reference included; repeatable.",
    )
    ap.add_argument(
        "--variant",
        action="append",
        nargs="+",
        default=[],
        metavar=("NAME", "KEY=VALUE"),
        help="A variant: its name, then its overrides (trainer only); repeatable.",
    )
    ap.add_argument("--variants", type=Path, help="YAML file: {name: {KEY: VALUE, ...} or [KEY=VALUE, ...]}.")
    ap.add_argument("--seeds", type=int, nargs="+", help="Train every variant once per seed (--set seed=S).")
    ap.add_argument(
        "--benchmark",
        default="composite_dev",
        help="Benchmark to evaluate on (default composite_dev, the split tuning reads); a test split is refused: only "
        "the pipeline's evaluate stage and benchmarks/large_test.sh read test problems.",
    )
    ap.add_argument("--trainer", default="grpo-team", help="corecode training command (default grpo-team).")
    ap.add_argument("--method", default="planner_coder_grpo", help="Method evaluating a run's trained models.")
    ap.add_argument("--ref-method", default="planner_coder_sft", help="Method every run is compared with.")
    ap.add_argument(
        "--checkpoints",
        nargs="+",
        default=["sft_planner", "sft_coder"],
        help="Checkpoints under <--from>/data/checkpoints/ linked into every run (default: the SFT team).",
    )
    ap.add_argument(
        "--train-log",
        default="data/reports/train/grpo_team.json",
        help="The trainer's per-step log, relative to a run directory.",
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        default=Path("data/sweep"),
        help="Scratch root, one directory per run (default data/sweep, git-ignored).",
    )
    ap.add_argument("--out", type=Path, help="Results table (TSV; default <workdir>/results.tsv).")
    ap.add_argument("--jobs", type=int, default=1, help="Runs at once (default 1).")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every command (default 1).")
    ap.add_argument("--timeout", type=float, help="Seconds a training command may run (default: no limit).")
    ap.add_argument(
        "--cli",
        default=f"{shlex.quote(sys.executable)} -m corecode.cli --pipeline-outputs",
        help="How to call corecode (default: this interpreter, -m corecode.cli --pipeline-outputs: each run's "
        "scratch directory holds its outputs in the pipeline's places).",
    )
    ap.add_argument("--reuse", action="store_true", help="Skip a step whose output is already in the run directory.")
    ap.add_argument(
        "--tracking", action="store_true", help="Keep MLflow tracking on (default: tracking.enabled=false)."
    )
    ap.add_argument("--dry-run", action="store_true", help="Print the setup and commands of every run; run nothing.")
    return ap.parse_args(argv)


def yaml_value(value) -> str:
    """A value of a variants file as the VALUE of --set KEY=VALUE (JSON is YAML)."""
    return value if isinstance(value, str) else json.dumps(value)


def load_variants(args) -> list[tuple[str, list[str]]]:
    variants = []
    if args.variants:
        import yaml

        for name, spec in (yaml.safe_load(args.variants.read_text()) or {}).items():
            if isinstance(spec, dict):
                variants.append((str(name), [f"{k}={yaml_value(v)}" for k, v in spec.items()]))
            elif isinstance(spec, list) and all(isinstance(s, str) and "=" in s for s in spec):
                variants.append((str(name), list(spec)))
            else:
                sys.exit(f"{args.variants}: variant {name!r} must be a mapping or a list of KEY=VALUE strings")
    for name, *overrides in args.variant:
        variants.append((name, overrides))
    for _, overrides in variants:
        for kv in overrides + args.common:
            if "=" not in kv:
                sys.exit(f"not KEY=VALUE: {kv!r}")
    names = [n for n, _ in variants]
    if len(set(names)) != len(names) or "REF" in names:
        sys.exit(f"variant names must be unique and not REF: {names}")
    return variants or [("base", [])]


def plan_runs(args, variants) -> list[dict]:
    runs = []
    for name, overrides in variants:
        for seed in args.seeds or [None]:
            run = name if seed is None else f"{name}_s{seed}"
            train_sets = overrides + ([] if seed is None else [f"seed={seed}"])
            runs.append(
                {
                    "run": run,
                    "variant": name,
                    "seed": "" if seed is None else seed,
                    "overrides": " ".join(overrides),
                    "train_sets": train_sets,
                }
            )
    return runs


def sets(pairs: list[str]) -> list[str]:
    return [arg for kv in pairs for arg in ("--set", kv)]


def command(args, *parts: str, overrides: list[str]) -> list[str]:
    fixed = [] if args.tracking else ["tracking.enabled=false"]
    return shlex.split(args.cli) + list(parts) + ["--params", "params.yaml"] + sets(fixed + args.common + overrides)


def train_command(args, run: dict) -> list[str]:
    return command(args, args.trainer, overrides=run["train_sets"])


def eval_command(args, method: str) -> list[str]:
    return command(args, "evaluate", "--method", method, overrides=[f"evaluate.benchmarks=[{args.benchmark}]"])


def eval_file(run_dir: Path, method: str, benchmark: str) -> Path:
    return run_dir / "data/reports/eval" / method / f"{benchmark}.jsonl"


def prepare(args, run_dir: Path) -> None:
    """A run directory: the base params, a copy of the problem and SFT data, links to the start checkpoints."""
    (run_dir / "data/checkpoints").mkdir(parents=True, exist_ok=True)
    shutil.copy(args.params, run_dir / "params.yaml")
    if not (run_dir / "data/processed").exists():
        shutil.copytree(args.source / "data/processed", run_dir / "data/processed")
    for name in args.checkpoints:
        link = run_dir / "data/checkpoints" / name
        if not link.exists():
            link.symlink_to(args.source / "data/checkpoints" / name)


def prepare_lines(args, run_dir: Path) -> list[str]:
    q = lambda p: shlex.quote(str(p))  # noqa: E731
    lines = [
        f"mkdir -p {q(run_dir / 'data/checkpoints')}",
        f"cp {q(args.params)} {q(run_dir / 'params.yaml')}",
        f"cp -r {q(args.source / 'data/processed')} {q(run_dir / 'data/processed')}",
    ]
    lines += [
        f"ln -s {q(args.source / 'data/checkpoints' / n)} {q(run_dir / 'data/checkpoints' / n)}"
        for n in args.checkpoints
    ]
    return lines


def execute(args, cmd: list[str], run_dir: Path, log_name: str, timeout: float | None = None) -> tuple[object, float]:
    """Run one command in run_dir, output to run_dir/log_name; (return code or 'timeout', seconds)."""
    env = dict(
        os.environ,
        OMP_NUM_THREADS=str(args.threads),
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    t0 = time.perf_counter()
    with open(run_dir / log_name, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # the whole process group: the trainer's sandbox workers too
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
    return rc, round(time.perf_counter() - t0, 1)


def read_pass_at_1(path: Path) -> dict[str, float]:
    with path.open() as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {r["task_id"]: r["pass_at_1"] for r in rows}


def compare(run_file: Path, ref_file: Path) -> dict:
    """pass@1 of both, delta in points, one-sided paired bootstrap p (run better than reference)."""
    from corecode.evaluation.stats import paired_bootstrap

    a, b = read_pass_at_1(run_file), read_pass_at_1(ref_file)
    mean_a, mean_b = sum(a.values()) / len(a), sum(b.values()) / len(b)
    p = paired_bootstrap(a, b, 10_000, alternative="greater").p_value
    return {
        "pass_at_1": f"{mean_a:.4f}",
        "ref_pass_at_1": f"{mean_b:.4f}",
        "delta_points": f"{100 * (mean_a - mean_b):+.2f}",
        "p_greater": f"{p:.4f}",
    }


def train_summary(log_path: Path) -> dict:
    """Mean step time and the Coder's (else any role's) training pass rate by quarter of the run. The single-model
    trainer (TRL's GRPOTrainer) logs its step time as ``step_time`` and no pass rate (only rewards): its runs get a
    step time and no pass rate."""
    try:
        history = json.loads(log_path.read_text())
    except (OSError, ValueError):
        return {}
    key = next(
        (k for k in ("pass_rate/coder", "pass_rate/joint", "pass_rate/main") if any(k in r for r in history)), None
    )
    times = [r.get("step_time_s", r.get("step_time")) for r in history]
    times = [t for t in times if t is not None]
    out = {"step_s": f"{sum(times) / len(times):.2f}"} if times else {}
    rates = [r[key] for r in history if key and key in r]
    quarters = [rates[i * len(rates) // 4 : (i + 1) * len(rates) // 4] for i in range(4)]
    if rates:
        out["train_pass_by_quarter"] = " ".join(f"{sum(q) / len(q):.3f}" for q in quarters if q)
    return out


def run_reference(args, ref_done: threading.Event) -> None:
    ref_dir = args.workdir / "REF"
    try:
        prepare(args, ref_dir)
        if not (args.reuse and eval_file(ref_dir, args.ref_method, args.benchmark).is_file()):
            rc, secs = execute(args, eval_command(args, args.ref_method), ref_dir, "eval.log")
            print(f"REF {args.ref_method}: rc={rc} in {secs} s", flush=True)
    finally:
        ref_done.set()


def run_one(args, run: dict, ref_done: threading.Event) -> dict:
    run_dir = args.workdir / run["run"]
    row = {k: run.get(k, "") for k in COLUMNS}
    prepare(args, run_dir)
    trained = (run_dir / "train.done").is_file()
    if not (args.reuse and trained):
        row["train_rc"], row["train_s"] = execute(args, train_command(args, run), run_dir, "train.log", args.timeout)
        trained = row["train_rc"] == 0
        if trained:
            (run_dir / "train.done").touch()
    row.update(train_summary(run_dir / args.train_log))
    if trained:
        out = eval_file(run_dir, args.method, args.benchmark)
        if not (args.reuse and out.is_file()):
            row["eval_rc"], _ = execute(args, eval_command(args, args.method), run_dir, "eval.log")
        ref_done.wait()
        ref = eval_file(args.workdir / "REF", args.ref_method, args.benchmark)
        if out.is_file() and ref.is_file():
            row.update(compare(out, ref))
    print(f"{run['run']}: " + " ".join(f"{k}={row[k]}" for k in COLUMNS[4:] if row[k] != ""), flush=True)
    return row


def write_table(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(COLUMNS)] + ["\t".join(str(r[k]) for k in COLUMNS) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    print(f"\n| {' | '.join(COLUMNS)} |\n|{'---|' * len(COLUMNS)}")
    for r in rows:
        print(f"| {' | '.join(str(r[k]) for k in COLUMNS)} |")
    print(f"\nwrote {path}")


def main(argv=None) -> None:
    args = parse_args(argv)
    from corecode.training.grpo_config import is_test_split

    if is_test_split(args.benchmark):
        sys.exit(f"--benchmark {args.benchmark}: tuning never reads a test split; use composite_dev")
    variants = load_variants(args)
    runs = plan_runs(args, variants)
    args.params, args.source, args.workdir = args.params.resolve(), args.source.resolve(), args.workdir.resolve()
    out = args.out or args.workdir / "results.tsv"
    missing = [
        p
        for p in [
            args.params,
            args.source / "data/processed",
            *(args.source / "data/checkpoints" / n for n in args.checkpoints),
        ]
        if not p.exists()
    ]
    if args.dry_run:
        for p in missing:
            print(f"# warning: {p} does not exist")
        print(f"# {len(runs)} runs, {args.jobs} at once; results -> {out}")
        for name, run_dir, cmds in [("REF", args.workdir / "REF", [eval_command(args, args.ref_method)])] + [
            (r["run"], args.workdir / r["run"], [train_command(args, r), eval_command(args, args.method)]) for r in runs
        ]:
            print(f"\n# {name}")
            print("\n".join(prepare_lines(args, run_dir)))
            print("\n".join(f"(cd {shlex.quote(str(run_dir))} && {shlex.join(c)})" for c in cmds))
        return
    if missing:
        sys.exit("missing: " + ", ".join(map(str, missing)))
    ref_done = threading.Event()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        ref = pool.submit(run_reference, args, ref_done)
        rows = [f.result() for f in [pool.submit(run_one, args, r, ref_done) for r in runs]]
    if ref.exception():
        print(f"REF failed: {ref.exception()!r}", file=sys.stderr)
    write_table(rows, out)


if __name__ == "__main__":
    main()
