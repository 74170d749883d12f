"""Dev-split scores of a `notebooks/sweep.py` work directory, by the dev problems' composition kind: pass@1 and the
Planner's gold-plan rate per variant, pooled over seeds, and one-sided paired bootstraps between variants
(notebooks/2026-11-29-20-rl-longer-chains.md).

    python notebooks/rl_longer_dev.py --workdir /tmp/cpurl/sw --dev /tmp/freshrun/data/processed/composite_dev.jsonl \
        --compare long50_coder:base_coder long100_coder:base_coder base_both:base_coder base_coder:ptx_coder

A run directory is `<variant>_s<seed>` with `data/reports/eval/planner_coder_grpo/composite_dev.jsonl`; `REF` (the SFT
team, `planner_coder_sft`) is the reference every variant is also compared with, its one evaluation paired with each
seed's run. A plan counts as gold when it equals the problem's gold plan up to whitespace (notebook 2026-11-27-03).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corecode.data.io import read_jsonl  # noqa: E402
from corecode.evaluation.stats import paired_bootstrap  # noqa: E402

KINDS = ("ood:length", "ood:chain", "ood:pair", "efficiency")
RUN = re.compile(r"^(?P<variant>.+)_s(?P<seed>\d+)$")


def norm(plan: str) -> str:
    return " ".join(plan.split())


def kind(tags: list[str]) -> str:
    """The problem's composition kind: the first of KINDS among its tags (held-out-pair problems may also be long)."""
    return next((k for k in KINDS if k in tags), "other")


def read_eval(path: Path) -> dict[str, dict]:
    """A JSONL file's records by task id (a bad line is named by file and line)."""
    return {r["task_id"]: r for r in read_jsonl(path)}


def collect(workdir: Path) -> tuple[dict[str, dict], dict[str, dict[int, dict[str, dict]]]]:
    """REF's records and {variant: {seed: records}} of every finished run."""
    ref = read_eval(workdir / "REF/data/reports/eval/planner_coder_sft/composite_dev.jsonl")
    runs: dict[str, dict[int, dict[str, dict]]] = defaultdict(dict)
    for d in sorted(workdir.iterdir()):
        m = RUN.match(d.name)
        path = d / "data/reports/eval/planner_coder_grpo/composite_dev.jsonl"
        if m and path.is_file():
            runs[m["variant"]][int(m["seed"])] = read_eval(path)
    return ref, runs


def pooled(records_by_seed: dict[int, dict[str, dict]], ref: dict[str, dict], seeds: list[int]) -> dict[str, float]:
    """Per problem-run pass@1, keyed seed:task_id; REF's one evaluation stands for every seed."""
    return {f"{s}:{t}": (records_by_seed[s] if s in records_by_seed else ref)[t]["pass_at_1"]
            for s in seeds for t in ref}  # fmt: skip


def rate(flags: list) -> str:
    return f"{100 * sum(flags) / max(1, len(flags)):.1f}"


def print_table(table: dict[str, dict[int, dict[str, dict]]], kinds: dict[str, str], gold: dict[str, str],
                cols: list[str]) -> None:  # fmt: skip
    """pass@1 overall and by kind, and the gold-plan rate overall and on the longer chains, every seed's runs pooled."""
    print("| variant | seeds | pass@1 | " + " | ".join(cols) + " | gold plan | gold plan, ood:length |")
    print("|---|---|---:|" + "---:|" * (len(cols) + 2))
    for name, by_seed in table.items():
        recs = [r for rs in by_seed.values() for r in rs.values()]
        by_kind = defaultdict(list)
        for r in recs:
            by_kind[kinds[r["task_id"]]].append(r["pass_at_1"])
        is_gold = [norm(r.get("plan") or "") == gold[r["task_id"]] for r in recs]
        long_gold = [g for g, r in zip(is_gold, recs) if kinds[r["task_id"]] == "ood:length"]
        overall = 100 * sum(r["pass_at_1"] for r in recs) / len(recs)
        cells = " | ".join(rate(by_kind[k]) for k in cols)
        seeds = " ".join(map(str, sorted(by_seed)))
        print(f"| {name} | {seeds} | {overall:.2f} | {cells} | {rate(is_gold)} | {rate(long_gold)} |")


def print_comparisons(pairs: list[tuple[str, str]], runs: dict, ref: dict[str, dict]) -> None:
    """a > b per seed and pooled over the seeds both have (one-sided p; the CI two-sided)."""
    print("\n| a > b | per seed, points (p) | pooled (95% CI; p) |\n|---|---|---|")
    for a, b in pairs:
        seeds = sorted(set(runs[a]) & (set(runs[b]) if b != "REF" else set(runs[a])))
        if not seeds:
            print(f"| {a} > {b} | no common seed | |")
            continue
        per_seed = []
        for s in seeds:
            rb = ref if b == "REF" else runs[b][s]
            r = paired_bootstrap({t: runs[a][s][t]["pass_at_1"] for t in ref}, {t: rb[t]["pass_at_1"] for t in ref},
                                 alternative="greater")  # fmt: skip
            per_seed.append(f"s{s} {100 * r.delta:+.2f} ({r.p_value:.2f})")
        pa, pb = pooled(runs[a], ref, seeds), pooled(runs[b] if b != "REF" else {}, ref, seeds)
        r, two = paired_bootstrap(pa, pb, alternative="greater"), paired_bootstrap(pa, pb)
        print(
            f"| {a} > {b} | {'; '.join(per_seed)} | {100 * r.delta:+.2f} ({100 * two.ci_low:+.2f} to "
            f"{100 * two.ci_high:+.2f}; {r.p_value:.3f}) |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--dev", type=Path, required=True, help="The build's composite_dev.jsonl (tags, gold plans).")
    ap.add_argument("--compare", nargs="*", default=[], metavar="A:B", help="Variants to compare, a > b.")
    args = ap.parse_args()
    problems = read_eval(args.dev)
    ref, runs = collect(args.workdir)
    kinds = {t: kind(p.get("tags", [])) for t, p in problems.items()}
    gold = {t: norm(p["plan"]) for t, p in problems.items()}
    counts = {k: sum(1 for t in ref if kinds[t] == k) for k in (*KINDS, "other")}
    cols = [k for k in (*KINDS, "other") if counts[k]]
    print("problems by kind: " + ", ".join(f"{k} {counts[k]}" for k in cols))
    print_table({"SFT (REF)": {0: ref}} | {v: runs[v] for v in sorted(runs)}, kinds, gold, cols)
    pairs = [tuple(c.split(":", 1)) for c in args.compare] + [(v, "REF") for v in sorted(runs)]
    print_comparisons(pairs, runs, ref)


if __name__ == "__main__":
    main()
