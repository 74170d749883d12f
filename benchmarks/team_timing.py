"""One team-GRPO timing run for benchmarks/gpu_scaling.sh: what ``corecode grpo-team`` trains, from a params file and
``--set`` overrides, without saving the final models (a timing run keeps its per-step log, grpo.team.log_path, with
every rank's phase times; saving a 1.5B team would add tens of seconds a run). Started as grpo-team is:

    python benchmarks/team_timing.py --params P --set grpo.team.max_steps=20   # one process (or roles on two GPUs)
    accelerate launch --config_file configs/accelerate/ddp.yaml benchmarks/team_timing.py --params P   # DDP / FSDP2

Paths in P are taken as written (no data/work/manual redirection).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", required=True, help="params file (corecode profile apply ... -o P)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE (as corecode --set)")
    args = ap.parse_args()

    from corecode.config import load_params
    from corecode.training.team_grpo import run_team_grpo

    run_team_grpo(load_params(args.params, args.overrides), progress=False, save=False)


if __name__ == "__main__":
    main()
