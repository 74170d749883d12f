"""Is the Planner's GRPO gradient signal or noise? The cosine between its policy gradients from independent batches.

Round 3 of the Planner sweep (notebooks/2026-11-27-12) found that 65-77% of the Planner's GRPO groups have zero reward
variance (a problem's plans are nearly the same text), so each step's Planner gradient rests on 2-3 groups, and
guessed that this gradient is noise. This script measures it directly, at fixed weights, with the trainer's own code
(``TeamGRPOTrainer.rollout``: sampling, sandbox scoring, rewards, pooling of identical plans, ``group_advantages``;
``policy_loss_backward`` with the loss configuration ``_update`` builds; no ptx term, no optimizer step):

- For each of K pairs it draws four rollout batches: A (``--problems`` problems from the trainer's train split, the
  rl split by default), B (as many other problems, never used by another batch), A2 (A's problems sampled again
  with another seed) and A3 (A's problems with A's plans replayed, the Coder's programs sampled again). For each
  role and batch it takes the gradient of the role's GRPO loss (the RL term times ``rl_coef``, exactly what one
  update adds before the ptx term), flattened over the role's trainable weights.
- It prints, per pair and role, cos(A, B) (different problems: does the gradient point somewhere that holds across
  problems?), cos(A, A2) (the same problems, fresh samples: is the gradient a reproducible property of those
  problems, or of one draw's noise?) and cos(A, A3) (the same plans scored again: is the Planner's reward, which
  rests on a few programs, reproducible?), the share of zero-variance groups, the number of groups that carry a
  gradient, and for A and A3 how often the better plan of a group (both draws with a spread) stays the better one.
- The null: each batch's gradient is the sum of its groups' gradients g_j (a group's advantages sum to 0). Flipping
  the sign of every group's advantages at random (independently per group and per batch) keeps each group's size,
  spread and plan texts but destroys any relation between the reward and the direction of the update; the cosine
  between two sign-flipped batch gradients is what chance alone gives with that many groups of that size. The script
  keeps each batch's per-group gradients only as Gram matrices (<g_i, g_j>, within and across batches), so the null
  is exact for any number of flips (``--flips``): for each flip draw it takes the mean cosine over the K pairs, and
  p is the share of null means at least the observed mean (one-sided). A 95% CI of the observed mean: percentile
  bootstrap over pairs.
- The cosine of two batch gradients grows with the number of groups behind them when the groups share a direction,
  and the Planner has fewer such groups than the Coder; so it also prints the mean cosine between one group's
  gradient in a batch and one group's in the other (all pairs of groups), a per-group signal, with the same null.
- A check: for pair 0's batch A the group rows' sum is compared with the gradient of one ``policy_loss_backward``
  call over the whole batch (cosine 1 expected).

Signal: cos(A, B) clearly above 0 and above the null (the Coder's gradient is the reference for what a role that
learns looks like). Noise: cos around 0, inside the null's spread.

Usage (one process; OMP_NUM_THREADS=1 on the 2-core box), from a clone whose data/processed holds the rl split:
  PYTHONPATH=/tmp/gcos OMP_NUM_THREADS=1 python notebooks/planner_gradient_cosine.py --root /tmp/gcos \
      --planner data/checkpoints/sft_planner --coder data/checkpoints/sft_coder --pairs 16 --out result.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="repository clone to run in (params.yaml, data/processed)")
    ap.add_argument("--planner", required=True, help="Planner checkpoint")
    ap.add_argument("--coder", required=True, help="Coder checkpoint")
    ap.add_argument("--pairs", type=int, default=8, help="K: pairs of independent batches")
    ap.add_argument("--problems", type=int, default=8, help="problems a batch (grpo.team.problems_per_step)")
    ap.add_argument("--plans", type=int, default=2, help="plans a problem (grpo.team.num_plans)")
    ap.add_argument("--programs", type=int, default=4, help="programs a plan (grpo.team.num_programs)")
    ap.add_argument("--planner-temperature", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flips", type=int, default=10_000, help="sign-flip draws of the null")
    ap.add_argument("--set", action="append", default=[], help="extra params override KEY=VALUE (repeatable)")
    ap.add_argument("--out", help="write the per-pair results and summary here (JSON)")
    return ap.parse_args(argv)


def build_trainer(args):
    """The trainer as ``team_grpo._run`` builds it (same loaders, sandbox and constructor), for the recipe's shape."""
    from transformers import set_seed

    from corecode.config import load_params
    from corecode.data.io import read_problems
    from corecode.sandbox import Sandbox
    from corecode.training.data_parallel import take_host_share
    from corecode.training.team_grpo import TeamGRPOTrainer, _load_roles

    roles = {"planner": {"temperature": args.planner_temperature}}
    overrides = [
        f"seed={args.seed}",
        f"grpo.team.planner_model={args.planner}",
        f"grpo.team.coder_model={args.coder}",
        f"grpo.team.problems_per_step={args.problems}",
        f"grpo.team.num_plans={args.plans}",
        f"grpo.team.num_programs={args.programs}",
        "grpo.team.pool_identical_plans=true",
        "grpo.team.frozen_roles=[]",
        "grpo.team.ptx_coef=0.0",  # the RL term only: no SFT rows loaded, none added
        "grpo.team.eval_problems=0",
        f"grpo.team.roles={json.dumps(roles)}",
        "sandbox.workers=1",
        *args.set,
    ]
    params = load_params(Path("params.yaml"), overrides)
    cfg = params.grpo.team
    set_seed(params.seed)
    problems = read_problems(cfg.train_problems)
    if any(p.split == "test" for p in problems):
        raise SystemExit(f"{cfg.train_problems}: test problems; use the rl or dev split")
    keys = ["grpo.team.planner_model", "grpo.team.coder_model"]
    first, second = _load_roles(cfg, ("planner", "coder"), (cfg.planner_model, cfg.coder_model), keys)
    sandbox = Sandbox(take_host_share(params.sandbox))
    trainer = TeamGRPOTrainer(
        cfg, first, second, problems, sandbox, params.seed, [], chat=params.generation.use_chat_template
    )
    return trainer, sandbox, problems, cfg


def role_weights(trainer, role):
    return [w for group in trainer.roles[role].optimizer.param_groups for w in group["params"]]


def group_gradients(trainer, role, samples, advantages, group_size):
    """Rows: the gradient of ``role``'s GRPO loss from one group's samples alone (its advantages kept, every other
    sample's set to 0, which ``skip_zero_advantage`` leaves out of the passes but keeps in the normalisers), with the
    loss configuration ``_update`` uses; their sum is the batch's gradient. Groups whose advantages are all 0 (no
    reward spread) contribute nothing and get no row."""
    import torch

    from corecode.training.rollout import policy_loss_backward

    trainer.activate(role)
    r = trainer.roles[role]
    loss_cfg = trainer.role_loss_config(role)
    if loss_cfg.beta:
        raise SystemExit(f"{role}: beta must be 0 (the RL term's gradient is measured without a KL term)")
    weights = role_weights(trainer, role)
    advantages = advantages * trainer.cfg.rl_coef
    rows = []
    for start in range(0, len(samples), group_size):
        if not bool((advantages[start : start + group_size] != 0).any()):
            continue
        only = torch.zeros_like(advantages)
        only[start : start + group_size] = advantages[start : start + group_size]
        r.optimizer.zero_grad(set_to_none=True)
        policy_loss_backward(
            r.model,
            samples,
            only,
            loss_cfg,
            r.tokenizer.pad_token_id,
            trainer.cfg.micro_batch_size,
            r.ref_model,
            backward=trainer.acc.backward,
            skip_zero_advantage=True,
        )
        rows.append(torch.cat([(w.grad if w.grad is not None else torch.zeros_like(w)).flatten() for w in weights]))
        r.optimizer.zero_grad(set_to_none=True)
    if not rows:
        return torch.zeros(0, sum(w.numel() for w in weights), dtype=torch.float64)
    return torch.stack(rows).double()


def full_gradient(trainer, role, samples, advantages):
    """The batch's gradient in one call, as ``_update`` takes it (for the check that the group rows sum to it)."""
    import torch

    from corecode.training.rollout import policy_loss_backward

    trainer.activate(role)
    r = trainer.roles[role]
    loss_cfg = trainer.role_loss_config(role)
    r.optimizer.zero_grad(set_to_none=True)
    policy_loss_backward(
        r.model,
        samples,
        advantages * trainer.cfg.rl_coef,
        loss_cfg,
        r.tokenizer.pad_token_id,
        trainer.cfg.micro_batch_size,
        r.ref_model,
        backward=trainer.acc.backward,
        skip_zero_advantage=trainer.cfg.skip_zero_advantage,
    )
    out = torch.cat(
        [(w.grad if w.grad is not None else torch.zeros_like(w)).flatten() for w in role_weights(trainer, role)]
    )
    r.optimizer.zero_grad(set_to_none=True)
    return out.double()


def batch(trainer, problems, seed, cfg, check=False, replay=None):
    """One rollout of ``problems`` with the sampling RNG at ``seed``; per role its group-gradient rows and stats.
    The Planner's sampled chunks are kept (``plan_chunks``); ``replay``: give the rollout those plans again instead of
    sampling new ones (the Coder samples fresh programs for them)."""
    import torch

    torch.manual_seed(seed)
    random.seed(seed)
    sample, kept = trainer.sample, []

    def planner_replay(role, prompts, n, greedy=False):
        if role != "planner":
            return sample(role, prompts, n, greedy)
        if replay is not None:
            return iter(replay)
        kept.extend(sample(role, prompts, n, greedy))
        return iter(kept)

    trainer.sample = planner_replay
    try:
        per_role, metrics = trainer.rollout(problems, {})
    finally:
        del trainer.sample  # the class's method again
    out = {"metrics": {k: metrics[k] for k in sorted(metrics) if not k.endswith("_std")}, "plan_chunks": kept}
    out["planner_adv"] = per_role["planner"][1].clone()
    for role, size in (("planner", cfg.num_plans), ("coder", cfg.num_programs)):
        samples, adv = per_role[role]
        rows = group_gradients(trainer, role, samples, adv, size)
        out[role] = rows
        if check:
            full = full_gradient(trainer, role, samples, adv)
            total = rows.sum(0) if len(rows) else torch.zeros_like(full)
            denom = float(full.norm() * total.norm()) or 1.0
            out[f"{role}_check_cos"] = float(full @ total) / denom
    return out


def cosine_from_gram(gab, gaa, gbb, s=None, t=None):
    """cos(sum_i s_i a_i, sum_j t_j b_j) from the Gram matrices (s, t: signs; None = all +1). nan if a side is 0."""
    import torch

    s = torch.ones(gaa.shape[0], dtype=gaa.dtype) if s is None else s
    t = torch.ones(gbb.shape[0], dtype=gbb.dtype) if t is None else t
    num = s @ gab @ t
    den = torch.sqrt((s @ gaa @ s) * (t @ gbb @ t))
    return num / den


def flip_cosines(gab, gaa, gbb, flips, gen):
    """Null cosines: ``flips`` draws of independent random signs per group on each side."""
    import torch

    if gaa.shape[0] == 0 or gbb.shape[0] == 0:
        return torch.full((flips,), float("nan"), dtype=torch.float64)
    s = torch.randint(0, 2, (flips, gaa.shape[0]), generator=gen).double() * 2 - 1
    t = torch.randint(0, 2, (flips, gbb.shape[0]), generator=gen).double() * 2 - 1
    num = ((s @ gab) * t).sum(1)
    den = torch.sqrt(((s @ gaa) * s).sum(1) * ((t @ gbb) * t).sum(1))
    return num / den


def group_cosines(gab, gaa, gbb, flips, gen):
    """The mean cosine between one group's gradient of a batch and one of the other (every pair of groups: a signal
    per group, whatever the number of groups), and its sign-flip null (``flips`` draws)."""
    import torch

    if gaa.shape[0] == 0 or gbb.shape[0] == 0:
        return float("nan"), torch.full((flips,), float("nan"), dtype=torch.float64)
    c = gab / torch.outer(gaa.diagonal().sqrt(), gbb.diagonal().sqrt())
    s = torch.randint(0, 2, (flips, gaa.shape[0]), generator=gen).double() * 2 - 1
    t = torch.randint(0, 2, (flips, gbb.shape[0]), generator=gen).double() * 2 - 1
    return float(c.mean()), ((s @ c) * t).sum(1) / c.numel()


def summarise(values, null_rows, boot=10_000, seed=0):
    """Mean, percentile-bootstrap 95% CI over pairs, and the sign-flip null of the mean (its 2.5/97.5 percentiles,
    one-sided p = share of null means >= the observed mean). Pairs with a side of no gradient (nan) are dropped."""
    import torch

    keep = [i for i, v in enumerate(values) if not math.isnan(v)]
    if not keep:
        return {"n": 0}
    x = torch.tensor([values[i] for i in keep], dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, len(x), (boot, len(x)), generator=gen)
    means = x[idx].mean(1)
    null = torch.stack([null_rows[i] for i in keep]).mean(0)  # [flips]: the mean over pairs of one flip draw each
    return {
        "n": len(x),
        "mean": float(x.mean()),
        "sd": float(x.std()) if len(x) > 1 else 0.0,
        "ci95": [float(means.quantile(0.025)), float(means.quantile(0.975))],
        "null_mean": float(null.mean()),
        "null_ci95": [float(null.quantile(0.025)), float(null.quantile(0.975))],
        "null_sd_single": float(torch.stack([null_rows[i] for i in keep]).std()),
        "p_null": float((null >= x.mean()).double().mean()),
    }


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out).resolve() if args.out else None
    os.chdir(args.root)
    sys.path.insert(0, str(Path(args.root).resolve()))
    import torch

    t0 = time.perf_counter()
    trainer, sandbox, problems, cfg = build_trainer(args)
    need = 2 * args.pairs * args.problems
    if need > len(problems):
        raise SystemExit(f"{need} problems needed, the split has {len(problems)}")
    order = random.Random(f"gradient-cosine-{args.seed}").sample(range(len(problems)), need)
    print(
        f"# {len(problems)} problems in {cfg.train_problems}; K={args.pairs} pairs of {args.problems} problems x "
        f"{cfg.num_plans} plans x {cfg.num_programs} programs; Planner T={cfg.role_model('planner').temperature}, "
        f"Coder T={cfg.role_model('coder').temperature}; load {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    gen = torch.Generator().manual_seed(args.seed)
    comparisons = ("AB", "AA2", "AA3")
    results, nulls = [], {(role, c): [] for role in ("planner", "coder") for c in comparisons + ("gAB", "gAA2", "gAA3")}
    try:
        for k in range(args.pairs):
            tk = time.perf_counter()
            base = 2 * k * args.problems
            probs_a = [problems[i] for i in order[base : base + args.problems]]
            probs_b = [problems[i] for i in order[base + args.problems : base + 2 * args.problems]]
            seed = 1000 * (args.seed + 1) + 10 * k
            a = batch(trainer, probs_a, seed, cfg, check=(k == 0))
            b = batch(trainer, probs_b, seed + 1, cfg)
            a2 = batch(trainer, probs_a, seed + 2, cfg)
            a3 = batch(trainer, probs_a, seed + 3, cfg, replay=a["plan_chunks"])
            row = {"pair": k, "seconds": 0.0}
            for role in ("planner", "coder"):
                ga, gb, ga2, ga3 = a[role], b[role], a2[role], a3[role]
                gaa, gbb, ga2a2, ga3a3 = ga @ ga.T, gb @ gb.T, ga2 @ ga2.T, ga3 @ ga3.T
                for name, (gx, gxx, gyy, gy) in {
                    "AB": (ga, gaa, gbb, gb),
                    "AA2": (ga, gaa, ga2a2, ga2),
                    "AA3": (ga, gaa, ga3a3, ga3),
                }.items():
                    if len(gx) and len(gy):
                        cos = float(cosine_from_gram(gx @ gy.T, gxx, gyy))
                    else:
                        cos = float("nan")
                    row[f"{role}_cos_{name}"] = cos
                    nulls[(role, name)].append(flip_cosines(gx @ gy.T, gxx, gyy, args.flips, gen))
                    gcos, gnull = group_cosines(gx @ gy.T, gxx, gyy, args.flips, gen)
                    row[f"{role}_gcos_{name}"] = gcos
                    nulls[(role, f"g{name}")].append(gnull)
                for tag, bt in (("A", a), ("B", b), ("A2", a2), ("A3", a3)):
                    row[f"{role}_groups_{tag}"] = int(len(bt[role]))
                    row[f"{role}_zero_std_frac_{tag}"] = bt["metrics"][f"{role}/zero_std_frac"]
                    norm = float(bt[role].sum(0).norm()) if len(bt[role]) else 0.0
                    row[f"{role}_grad_norm_{tag}"] = norm
                if k == 0:
                    row[f"{role}_check_cos"] = a[f"{role}_check_cos"]
            for tag, bt in (("A", a), ("B", b), ("A2", a2), ("A3", a3)):
                row[f"metrics_{tag}"] = bt["metrics"]
            # the same plans scored twice (A, A3): does the better plan of a group stay the better one?
            first_a, first_a3 = a["planner_adv"][:: cfg.num_plans], a3["planner_adv"][:: cfg.num_plans]
            both = (first_a != 0) & (first_a3 != 0)
            row["planner_groups_both_AA3"] = int(both.sum())
            row["planner_sign_agree_AA3"] = int(((first_a > 0) == (first_a3 > 0))[both].sum())
            row["seconds"] = time.perf_counter() - tk
            results.append(row)
            print(
                f"pair {k}: planner cos AB {row['planner_cos_AB']:+.3f} AA2 {row['planner_cos_AA2']:+.3f} "
                f"AA3 {row['planner_cos_AA3']:+.3f} (groups A/B/A2/A3 "
                f"{'/'.join(str(row[f'planner_groups_{t}']) for t in ('A', 'B', 'A2', 'A3'))} of {args.problems}; "
                f"better plan kept {row['planner_sign_agree_AA3']}/{row['planner_groups_both_AA3']}) | coder cos AB "
                f"{row['coder_cos_AB']:+.3f} AA2 {row['coder_cos_AA2']:+.3f} AA3 {row['coder_cos_AA3']:+.3f} (groups "
                f"{'/'.join(str(row[f'coder_groups_{t}']) for t in ('A', 'B', 'A2', 'A3'))} of "
                f"{args.problems * cfg.num_plans}) | {row['seconds']:.0f} s",
                flush=True,
            )
    finally:
        trainer.close()
        if hasattr(sandbox, "close"):
            sandbox.close()
    summary = {}
    for role in ("planner", "coder"):
        for name in comparisons:
            values = [r[f"{role}_cos_{name}"] for r in results]
            summary[f"{role}_{name}"] = summarise(values, nulls[(role, name)], seed=args.seed)
            values = [r[f"{role}_gcos_{name}"] for r in results]
            summary[f"{role}_g{name}"] = summarise(values, nulls[(role, f"g{name}")], seed=args.seed)
        for what in ("zero_std_frac", "groups"):
            vals = [r[f"{role}_{what}_{t}"] for r in results for t in ("A", "B", "A2", "A3")]
            summary[f"{role}_{what}_mean"] = sum(vals) / len(vals)
    print(
        "\n| role | batches | pairs | mean cos | sd | 95% CI (bootstrap) | sign-flip null mean [95%] "
        "| p (null >= mean) |"
    )
    print("|---|---|---:|---:|---:|---|---|---:|")
    for role in ("planner", "coder"):
        for name, label in (
            ("AB", "A vs B (other problems)"),
            ("AA2", "A vs A2 (same problems, resampled)"),
            ("AA3", "A vs A3 (same problems and plans, new programs)"),
            ("gAB", "A vs B, group to group"),
            ("gAA2", "A vs A2, group to group"),
            ("gAA3", "A vs A3, group to group"),
        ):
            s = summary[f"{role}_{name}"]
            if not s["n"]:
                print(f"| {role} | {label} | 0 | | | | | |")
                continue
            print(
                f"| {role} | {label} | {s['n']} | {s['mean']:+.3f} | {s['sd']:.3f} | [{s['ci95'][0]:+.3f}, "
                f"{s['ci95'][1]:+.3f}] | {s['null_mean']:+.3f} [{s['null_ci95'][0]:+.3f}, {s['null_ci95'][1]:+.3f}] "
                f"| {s['p_null']:.4f} |"
            )
    agree = sum(r["planner_sign_agree_AA3"] for r in results)
    both = sum(r["planner_groups_both_AA3"] for r in results)
    summary["planner_sign_agree_AA3"] = [agree, both]
    print(f"planner, same plans scored twice (A, A3): the better plan stays better in {agree} of {both} groups")
    for role in ("planner", "coder"):
        print(
            f"{role}: zero-variance share {summary[f'{role}_zero_std_frac_mean']:.3f}, groups with a gradient a batch "
            f"{summary[f'{role}_groups_mean']:.2f}"
        )
    print(
        f"check (group rows sum to the batch gradient, pair 0 batch A): planner "
        f"{results[0].get('planner_check_cos')}, coder {results[0].get('coder_check_cos')}"
    )
    print(f"total {time.perf_counter() - t0:.0f} s")
    if out:
        out.write_text(json.dumps({"args": vars(args), "summary": summary, "pairs": results}, indent=1))


if __name__ == "__main__":
    main()
