"""What a team's Planner gets wrong on the dev split, by the dev problems' composition kind: each plan against the
problem's gold plan, line by line (notebooks/2026-11-30-23-the-planner-stage-learns-where-it-trains.md).

    python notebooks/plan_errors.py --dev data/processed/composite_dev.jsonl \
        data/reports/eval/planner_coder_sft/composite_dev.jsonl data/reports/eval/planner_coder_grpo/composite_dev.jsonl

Every evaluation file is a per-problem JSONL of `corecode evaluate` (one plan a problem). A plan is one of

- `gold`: the gold plan, up to the numbering and whitespace;
- `constant`: the gold plan's steps in its order, with some number or quoted string another;
- `order`: the gold plan's lines in another order (`order+constant`: with other constants too);
- `step`: as many lines as the gold plan, some of them another step;
- `length`: more or fewer lines than the gold plan.

The share of plans of each class is printed per kind, with the share of programs that pass for each.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rl_longer_dev import KINDS, kind, read_eval  # noqa: E402  (this directory: the dev sweep's kinds)

CLASSES = ("gold", "constant", "order", "order+constant", "step", "length")
NUMBERED = re.compile(r"^\d+\.\s*")
CONSTANT = re.compile(r"'[^']*'|-?\d+")


def plan_lines(plan: str | None) -> list[str]:
    return [" ".join(NUMBERED.sub("", line).split()) for line in (plan or "").splitlines() if line.strip()]


def step_shape(line: str) -> str:
    """The line with its constants (numbers, quoted strings) blanked: the step it names."""
    return CONSTANT.sub("#", line)


def plan_class(plan: str | None, gold: str) -> str:
    own, ref = plan_lines(plan), plan_lines(gold)
    if own == ref:
        return "gold"
    if len(own) != len(ref):
        return "length"
    if sorted(own) == sorted(ref):
        return "order"
    own_steps, ref_steps = [step_shape(x) for x in own], [step_shape(x) for x in ref]
    if own_steps == ref_steps:
        return "constant"
    return "order+constant" if sorted(own_steps) == sorted(ref_steps) else "step"


def table(path: Path, problems: dict[str, dict]) -> list[str]:
    counts: dict[str, Counter] = defaultdict(Counter)
    passes: dict[str, Counter] = defaultdict(Counter)
    records = read_eval(path)
    if unknown := records.keys() - problems.keys():
        sys.exit(f"{path}: {len(unknown)} records are of no --dev problem (first: {sorted(unknown)[0]})")
    if missing := problems.keys() - records.keys():  # another build's dev split, say
        sys.exit(f"{path}: no record for {len(missing)} of the --dev problems (first: {sorted(missing)[0]})")
    for task_id, record in records.items():
        problem = problems[task_id]
        cls = plan_class(record.get("plan"), problem["plan"] or "")
        for k in (kind(problem["tags"]), "all"):
            counts[k][cls] += 1
            passes[k][cls] += record["pass_at_1"]
    out = [f"{path}: share of plans (%), and in parentheses the share of their programs that pass (%)",
           "| kind | problems | " + " | ".join(CLASSES) + " |", "|---|---:|" + "---:|" * len(CLASSES)]  # fmt: skip
    for k in [*KINDS, "other", "all"]:
        if k in counts:
            n = sum(counts[k].values())
            cells = [
                f"{100 * counts[k][c] / n:.1f} ({100 * passes[k][c] / counts[k][c]:.0f})" if counts[k][c] else "0.0"
                for c in CLASSES
            ]
            out.append(f"| {k} | {n} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, required=True, help="The problems (composite_dev.jsonl) the files score.")
    ap.add_argument("evals", type=Path, nargs="+", help="Per-problem evaluation files (JSONL) on --dev.")
    args = ap.parse_args()
    if absent := [p for p in (args.dev, *args.evals) if not p.is_file()]:
        sys.exit(f"{absent[0]}: no such file")
    problems = read_eval(args.dev)
    for path in args.evals:
        print("\n".join(table(path, problems)) + "\n")


if __name__ == "__main__":
    main()
