"""The large clean test over several seeds of the GRPO stage: pooled paired bootstraps of the teams that
`benchmarks/large_test.sh` scored, one output directory a seed
(notebooks/2026-11-30-25-the-longer-planner-sft-in-the-default.md).

    python notebooks/large_test_seeds.py /tmp/lt0/data/reports /tmp/lt1/data/reports /tmp/lt2/data/reports

Each directory holds `eval/planner_coder_{sft,grpo,ptx}/composite_test.jsonl` for the same problems. Problem-runs are
keyed seed:task_id and the SFT team's evaluation of each directory stands for its seed, as notebooks/rl_longer_dev.py
pools dev; the bootstrap resamples problems with the seeds fixed, so the per-seed deltas are printed beside it.
`--other DIR ...` (one a seed, the same seeds in the same order): another GRPO recipe's large-test directories, whose
`planner_coder_grpo` is compared as `other` with this one's GRPO team and control.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corecode.data.io import read_jsonl  # noqa: E402
from corecode.evaluation.stats import paired_bootstrap  # noqa: E402

TEAMS = ("sft", "grpo", "ptx")
PAIRS = (("grpo", "sft"), ("grpo", "ptx"), ("ptx", "sft"))


def read_team(reports: Path, team: str) -> dict[str, float]:
    """pass@1 by task id of one team's large-test evaluation."""
    path = reports / f"eval/planner_coder_{team}/composite_test.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path}: missing (run benchmarks/large_test.sh with that team's checkpoints)")
    return {r["task_id"]: r["pass_at_1"] for r in read_jsonl(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", type=Path, nargs="+", help="large_test.sh's data/reports, one a seed")
    ap.add_argument("--other", type=Path, nargs="+", default=[], help="another recipe's, the same seeds")
    args = ap.parse_args()
    if args.other and len(args.other) != len(args.reports):
        raise SystemExit(f"--other: {len(args.other)} directories for {len(args.reports)} seeds")
    runs = {t: [read_team(d, t) for d in args.reports] for t in TEAMS}
    pairs = PAIRS
    if args.other:
        runs["other"] = [read_team(d, "grpo") for d in args.other]
        pairs += (("other", "grpo"), ("other", "ptx"), ("other", "sft"))
    ids = set(runs["sft"][0])
    for t in runs:
        for d, r in zip(args.other if t == "other" else args.reports, runs[t]):
            if set(r) != ids:
                raise SystemExit(f"{d}: its {t} team scored other problems than {args.reports[0]}")

    def pooled(team: str) -> dict[str, float]:
        return {f"{s}:{t}": v for s, r in enumerate(runs[team]) for t, v in r.items()}

    print("| team | " + " | ".join(f"seed dir {i}" for i in range(len(args.reports))) + " |")
    print("|---|" + "---:|" * len(args.reports))
    for t in runs:
        print(f"| {t} | " + " | ".join(f"{100 * sum(r.values()) / len(r):.2f}" for r in runs[t]) + " |")
    print("\n| a > b | per seed, points (p) | pooled (95% CI; p) |\n|---|---|---|")
    for a, b in pairs:
        per = [paired_bootstrap(ra, rb, alternative="greater") for ra, rb in zip(runs[a], runs[b])]
        pa, pb = pooled(a), pooled(b)
        one, two = paired_bootstrap(pa, pb, alternative="greater"), paired_bootstrap(pa, pb)
        seeds = "; ".join(f"{100 * r.delta:+.2f} ({r.p_value:.4f})" for r in per)
        print(f"| {a} > {b} | {seeds} | {100 * one.delta:+.2f} ({100 * two.ci_low:+.2f} to {100 * two.ci_high:+.2f}; "
              f"{one.p_value:.4f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
