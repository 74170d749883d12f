"""How often does a Planner sample the gold plan, by the problem's chain length and the sampling temperature? The
precondition of plan-level credit: a group of plans can teach the Planner only if it holds a gold plan beside a wrong
one (notebooks/2026-11-29-20-rl-longer-chains.md).

    python notebooks/planner_long_plans.py --planner data/checkpoints/sft_planner \
        --problems /tmp/rl100/data/work/manual/processed/composite_rl.jsonl --groups 8 --temperatures 0.4 0.7 1.0 1.3

Per temperature and chain length (the problem's ``difficulty``): the share of sampled plans that equal the gold plan
up to whitespace, the share of problems with at least one gold plan among ``--groups``, the share of problems with a
gold and a wrong plan, and the shares of sampled plans with as many lines as the gold plan and with fewer. Sampling is
the trainers' (`corecode.training.rollout.generate_chunks`, the lean decode loop on the CPU), seeded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rl_longer_dev import norm  # noqa: E402  (this directory: the dev sweep's plan match)

from corecode.agents.prompts import planner_prompt  # noqa: E402
from corecode.data.io import read_problems  # noqa: E402
from corecode.training.rollout import generate_chunks  # noqa: E402
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model  # noqa: E402


def lines(text: str | None) -> int:
    return len([x for x in (text or "").splitlines() if x.strip()])


def score(problems, samples) -> dict[str, dict[str, float]]:
    """The shares by chain length, from each problem's group of sampled plans."""
    acc: dict[str, Counter] = defaultdict(Counter)
    for p, group in zip(problems, samples):
        plans = [TeamGRPOTrainer.plan_for_coder(s.completion.text) for s in group]
        gold = [norm(x or "") == norm(p.plan or "") for x in plans]
        c = acc[str(p.difficulty)]
        c["problems"] += 1
        c["plans"] += len(plans)
        c["gold"] += sum(gold)
        c["gold_length"] += sum(lines(x) == lines(p.plan) for x in plans)
        c["shorter"] += sum(lines(x) < lines(p.plan) for x in plans)
        c["any_gold"] += any(gold)
        c["gold_and_wrong"] += any(gold) and not all(gold)
    return {k: shares(c) for k, c in sorted(acc.items())}


def shares(c: Counter) -> dict[str, float]:
    """One chain length's counts as the printed shares: of sampled plans, or of problems (their groups)."""
    plans, groups = c["plans"], c["problems"]
    return {
        "problems": groups,
        "gold_plan_rate": c["gold"] / plans,
        "groups_any_gold": c["any_gold"] / groups,
        "groups_gold_and_wrong": c["gold_and_wrong"] / groups,
        "plans_of_gold_length": c["gold_length"] / plans,
        "plans_shorter_than_gold": c["shorter"] / plans,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--planner", required=True, help="The Planner's checkpoint directory.")
    ap.add_argument("--problems", type=Path, required=True, help="A problem JSONL (an rl or dev split).")
    ap.add_argument("--groups", type=int, default=8, help="Plans sampled per problem (default 8).")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.4, 0.7, 1.0, 1.3])
    ap.add_argument("--max-new-tokens", type=int, default=64, help="grpo.team.max_plan_tokens (default 64).")
    ap.add_argument("--limit", type=int, default=0, help="First N problems only (0: all).")
    args = ap.parse_args()
    torch.manual_seed(0)
    problems = read_problems(str(args.problems))
    problems = problems[: args.limit] if args.limit else problems
    model, tok = load_role_model(args.planner)
    prompts = [planner_prompt(p) for p in problems]
    for temp in args.temperatures:
        chunks = generate_chunks(model, tok, prompts, args.groups, args.max_new_tokens, temp, 1.0, 32, lean_decode=True)
        samples = [g for chunk in chunks for g in chunk]
        for steps, row in score(problems, samples).items():
            row = {"temperature": temp, "steps": steps} | {k: round(v, 4) for k, v in row.items()}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
