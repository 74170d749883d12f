"""Expert iteration for the Planner: Coder-verified plans of the team's own Planner as its SFT (ptx) rows.

Notebook 2026-11-29-03. Two steps:

``score``: sample ``--plans`` plans a problem from the Planner and ``--programs`` programs a plan from the Coder on
the rl problems, through the trainer's own rollout code (``notebooks/planner_curriculum.py``'s ``score``:
``TeamGRPOTrainer.rollout``, its sandbox and rewards), and write every plan's text and pass share (share of its
programs that pass every test) to a JSON file. ``--offset`` / ``--limit`` take a slice of the problems, so two
processes can score two halves; each batch of ``--batch`` problems is seeded by its position in the whole file
(``1000 * (seed + 1) + k``, as ``planner_curriculum.py``), so the halves together draw what one process would
(batches keep their problems when ``--offset`` is a multiple of ``--batch``).

``build``: from the score files, for each problem the plans as training targets (the text the Coder was given,
``TeamGRPOTrainer.plan_for_coder``, wrapped by ``format_plan``: the row the SFT data builder writes for a gold plan),
identical targets pooled (their pass shares averaged, as ``grpo.team.pool_identical_plans`` pools rewards). A problem
gets a verified plan when its best target's pass share is strictly above the mean of its other targets' shares (so it
needs two distinct targets and a spread; ties for the best: the most often sampled, then the first sampled), or with
``--keep pass`` when its best target's pass share is at least ``--min-share`` (a Planner that writes one plan every
time keeps it when the Coder passes with it: the rule for a Planner that is mostly right). Writes

- ``--verified``: one row a kept problem, its verified plan (``planner.jsonl``'s shape: ``prompt`` =
  ``planner_prompt(problem)``, ``completion`` = the plan, ``task_id``, ``source``, ``split``, ``provenance``);
- ``--random``: the same problems, each with one of its sampled plans drawn uniformly (``--seed``), without the
  Coder: the control's rows (it may be the verified plan by chance);
- ``--summary``: counts, how often each file's plan is the gold plan (the rl row's ``plan``), pass shares;
- optionally ``--gold-same``: the kept problems' gold plans, and ``--gold-all``: every scored problem's gold plan (the
  controls that hand the Planner the answers).

Every file written is checked by reading it with ``corecode.training.ptx.read_ptx_rows`` (the trainer's reader).

Usage (OMP_NUM_THREADS=1; a clone whose data/processed holds the rl split):
  PYTHONPATH=/tmp/ei python notebooks/planner_expert_iteration.py score --root /tmp/ei \
      --planner data/checkpoints/sft_planner --coder <grpo_coder> --offset 0 --limit 304 --out out/score_a.json
  PYTHONPATH=/tmp/ei python notebooks/planner_expert_iteration.py build --root /tmp/ei \
      --scores out/score_a.json out/score_b.json --verified out/verified.jsonl --random out/random.jsonl \
      --summary out/build.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="sample and score plans")
    s.add_argument("--root", default=".", help="repository clone to run in (params.yaml, data/processed)")
    s.add_argument("--planner", required=True)
    s.add_argument("--coder", required=True)
    s.add_argument("--plans", type=int, default=4)
    s.add_argument("--programs", type=int, default=4)
    s.add_argument("--batch", type=int, default=8)
    s.add_argument("--planner-temperature", type=float, default=0.7)
    s.add_argument("--offset", type=int, default=0)
    s.add_argument("--limit", type=int, default=0, help="problems from --offset (0: to the end)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--set", action="append", default=[], help="extra params override KEY=VALUE (repeatable)")
    s.add_argument("--out", required=True, help="per-problem plans and pass shares (JSON)")
    b = sub.add_parser("build", help="write the verified and the random-own-plans ptx files")
    b.add_argument("--root", default=".")
    b.add_argument("--scores", nargs="+", required=True)
    b.add_argument("--problems", default="data/processed/composite_rl.jsonl")
    b.add_argument("--seed", type=int, default=0, help="the random control's draw")
    b.add_argument(
        "--keep",
        choices=("spread", "pass"),
        default="spread",
        help="spread: the best target beats the mean of the others; pass: the best target's share >= --min-share",
    )
    b.add_argument("--min-share", type=float, default=0.5, help="--keep pass: the least pass share kept")
    b.add_argument("--gold-same", help="also write the kept problems' gold plans (the same problems' answers)")
    b.add_argument("--gold-all", help="also write every scored problem's gold plan (imitation of them all)")
    b.add_argument("--verified", required=True)
    b.add_argument("--random", required=True)
    b.add_argument("--summary", required=True)
    return ap.parse_args(argv)


def score_main(args):
    import planner_curriculum as pc

    out = Path(args.out).resolve()
    os.chdir(args.root)
    t0 = time.perf_counter()
    trainer, sandbox, problems, cfg = pc.build_trainer(args)
    end = args.offset + args.limit if args.limit else len(problems)
    print(
        f"# problems {args.offset}-{min(end, len(problems)) - 1} of {len(problems)} ({cfg.train_problems}); "
        f"{cfg.num_plans} plans x {cfg.num_programs} programs, Planner T={cfg.role_model('planner').temperature}, "
        f"Coder T={cfg.role_model('coder').temperature}; load {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    rows = pc.score_range(trainer, sandbox, problems, args.batch, args.seed, args.offset, min(end, len(problems)))
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in vars(args).items()}
    out.write_text(json.dumps({"args": meta, "seconds": time.perf_counter() - t0, "problems": rows}, indent=1))
    print(f"wrote {len(rows)} problems to {out} in {time.perf_counter() - t0:.0f} s")


def target(text: str) -> str | None:
    """The training target of a sampled plan: what the Coder was given, in the SFT rows' plan format."""
    from corecode.agents.prompts import format_plan
    from corecode.training.team_grpo import TeamGRPOTrainer

    body = TeamGRPOTrainer.plan_for_coder(text)
    return format_plan(body) if body else None


def select(plans: list[str | None], shares: list[float], keep: str = "spread", min_share: float = 0.5):
    """(index of the verified plan or None, pooled shares by target). ``spread``: the best distinct target when its
    pooled share is strictly above the mean of the other targets' pooled shares. ``pass``: the best target when its
    pooled share is at least ``min_share``, also when it is the only one (a Planner that writes one plan four times)."""
    by: dict[str, list[int]] = {}
    for i, t in enumerate(plans):
        if t is not None:
            by.setdefault(t, []).append(i)
    pooled = {t: sum(shares[i] for i in idx) / len(idx) for t, idx in by.items()}
    if not pooled or (keep == "spread" and len(pooled) < 2):
        return None, pooled
    best = max(pooled, key=lambda t: (pooled[t], len(by[t]), -by[t][0]))
    if keep == "pass":
        return (by[best][0] if pooled[best] >= min_share else None), pooled
    if pooled[best] > mean([v for t, v in pooled.items() if t != best]) + 1e-9:
        return by[best][0], pooled
    return None, pooled


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def planner_row(problem, completion: str, provenance: str) -> dict:
    """``corecode.data.build``'s planner row for a problem and a plan (there: the gold plan)."""
    from corecode.agents.prompts import planner_prompt

    meta = {"task_id": problem.task_id, "source": problem.source, "split": problem.split, "provenance": provenance}
    return {"prompt": planner_prompt(problem), "completion": completion, **meta}


def read_scores(path: str) -> list[dict]:
    """The per-problem rows of a ``score`` output; a missing or malformed file stops with one line naming it."""
    try:
        rows = json.loads(Path(path).read_text())["problems"]
        if not all({"task_id", "plans", "pass_share"} <= set(r) for r in rows):
            raise KeyError("a row without task_id, plans and pass_share")
        return rows
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: not a score file of this script ({type(e).__name__}: {e})") from None


def build_main(args):
    from corecode.agents.prompts import format_plan
    from corecode.data.io import read_problems
    from corecode.training.ptx import read_ptx_rows

    os.chdir(args.root)
    try:
        problems = {p.task_id: p for p in read_problems(args.problems)}
    except (OSError, ValueError) as e:
        raise SystemExit(str(e)) from None
    if any(p.split == "test" for p in problems.values()):
        raise SystemExit("test problems")
    scored = [r for f in args.scores for r in read_scores(f)]
    ids = [r["task_id"] for r in scored]
    if len(set(ids)) != len(ids):
        raise SystemExit("a problem scored twice")
    missing = [i for i in ids if i not in problems]
    if missing:
        raise SystemExit(f"{args.problems}: has no {missing[0]} (and {len(missing) - 1} more) of the score files")
    rng = random.Random(f"{args.seed}-random-own-plan")
    verified, control, gold_same, gold_all, per = [], [], [], [], []
    for r in scored:
        p = problems[r["task_id"]]
        plans = [target(t) for t in r["plans"]]
        shares = r["pass_share"]
        best, pooled = select(plans, shares, args.keep, args.min_share)
        gold = format_plan(p.plan) if p.plan else None
        gold_row = planner_row(p, gold, "expert-iteration:gold-plan") if gold else None
        if gold_row:
            gold_all.append(gold_row)
        rec = {
            "task_id": p.task_id,
            "distinct": len(pooled),
            "mean_share": sum(shares) / len(shares),
            "gold_sampled": gold in plans,
            "gold_share": pooled.get(gold),
        }
        if best is not None:
            pick = rng.choice([i for i, t in enumerate(plans) if t is not None])
            verified.append(planner_row(p, plans[best], "expert-iteration:verified"))
            control.append(planner_row(p, plans[pick], "expert-iteration:random-own-plan"))
            if gold_row:
                gold_same.append(gold_row)
            others = [v for t, v in pooled.items() if t != plans[best]]
            rec.update(
                best_share=pooled[plans[best]],
                others_mean=mean(others),
                verified_is_gold=plans[best] == gold,
                random_is_gold=plans[pick] == gold,
                random_is_verified=plans[pick] == plans[best],
                random_share=pooled[plans[pick]],
            )
        per.append(rec)
    files = [(args.verified, verified), (args.random, control), (args.gold_same, gold_same), (args.gold_all, gold_all)]
    for path, rows in [(f, rows) for f, rows in files if f]:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("".join(json.dumps(x) + "\n" for x in rows))
        assert len(read_ptx_rows(path, "planner")) == len(rows)
    kept = [x for x in per if "best_share" in x]
    n, k = len(per), max(len(kept), 1)
    summary = {
        "problems": n,
        "kept": len(kept),
        "one_target": sum(x["distinct"] < 2 for x in per),
        "plan_accuracy": sum(x["mean_share"] for x in per) / n,
        "all_fail": sum(x["mean_share"] == 0 for x in per),
        "gold_sampled": sum(x["gold_sampled"] for x in per),
        "gold_sampled_kept": sum(x["gold_sampled"] for x in kept),
        "verified_is_gold": sum(x["verified_is_gold"] for x in kept),
        "random_is_gold": sum(x["random_is_gold"] for x in kept),
        "random_is_verified": sum(x["random_is_verified"] for x in kept),
        "verified_share_mean": sum(x["best_share"] for x in kept) / k,
        "others_share_mean": mean([x["others_mean"] for x in kept if x["others_mean"] is not None]),
        "random_share_mean": sum(x["random_share"] for x in kept) / k,
        "verified_share_1": sum(x["best_share"] == 1 for x in kept),
        "keep": args.keep,
        "gold_same_rows": len(gold_same),
        "distinct_targets_mean": sum(x["distinct"] for x in per) / n,
    }
    Path(args.summary).write_text(json.dumps({"summary": summary, "problems": per}, indent=1))
    print(json.dumps(summary, indent=1))


def main(argv=None):
    args = parse_args(argv)
    score_main(args) if args.cmd == "score" else build_main(args)


if __name__ == "__main__":
    main()
