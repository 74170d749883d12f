"""What the share-nothing transfers cost: ``dvc pull`` of each stage's inputs and push of its outputs, per stage of
the whole pipeline, with the real services (docs/deploy.md, "What the transfers cost").

On this machine, everything under one scratch directory in /tmp (corecode.deploy.local): the services of
deploy/services.sh on free ports, a bare git origin holding a snapshot of this working tree with the chosen
params.yaml (default: the repository's, the embedded default; ``--tiny``: tests/deploy/tiny.py's, a check in
minutes; ``--profile NAME``: a params profile's artifact shapes with the compute cut down, below), the
``stage-gpu`` deployment and one gpu-pool worker in its own ``CORECODE_WORKER_DIR``. This process is the CPU side:
it runs ``flows.remote.pipeline_remote(git_url=..., retries=0)`` for every stage, in a worker directory of its own.
The services and the worker are stopped at the end, also on failure or SIGTERM.

``--profile gpu-dev`` measures what the GPU profile's workers would move without a GPU: the params are
``corecode profile apply gpu-dev --set KEY=VALUE ...`` with :data:`COMPUTE_CUT` (then ``--set``), which keeps every
key that decides what a stage pulls and pushes (model shape and dtype, dataset sizes, what a GRPO checkpoint holds,
the stages) and cuts only what decides compute (steps, batch sizes, token budgets, evaluated problems) so the whole
pipeline runs on a CPU in minutes. Its run seconds are those of the cut-down run on this machine, not a GPU's.

Prints one markdown table, a row per stage (pool, seconds of ``dvc repro``, of the pull and of the push, bytes
pulled and pushed, and of ``run`` the seconds and bytes of GRPO's checkpoint pushes at each save, as the flow's
``corecode-stages`` rows give them) with totals, the machine (CPUs, load average before and after), the date, the
commit and the keys cut; ``--json`` writes the same as JSON.

    python benchmarks/share_nothing_transfers.py [--tiny | --profile NAME [--set KEY=VALUE ...]] [--json out.json]
        [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from corecode.deploy.local import REPO, can_run_services, deploy, services, snapshot_origin, start_worker, stop_worker

FIELDS = ("run_s", "pull_s", "pull_bytes", "push_s", "push_bytes", "ckpt_push_s", "ckpt_push_bytes")
# step 1 saves a resumable checkpoint (and the worker pushes it): the trainer saves at steps before the last only
_GRPO = {"problems_per_step": 1, "max_steps": 2, "save_steps": 1, "eval_steps": 0, "eval_problems": 2}
# What --profile cuts: compute only. Every key left out (model.*, data.*, grpo.*.bf16/lora/roles/frozen_roles,
# save_total_limit, the stages) stays as the profile has it, so each stage pulls and pushes what it would on a GPU.
COMPUTE_CUT = {
    "sandbox.workers": 2,  # this machine's cores (the profile's 14 are a 16-core GPU host's)
    "generation.fast_path": "lean",  # the profile's "static" compiles a CUDA decode step; lean is the CPU path
    # the Trainer's bf16 autocast, which needs a GPU; without LoRA (as in gpu-dev) SFT trains and saves fp32 weights
    # either way (corecode.training.sft.base_weight_dtype), so the checkpoints keep their size
    "sft.dtype": "float32",
    "sft.max_steps": 2,
    "sft.planner.max_steps": 2,
    "sft.batch_size": 2,
    "sft.eval_batch_size": 4,
    "sft.max_eval_rows": 4,
    "sft.check_n": 0,
    "sft.logging_steps": 1,
    **{f"grpo.team.{k}": v for k, v in _GRPO.items()},
    "grpo.team.num_plans": 2,
    "grpo.team.num_programs": 2,
    "grpo.team.max_plan_tokens": 32,
    "grpo.team.max_code_tokens": 64,
    "grpo.team.generation_batch_size": 4,
    "grpo.team.micro_batch_size": 4,
    "grpo.team.static_cache": False,  # a compiled CUDA-graph cache; the fp32 master weights are saved either way
    **{f"grpo.magrpo.{k}": v for k, v in _GRPO.items()},
    "grpo.magrpo.num_generations": 2,
    "grpo.magrpo.max_helper_tokens": 32,
    "grpo.magrpo.max_main_tokens": 64,
    "grpo.magrpo.generation_batch_size": 4,
    "grpo.magrpo.micro_batch_size": 4,
    "grpo.single.batch_size": 2,
    "grpo.single.num_generations": 2,
    "grpo.single.max_completion_length": 32,
    "grpo.single.pta_max_completion_length": 32,
    "grpo.single.max_steps": 1,
    "evaluate.max_problems": 4,  # evaluation records: a few kB per problem (size: 4 problems' worth, not 300)
    "evaluate.n_samples": 1,
    "evaluate.per_method.planner_coder_grpo_retrieval.max_problems": 4,
    "evaluate.per_method.planner_coder_grpo_debug.max_problems": 4,
    "evaluate.collaboration_gain": False,  # its extra evaluations (and their records) are left out
    "report.n_resamples": 200,
    "promote.n_resamples": 200,
    "tracking.enabled": True,  # the deployment's MLflow server (the profile turns tracking off for a bare GPU host)
    "tracking.log_system_metrics": False,
}


def cut_sets(sets: list[str] | None = None) -> list[str]:
    """:data:`COMPUTE_CUT` as ``KEY=VALUE`` overrides, then ``sets``: what ``--profile`` applies and prints."""
    return [*(f"{k}={json.dumps(v)}" for k, v in COMPUTE_CUT.items()), *(sets or [])]


def profile_params(profile: str, base: Path, sets: list[str] | None = None) -> dict:
    """``corecode profile apply PROFILE --base BASE`` with :data:`COMPUTE_CUT` and then ``sets`` as ``--set``."""
    from corecode.models.profiles import apply_profile

    cwd = os.getcwd()
    os.chdir(REPO)  # configs/profiles/NAME.yaml is relative to the repository
    try:
        return apply_profile(profile, base, cut_sets(sets))
    finally:
        os.chdir(cwd)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _num(x: float | int) -> str:
    return f"{x:,}".replace(",", " ") if isinstance(x, int) else f"{x:.1f}"


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"params: {result['params']}; commit {result['commit']}{' + uncommitted changes' if result['dirty'] else ''}",
        f"{result['started']} - {result['ended']} UTC, wall {result['wall_s']:.0f} s; "
        f"machine: {m['nproc']} CPUs ({m['cpu']}), load average (1/5/15 min) before {m['load_before']}, "
        f"after {m['load_after']}",
        f"command: {result['command']}",
        *([f"compute cut (artifact shapes as the profile has them): {result['cut']}"] if result.get("cut") else []),
        "",
        "| stage | pool | run (s) | pull (s) | pull bytes | push (s) | push bytes | ckpt push (s) | ckpt push bytes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["stages"]:
        resumed = f" (resumed from {r['resumed_from']})" if r.get("resumed_from") else ""
        cells = [r["stage"] + resumed, r["pool"], *(_num(r.get(f, 0)) for f in FIELDS)]
        lines.append("| " + " | ".join(cells) + " |")
    if result["stages"]:
        t = result["totals"]
        lines.append("| **total** | | " + " | ".join(f"**{_num(t[f])}**" for f in FIELDS) + " |")
        lines.append("")
        lines.append(
            f"transfers (pull + push): {t['pull_s'] + t['push_s']:.1f} s of "
            f"{t['run_s'] + t['pull_s'] + t['push_s']:.1f} s of stage time ({t['transfer_share']:.0%})"
        )
    if result.get("error"):
        lines += ["", f"FAILED: {result['error']}"]
    return "\n".join(lines)


def _totals(rows: list[dict]) -> dict:
    t = {
        f: (sum(r.get(f, 0) for r in rows) if f.endswith("_bytes") else round(sum(r.get(f, 0) for r in rows), 2))
        for f in FIELDS
    }
    busy = t["run_s"] + t["pull_s"] + t["push_s"]
    t["transfer_share"] = (t["pull_s"] + t["push_s"]) / busy if busy else 0.0
    return t


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds through the finally blocks: worker and services stop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--tiny", action="store_true", help="tests/deploy/tiny.py's params (minutes), not params.yaml")
    mode.add_argument("--profile", help="a params profile (NAME or file) with COMPUTE_CUT: its transfers on a CPU")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="with --profile")
    ap.add_argument("--json", type=Path, help="also write the result here as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory and the services' state")
    args = ap.parse_args()
    if args.sets and not args.profile:
        ap.error("--set needs --profile")
    reason = can_run_services()
    if reason:
        print(f"error: share_nothing_transfers: {reason}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)

    edit = None
    if args.tiny:
        sys.path.insert(0, str(REPO / "tests" / "deploy"))
        from tiny import write_tiny_params as edit
    elif args.profile:
        import yaml

        from corecode.models.profiles import ProfileError

        try:
            merged = profile_params(args.profile, REPO / "params.yaml", args.sets)
        except ProfileError as e:
            print(f"error: share_nothing_transfers: {e}", file=sys.stderr)
            return 2

        def edit(params: Path) -> None:
            params.write_text(yaml.safe_dump(merged, sort_keys=False))

    tmp = Path(tempfile.mkdtemp(prefix="corecode-transfers-", dir="/tmp"))
    print(f"scratch directory: {tmp}", flush=True)
    git_url, src = snapshot_origin(tmp, edit)
    result = {
        "params": "tests/deploy/tiny.py (tiny)"
        if args.tiny
        else f"profile {args.profile}, compute cut"
        if args.profile
        else "params.yaml (embedded default)",
        "cut": ", ".join(cut_sets(args.sets)) if args.profile else None,
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "command": " ".join(["python", "benchmarks/share_nothing_transfers.py", *sys.argv[1:]]),
        "machine": {"nproc": os.cpu_count(), "cpu": _cpu_model(), "host": platform.node()},
        "stages": [],
        "error": None,
    }
    worker = None
    started = time.time()
    result["started"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    result["machine"]["load_before"] = [round(x, 2) for x in os.getloadavg()]
    try:
        with services(git_url, {"CORECODE_GPU_POOL_LIMIT": "1"}, keep=args.keep) as svc:
            wenv = svc["worker_env"]
            deploy(src, wenv, ["stage-gpu"])
            worker = start_worker(wenv, tmp / "gpu-worker", "gpu", 1, tmp / "gpu-worker.log")
            os.environ.update(wenv)  # before Prefect is imported: its settings come from the environment
            os.environ["CORECODE_WORKER_DIR"] = str(tmp / "cpu-worker")
            sys.path.insert(0, str(REPO))  # `flows` is a top-level directory
            from flows.remote import pipeline_remote

            try:
                out = pipeline_remote(git_url=git_url, retries=0)
                result["stages"], result["run_key"] = out["stages"], out["run_key"]
            finally:
                stop_worker(worker)
                from prefect.events.worker import EventsWorker
                from prefect.logging.handlers import APILogWorker

                for queue in (APILogWorker, EventsWorker):  # sent now, while the Prefect server still answers
                    queue.drain_all(timeout=30)
    except BaseException as e:  # noqa: BLE001 - reported, then re-raised as the exit status
        result["error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
        if worker is not None:
            print(f"gpu worker log: {tmp / 'gpu-worker.log'}", file=sys.stderr)
    result["ended"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    result["wall_s"] = round(time.time() - started, 1)
    result["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["totals"] = _totals(result["stages"])
    text = markdown(result)
    print("\n" + text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if not args.keep and not result["error"]:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if result["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
