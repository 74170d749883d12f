#!/usr/bin/env bash
# The make run's SFT team, GRPO team and (where the make run has it) ptx-only control on a further composite test
# split, to check the pipeline's figure.
#
# This builds, in a scratch copy, the composite suite with a larger test split (same seed: train, val and the SFT
# datasets come out byte-identical, so the make run's checkpoints stay valid), keeps N test problems that no test
# build used in tuning contains (n_test 300, 900, 2000, 2700, 3000), that are no problem of the make run's dev split
# (data/processed/composite_dev.jsonl, which tuning reads; same gold plan = same chain and constants) and whose step
# sequence none of the make run's RL problems (data/processed/composite_rl.jsonl) has, evaluates the teams on them
# (1 sample each, common random numbers)
# and writes the paired bootstrap with `corecode metrics`. The RL filter matters: the pipeline's own build keeps its
# RL split off its test split's step sequences, but a larger build's test split does not know that RL split: on the
# make-run checkpoints of d3d3728 the GRPO team gained 6.0 points on the 298 of 3000 problems that shared a sequence
# with it against 1.5 on the rest (notebooks/2026-11-26-05-corrections.md). A step sequence is read off the gold plan
# (one line per step; numbers and quoted constants blanked). CPU: about 6 minutes for N=3000 and three teams.
#
# Usage, from the repo root after `make run`:  bash benchmarks/large_test.sh [N]   (default N=3000)
# W=DIR: the scratch copy (default a new /tmp/corecode-large-test.XXXX). GRPO_FROM=DIR: take the GRPO team, the ptx-only
# control and their training logs from DIR/data instead (another seed's run from the same SFT team, say:
# benchmarks/large_test_seeds.py); the SFT team, the problems and the code stay the make run's.
set -euo pipefail
N=${1:-3000}
ROOT=$PWD
PY=$ROOT/.venv/bin/python
W=${W:-$(mktemp -d /tmp/corecode-large-test.XXXX)}
G=${GRPO_FROM:-$ROOT}
for c in checkpoints/sft_planner checkpoints/sft_coder reports/train; do
  [ -d data/$c ] || { echo "data/$c is missing: run 'make run' first" >&2; exit 2; }
done
for c in checkpoints/grpo_planner checkpoints/grpo_coder; do
  [ -d "$G/data/$c" ] || { echo "$G/data/$c is missing: run 'make run' (or that run) first" >&2; exit 2; }
done
git ls-files -z | xargs -0 tar cf - | (cd "$W" && tar xf -)
mkdir -p "$W/data/checkpoints"
METHODS=(planner_coder_sft planner_coder_grpo)
COMPARISONS="[planner_coder_grpo,planner_coder_sft]"
CKPTS="grpo_planner grpo_coder"
if [ -d "$G/data/checkpoints/ptx_planner" ] && [ -d "$G/data/checkpoints/ptx_coder" ]; then  # the ptx-only control
  METHODS+=(planner_coder_ptx)
  COMPARISONS+=",[planner_coder_grpo,planner_coder_ptx],[planner_coder_ptx,planner_coder_sft]"
  CKPTS+=" ptx_planner ptx_coder"
fi
# copies (-L: of what a link points to), so that nothing below writes into the make run's directory
cp -rL data/checkpoints/sft_planner data/checkpoints/sft_coder "$W/data/checkpoints/"
for c in $CKPTS; do cp -rL "$G/data/checkpoints/$c" "$W/data/checkpoints/"; done
mkdir -p "$W/data/reports" && cp -rL data/reports/train "$W/data/reports/"  # `corecode metrics` plots the training logs
if [ "$G" != "$ROOT" ] && [ -d "$G/data/reports/train" ]; then cp "$G"/data/reports/train/grpo_*.json "$W/data/reports/train/"; fi
cd "$W"
S="--set tracking.enabled=false"
for n in 300 900 2000 2700 3000 8000; do
  $PY -m corecode.cli --pipeline-outputs build-data $S --set data.composite.n_test=$n > build_$n.log 2>&1
  cp data/processed/composite_test.jsonl test_$n.jsonl
done
for f in planner coder; do  # the SFT data must not move, or the checkpoints would not belong to this data
  cmp -s data/processed/$f.jsonl "$ROOT/data/processed/$f.jsonl" || { echo "$f.jsonl differs from the make run's" >&2; exit 3; }
done
$PY - "$N" "$ROOT/data/processed/composite_rl.jsonl" "$ROOT/data/processed/composite_dev.jsonl" <<'PY'
import json, os, re, sys
n, rl_path, dev_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def sequence(row):  # the chain's steps, constants blanked, from the gold plan (one line per step)
    return tuple(re.sub(r"-?\d+", "N", re.sub(r"'[^']*'", "'S'", line)).strip() for line in row["plan"].splitlines())

rl = {sequence(json.loads(line)) for line in open(rl_path)}
seen = {json.loads(line)["prompt"] for k in (300, 900, 2000, 2700, 3000) for line in open(f"test_{k}.jsonl")}
# the dev split is tuned on: none of its problems (chain and constants: the gold plan) may be a test problem here
dev = {json.loads(line)["plan"] for line in open(dev_path)} if os.path.exists(dev_path) else set()
rows = [json.loads(line) for line in open("test_8000.jsonl")]
unseen = [r for r in rows if r["prompt"] not in seen and r["plan"] not in dev]
fresh = [r for r in unseen if sequence(r) not in rl][:n]
print(f"{len(unseen)} test problems outside the tuning builds, {len(unseen) - len([r for r in unseen if sequence(r) not in rl])}"
      f" of them share a step sequence with the RL split; keeping {len(fresh)}")
if len(fresh) < n:
    sys.exit(f"only {len(fresh)} fresh test problems; ask for fewer")
with open("data/processed/composite_test.jsonl", "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in fresh)
PY
E="$S --set evaluate.benchmarks=[composite_test] --set evaluate.n_samples=1 --set evaluate.ks=[1]
   --set evaluate.collaboration_gain=false --set report.comparisons=[$COMPARISONS]"
for m in "${METHODS[@]}"; do
  $PY -m corecode.cli --pipeline-outputs evaluate --method $m $E > eval_$m.log 2>&1
done
$PY -m corecode.cli --pipeline-outputs metrics $E > metrics.log 2>&1
$PY - "${METHODS[@]}" <<'PY'
import json, sys
m = json.load(open("data/reports/metrics.json"))
for meth in sys.argv[1:]:
    print(f"{meth}: pass@1 {100 * m['methods'][meth]['composite_test']['pass_at_1']:.2f}%")
for c in m["comparisons"]:
    print(f"{c['a']} - {c['b']} on {c['benchmark']}: {100 * c['delta']:+.2f} points, p {c['p_value']:.4f}")
PY
echo "outputs: $W/data/reports"
