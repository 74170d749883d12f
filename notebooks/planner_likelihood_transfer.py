"""Does a Planner stage's likelihood objective carry to problems it did not train on? (notebook 2026-12-01-03)

For each Planner (``NAME=CHECKPOINT``, the first is the baseline), its greedy plan for every dev problem and for the
first ``--rl`` problems of the rl split, and a frozen Coder's mean per-token log-probability of each problem's
reference program given that plan: the ``grpo.team.planner_reward.coder_likelihood`` reward, scored by the trainer's
own ``completion_logprob_means``. Prints each Planner's mean on both sets and, against the baseline, the mean
difference and how many problems' greedy plans changed.

    python notebooks/planner_likelihood_transfer.py --root /tmp/mr4 --coder /tmp/mr4/data/checkpoints/grpo_coder \
        sft=/tmp/mr4/data/checkpoints/sft_planner big0=/tmp/ll/sw/pa_llbig_s0/data/checkpoints/grpo_planner
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="A make run's directory (data/processed).")
    ap.add_argument("--coder", required=True, help="The frozen Coder the Planners were trained against.")
    ap.add_argument("--rl", type=int, default=200, help="rl-split problems scored beside dev (default 200).")
    ap.add_argument("planners", nargs="+", metavar="NAME=CHECKPOINT", help="Planners; the first is the baseline.")
    args = ap.parse_args(argv)
    pairs = [p.split("=", 1) for p in args.planners]
    if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
        ap.error("each Planner is NAME=CHECKPOINT")
    args.planners = pairs
    return args


def greedy_plans(path: str, problems) -> list[str]:
    from corecode.agents.prompts import planner_prompt
    from corecode.training.rollout import generate_chunks
    from corecode.training.team_grpo import load_role_model

    planner, tokenizer = load_role_model(path)
    prompts = [planner_prompt(p) for p in problems]
    chunks = generate_chunks(planner, tokenizer, prompts, 1, 64, chunk_size=32, do_sample=False, lean_decode=None)
    return [group[0].completion.text for chunk in chunks for group in chunk]


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch

    from corecode.agents.prompts import coder_prompt, format_code
    from corecode.data.io import read_problems
    from corecode.training.rollout import completion_logprob_means
    from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model

    processed = args.root / "data/processed"
    sets = {
        "dev": read_problems(processed / "composite_dev.jsonl"),
        "rl": read_problems(processed / "composite_rl.jsonl")[: args.rl],
    }
    coder, tokenizer = load_role_model(args.coder)
    scores: dict[tuple[str, str], torch.Tensor] = {}
    for name, path in args.planners:
        for split, problems in sets.items():
            rows = [
                (coder_prompt(p, TeamGRPOTrainer.plan_for_coder(plan)), format_code(p.reference_solution))
                for p, plan in zip(problems, greedy_plans(path, problems), strict=True)
            ]
            scores[name, split] = completion_logprob_means(coder, tokenizer, rows, False, 16)
            print(f"{name} {split}: {float(scores[name, split].mean()):.4f}", flush=True)
    base = args.planners[0][0]
    for split in sets:
        for name, _ in args.planners[1:]:
            delta = scores[name, split] - scores[base, split]
            changed = int((delta.abs() > 1e-6).sum())
            print(f"{split}: {name} - {base} {float(delta.mean()):+.4f}, greedy plan changed: {changed}/{len(delta)}")


if __name__ == "__main__":
    main()
