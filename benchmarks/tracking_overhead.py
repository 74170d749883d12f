"""Overheads of corecode.tracking: ``python benchmarks/tracking_overhead.py [--mib 100]``.

Measures, on a fresh sqlite store in a temp dir: opening + closing a stage run with the whole params.yaml logged,
registering a checkpoint of ``--mib`` MiB, resolving its ``models:/`` URI (download, then cached), and the promotion
gate's paired bootstrap (500 problems, promote.n_resamples resamples).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=100, help="Checkpoint size to register and download.")
    ap.add_argument("--repeats", type=int, default=5, help="Stage runs to average over.")
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    work = Path(tempfile.mkdtemp(prefix="corecode-bench-"))
    os.chdir(work)
    subprocess.run(["git", "init", "-q"], check=True)
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{work / 'mlflow.db'}"

    from mlflow import MlflowClient

    from corecode.config import Params
    from corecode.tracking.config import PromoteParams, TrackingParams
    from corecode.tracking.promote import decide
    from corecode.tracking.registry import register_checkpoint, resolve_model_uri
    from corecode.tracking.runs import flatten_params, stage_run

    params = Params(tracking=TrackingParams(log_system_metrics=False))
    with stage_run("warmup", params):  # creates the database and the experiment
        pass
    t = time.perf_counter()
    for i in range(args.repeats):
        with stage_run(f"stage{i}", params):
            pass
    per_stage = (time.perf_counter() - t) / args.repeats
    print(f"stage_run open + close, {len(flatten_params(params))} params: {per_stage * 1000:.0f} ms")

    ckpt = work / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(os.urandom(args.mib * 2**20))
    with stage_run("promote", params) as run:
        t = time.perf_counter()
        mv = register_checkpoint({"coder": ckpt}, "bench", run)
        print(f"register_checkpoint, {args.mib} MiB: {time.perf_counter() - t:.2f} s")
    MlflowClient().set_registered_model_alias("bench", "champion", str(mv.version))
    for what in ("download", "cached"):
        t = time.perf_counter()
        resolve_model_uri("models:/bench@champion", cache_dir=work / "cache")
        print(f"resolve_model_uri, {args.mib} MiB, {what}: {(time.perf_counter() - t) * 1000:.0f} ms")

    rng = random.Random(0)
    champion = {f"t{i}": rng.random() for i in range(500)}
    candidate = {k: min(1.0, v + 0.02) for k, v in champion.items()}
    pp = PromoteParams()
    t = time.perf_counter()
    decide(candidate, champion, pp, "1")
    print(f"promotion gate, 500 problems, {pp.n_resamples} resamples: {(time.perf_counter() - t) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
