#!/usr/bin/env bash
# The make run's SFT team and GRPO team on a composite test split large enough to resolve a one-point gain.
#
# The pipeline's test split (300 problems x 3 samples) gives a paired delta a standard error of about 1 point, while
# team GRPO on the embedded default gains 1-2 points (docs/benchmarks.md, "sixth landing"). This builds, in a scratch
# copy, the composite suite with a larger test split (same seed: train, val and the SFT datasets come out
# byte-identical, so the make run's checkpoints stay valid), keeps N test problems that none of the test builds used
# in tuning (n_test 300, 900, 2700) contains, evaluates both teams on them (1 sample each, common random numbers) and
# writes the paired bootstrap with `corecode metrics`. CPU: about 6 minutes for N=3000.
#
# Usage, from the repo root after `make run`:  bash benchmarks/large_test.sh [N]   (default N=3000)
set -euo pipefail
N=${1:-3000}
ROOT=$PWD
PY=$ROOT/.venv/bin/python
W=${W:-$(mktemp -d /tmp/corecode-large-test.XXXX)}
for c in sft_planner sft_coder grpo_planner grpo_coder; do
  [ -d data/checkpoints/$c ] || { echo "data/checkpoints/$c is missing: run 'make run' first" >&2; exit 2; }
done
git ls-files -z | xargs -0 tar cf - | (cd "$W" && tar xf -)
mkdir -p "$W/data/checkpoints"
for c in sft_planner sft_coder grpo_planner grpo_coder; do cp -r data/checkpoints/$c "$W/data/checkpoints/"; done
cd "$W"
S="--set tracking.enabled=false"
for n in 300 900 2700 6000; do
  $PY -m corecode.cli build-data $S --set data.composite.n_test=$n > build_$n.log 2>&1
  cp data/processed/composite_test.jsonl test_$n.jsonl
done
for f in planner coder; do  # the SFT data must not move, or the checkpoints would not belong to this data
  cmp -s data/processed/$f.jsonl "$ROOT/data/processed/$f.jsonl" || { echo "$f.jsonl differs from the make run's" >&2; exit 3; }
done
$PY - "$N" <<'PY'
import json, sys
n = int(sys.argv[1])
seen = {json.loads(line)["prompt"] for k in (300, 900, 2700) for line in open(f"test_{k}.jsonl")}
fresh = [line for line in open("test_6000.jsonl") if json.loads(line)["prompt"] not in seen][:n]
if len(fresh) < n:
    sys.exit(f"only {len(fresh)} fresh test problems; ask for fewer")
open("data/processed/composite_test.jsonl", "w").writelines(fresh)
print(f"{len(fresh)} fresh test problems")
PY
E="$S --set evaluate.benchmarks=[composite_test] --set evaluate.n_samples=1 --set evaluate.ks=[1]
   --set evaluate.collaboration_gain=false --set evaluate.methods=[planner_coder_sft,planner_coder_grpo]
   --set evaluate.comparisons=[[planner_coder_grpo,planner_coder_sft]]"
for m in planner_coder_sft planner_coder_grpo; do
  $PY -m corecode.cli evaluate --method $m $E > eval_$m.log 2>&1
done
$PY -m corecode.cli metrics $E > metrics.log 2>&1
$PY - <<'PY'
import json
m = json.load(open("data/reports/metrics.json"))
for meth in ("planner_coder_sft", "planner_coder_grpo"):
    print(f"{meth}: pass@1 {100 * m['methods'][meth]['composite_test']['pass_at_1']:.2f}%")
for c in m["comparisons"]:
    print(f"{c['a']} - {c['b']} on {c['benchmark']}: {100 * c['delta']:+.2f} points, p {c['p_value']:.4f}")
PY
echo "outputs: $W/data/reports"
