"""What a perfect Planner could give: a team's Coder handed each problem's gold plan, scored on the dev split by
composition kind, beside the team as it plans for itself (notebooks/2026-11-29-22-gold-plans-in-the-planner-group.md).

    cd /tmp/freshrun && python /work/main/notebooks/coder_with_gold_plans.py --method planner_coder_sft \
        --team-eval data/reports/eval/planner_coder_sft/composite_dev.jsonl

The Coder samples as `corecode evaluate` samples it (the team from `agents.teams[--method]`, the params' seed, one
program per problem), and the sandbox scores it as evaluation does. `--team-eval` is that team's own evaluation on the
same problems (its per-problem JSONL), for the side-by-side table; without it the team plans and codes for itself here
too (the rl split, say, which evaluation never reads). The gold-plan rate counts its plans equal to the gold plan up to
whitespace. A file of test problems is refused.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rl_longer_dev import KINDS, kind, norm  # noqa: E402  (this directory: the dev sweep's kinds and plan match)

from corecode.agents.factory import build_team, model_generator_factory  # noqa: E402
from corecode.cli_common import load_cli_params  # noqa: E402
from corecode.data.io import read_jsonl, read_problems  # noqa: E402
from corecode.evaluation.eval_samples import evaluate_samples  # noqa: E402
from corecode.sandbox import Sandbox  # noqa: E402


def read_own(path: Path, problems) -> dict[str, dict]:
    """The team's own evaluation rows by task id; every problem must have one."""
    own = {r["task_id"]: r for r in read_jsonl(path)}
    missing = [p.task_id for p in problems if p.task_id not in own]
    if missing:
        sys.exit(f"{path}: no row for {len(missing)} of the problems (first: {missing[0]})")
    return own


def solve_own(team, problems, sandbox) -> dict[str, dict]:
    """The team planning and coding for itself, one program per problem: rows like an evaluation's."""
    attempts = team.solve(problems, 1)
    samples = {p.task_id: [a[0].program] for p, a in zip(problems, attempts)}
    results, _ = evaluate_samples(problems, samples, sandbox, ks=[1])
    return {
        p.task_id: {"pass_at_1": float(results[p.task_id][0].passed), "plan": a[0].plan}
        for p, a in zip(problems, attempts)
    }


def share(count: float, total: float) -> str:
    return f"{100 * count / total:.1f}" if total else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--method", default="planner_coder_sft", help="A planner_coder team of agents.teams.")
    ap.add_argument("--dev", type=Path, default=Path("data/processed/composite_dev.jsonl"))
    ap.add_argument("--team-eval", type=Path, help="The team's own per-problem evaluation on --dev (else run here).")
    args = ap.parse_args()

    params = load_cli_params(args.params)
    problems = read_problems(args.dev)
    if any(p.split == "test" for p in problems):
        sys.exit(f"{args.dev}: holds test-split problems; this script never reads a test split")
    team = build_team(args.method, params, model_generator_factory(params), seed=params.seed)
    with Sandbox(params.sandbox) as sandbox:
        own = read_own(args.team_eval, problems) if args.team_eval else solve_own(team, problems, sandbox)
        nested = team.code(problems, [[p.plan] for p in problems], 1)
        samples = {p.task_id: [per_plan[0][0].program] for p, per_plan in zip(problems, nested)}
        results, _ = evaluate_samples(problems, samples, sandbox, ks=[1])

    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for p in problems:
        res = results[p.task_id]
        for k in (kind(p.tags), "all"):
            r = rows[k]
            r["n"] += 1
            r["gold_plan"] += float(res[0].passed)
            r["own_plan"] += own[p.task_id]["pass_at_1"]
            gold = norm(own[p.task_id].get("plan") or "") == norm(p.plan or "")
            r["own_gold_rate"] += float(gold)
            r["pass_own_gold" if gold else "pass_own_other"] += own[p.task_id]["pass_at_1"]
    print(f"{args.method} on {args.dev} ({len(problems)} problems), pass@1 (%)")
    print("| kind | problems | own plans | gold plans | gain | own plan is gold | own plan gold: pass | else: pass |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in [*KINDS, "other", "all"]:
        if k in rows:
            r, n = rows[k], rows[k]["n"]
            own_pct, gold_pct = 100 * r["own_plan"] / n, 100 * r["gold_plan"] / n
            n_gold = r["own_gold_rate"]
            passes = f"{share(r['pass_own_gold'], n_gold)} | {share(r['pass_own_other'], n - n_gold)}"
            print(
                f"| {k} | {int(n)} | {own_pct:.1f} | {gold_pct:.1f} | {gold_pct - own_pct:+.1f} | "
                f"{100 * n_gold / n:.1f} | {passes} |"
            )


if __name__ == "__main__":
    main()
