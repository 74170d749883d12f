"""A curriculum for the Planner's GRPO: keep the rl problems on which the Coder's success depends on the plan.

Notebooks 2026-11-27-12, 2026-11-28-02 and 2026-11-28-06 found that the Planner's GRPO gradient rests on 2-4
informative groups a step: on most problems every sampled plan gets the same reward (the Coder passes with all of
them or fails with all of them), so the group has zero reward variance and carries no gradient, and the few groups
that do carry one point in directions that do not come back when the same problems are sampled again. This script
pre-scores the training problems with a team, through the trainer's own rollout code (``TeamGRPOTrainer.rollout``:
the Planner's sampling at its training temperature, the Coder's programs for each plan, the sandbox, the rewards and
``group_advantages``, as ``notebooks/planner_gradient_cosine.py`` builds it), ``--plans`` plans a problem and
``--programs`` programs a plan, and keeps the problems where plan-level Coder success differs between plans: the
spread (the best distinct plan's share of passing programs minus the worst one's, identical plan texts pooled as
``grpo.team.pool_identical_plans`` pools them; 0 when all plans are one text) is above ``--min-spread`` (default 0:
any difference). The kept
problems are written, as the rows of the input file unchanged, to ``--out`` (a JSONL that ``grpo.team.train_problems``
can name); every problem's figures (each plan's pass share and Planner reward, distinct plan texts, spread) go to
``--stats``.

It also prints, for the whole split and for the kept problems, the zero-variance share of the Planner's groups at the
training shape of the earlier notebooks (2 plans a problem): the scored plans are taken in pairs (1-2, 3-4, ...) and a
pair with identical texts or equal Planner rewards (shaped: partial test credit, plan format) is a zero-variance group;
the same with pass shares in place of rewards is printed too. The kept problems are chosen on the same draws, so their
share is biased low (a problem whose plans differed by chance in this draw is kept); a fresh draw on the kept problems
(e.g. ``planner_gradient_cosine.py --set grpo.team.train_problems=<out>``) measures it without that bias. On the SFT
team of notebooks 2026-11-28-02/06 it kept 268 of the 600 rl problems (notebook 2026-11-28-10).

Usage (one process, OMP_NUM_THREADS=1 on the 2-core box), from a clone whose data/processed holds the rl split:
  PYTHONPATH=/tmp/curr OMP_NUM_THREADS=1 python notebooks/planner_curriculum.py --root /tmp/curr \
      --planner data/checkpoints/sft_planner --coder data/checkpoints/sft_coder --out out/rl_curriculum.jsonl \
      --stats out/rl_prescore.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="repository clone to run in (params.yaml, data/processed)")
    ap.add_argument("--planner", required=True, help="Planner checkpoint")
    ap.add_argument("--coder", required=True, help="Coder checkpoint")
    ap.add_argument("--plans", type=int, default=4, help="plans sampled a problem")
    ap.add_argument("--programs", type=int, default=4, help="programs sampled a plan")
    ap.add_argument("--batch", type=int, default=8, help="problems a rollout call")
    ap.add_argument("--planner-temperature", type=float, default=0.7)
    ap.add_argument("--min-spread", type=float, default=0.0, help="keep when best - worst plan pass share > this")
    ap.add_argument("--limit", type=int, default=0, help="score only the first N problems (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], help="extra params override KEY=VALUE (repeatable)")
    ap.add_argument("--out", required=True, help="the kept problems (JSONL rows of the input file)")
    ap.add_argument("--stats", help="per-problem figures (JSON)")
    return ap.parse_args(argv)


def build_trainer(args):
    """``planner_gradient_cosine.build_trainer`` with this script's shape (ptx off, pooled identical plans)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import planner_gradient_cosine as pgc

    ns = argparse.Namespace(
        planner=args.planner,
        coder=args.coder,
        problems=args.batch,
        plans=args.plans,
        programs=args.programs,
        planner_temperature=args.planner_temperature,
        seed=args.seed,
        set=args.set,
    )
    return pgc.build_trainer(ns)


def score(trainer, problems, seed):
    """One rollout of ``problems``; per problem its plans' texts, pass shares and Planner rewards (before pooling)."""
    import random

    import torch

    from corecode.training import team_grpo

    torch.manual_seed(seed)
    random.seed(seed)
    cfg = trainer.cfg
    sample, wait, pool, kept = trainer.sample, trainer.wait, team_grpo.pool_identical, {}

    def keep_plans(role, prompts, n, greedy=False):
        chunks = list(sample(role, prompts, n, greedy))
        # The rollout's first Planner call gives its plan groups; later ones (grpo.team.distinct_plan_tries) draw
        # replacements that the rollout writes into those same group lists, so the groups are read after it.
        if role == "planner" and "groups" not in kept:
            kept["groups"] = [g for chunk in chunks for g in chunk]
        return iter(chunks)

    def keep_results(futures, timer):
        kept["results"] = wait(futures, timer)
        return kept["results"]

    def keep_rewards(rewards, texts, group_size):  # the Planner's rewards as the rollout computed them
        kept["rewards"] = rewards.clone().float()
        return pool(rewards, texts, group_size)

    trainer.sample, trainer.wait, team_grpo.pool_identical = keep_plans, keep_results, keep_rewards
    try:
        per_role, metrics = trainer.rollout(problems, {})
    finally:
        del trainer.sample, trainer.wait  # the class's methods again
        team_grpo.pool_identical = pool
    kept["plans"] = [s.completion.text.strip() for g in kept["groups"] for s in g]
    passed = torch.tensor([float(r is not None and r.passed) for r in kept["results"]])
    share = passed.view(len(problems), cfg.num_plans, cfg.num_programs).mean(2)
    rewards = kept["rewards"].view(len(problems), cfg.num_plans)
    adv = per_role["planner"][1].view(len(problems), cfg.num_plans)
    rows = []
    for i, prob in enumerate(problems):
        texts = kept["plans"][i * cfg.num_plans : (i + 1) * cfg.num_plans]
        rows.append(
            {
                "task_id": prob.task_id,
                "pass_share": [round(float(x), 4) for x in share[i]],
                "planner_reward": [round(float(x), 4) for x in rewards[i]],
                "planner_adv": [round(float(x), 4) for x in adv[i]],
                "distinct_plans": len(set(texts)),
                "plans": texts,
            }
        )
    return rows, metrics


def score_range(trainer, sandbox, problems, batch: int, seed: int, start: int, end: int) -> list[dict]:
    """``score`` over problems[start:end] in batches of ``batch`` (sampling seed 1000 * (seed + 1) + the batch's first
    index), one progress line a batch; closes the trainer and the sandbox at the end, also on an error."""
    rows = []
    try:
        for k in range(start, end, batch):
            tk = time.perf_counter()
            got, metrics = score(trainer, problems[k : min(k + batch, end)], 1000 * (seed + 1) + k)
            rows.extend(got)
            print(
                f"problems {k}-{k + len(got) - 1}: plan accuracy {metrics['planner/plan_accuracy']:.3f}, "
                f"Planner zero-variance share {metrics['planner/zero_std_frac']:.3f} | "
                f"{time.perf_counter() - tk:.0f} s",
                flush=True,
            )
    finally:
        trainer.close()
        if hasattr(sandbox, "close"):
            sandbox.close()
    return rows


def pooled(values, texts):
    """Each distinct plan text's mean value (identical plans pooled, as ``grpo.team.pool_identical_plans``)."""
    by_text: dict[str, list[float]] = {}
    for v, t in zip(values, texts):
        by_text.setdefault(t, []).append(v)
    return [sum(v) / len(v) for v in by_text.values()]


def pair_zero_share(rows, key):
    """Zero-variance share of 2-plan groups (plans 1-2, 3-4, ...): identical texts, or equal ``key`` values."""
    zero = total = 0
    for r in rows:
        s, texts = r[key], r["plans"]
        for j in range(0, len(s) - 1, 2):
            total += 1
            zero += texts[j] == texts[j + 1] or abs(s[j] - s[j + 1]) < 1e-6
    return zero / max(total, 1)


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out).resolve()
    stats_out = Path(args.stats).resolve() if args.stats else None
    os.chdir(args.root)
    t0 = time.perf_counter()
    trainer, sandbox, problems, cfg = build_trainer(args)
    source = cfg.train_problems if isinstance(cfg.train_problems, str) else None
    if source is None:
        raise SystemExit("grpo.team.train_problems must name one JSONL")
    if args.limit:
        problems = problems[: args.limit]
    print(
        f"# {len(problems)} problems of {source}; {cfg.num_plans} plans x {cfg.num_programs} programs, Planner T="
        f"{cfg.role_model('planner').temperature}, Coder T={cfg.role_model('coder').temperature}; load "
        f"{time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    rows = score_range(trainer, sandbox, problems, args.batch, args.seed, 0, len(problems))
    for r in rows:
        share = pooled(r["pass_share"], r["plans"])
        r["spread"] = round(max(share) - min(share), 4)
        r["planner_zero_variance"] = all(a == 0 for a in r["planner_adv"])
        r["keep"] = r["spread"] > args.min_spread + 1e-9
    kept = [r for r in rows if r["keep"]]
    ids = {r["task_id"] for r in kept}
    lines = [line for line in Path(source).read_text().splitlines() if line.strip()]
    chosen = [line for line in lines if json.loads(line)["task_id"] in ids]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in chosen))
    n = len(rows)
    mean = sum(sum(r["pass_share"]) / len(r["pass_share"]) for r in rows) / max(n, 1)
    summary = {
        "problems": n,
        "kept": len(kept),
        "min_spread": args.min_spread,
        "plan_accuracy": mean,
        "all_fail": sum(max(r["pass_share"]) == 0 for r in rows),
        "all_pass": sum(min(r["pass_share"]) == 1 for r in rows),
        "spread_ge_0.5": sum(r["spread"] >= 0.5 for r in rows),
        "planner_zero_variance_4plans": sum(r["planner_zero_variance"] for r in rows) / max(n, 1),
        "planner_zero_variance_4plans_kept": sum(r["planner_zero_variance"] for r in kept) / max(len(kept), 1),
        "pair_zero_share_reward_all": pair_zero_share(rows, "planner_reward"),
        "pair_zero_share_reward_kept": pair_zero_share(kept, "planner_reward"),
        "pair_zero_share_pass_all": pair_zero_share(rows, "pass_share"),
        "pair_zero_share_pass_kept": pair_zero_share(kept, "pass_share"),
        "distinct_plans_mean": sum(r["distinct_plans"] for r in rows) / max(n, 1),
        "seconds": time.perf_counter() - t0,
    }
    print(json.dumps(summary, indent=1))
    print(f"wrote {len(chosen)} problems to {out}")
    if stats_out:
        stats_out.write_text(json.dumps({"args": vars(args), "summary": summary, "problems": rows}, indent=1))


if __name__ == "__main__":
    main()
