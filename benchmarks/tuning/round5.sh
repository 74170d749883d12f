#!/usr/bin/env bash
# Run on the device machine from the repo root (wheels for trl/datasets/pydantic on PYTHONPATH; the CPU make run's SFT
# checkpoints and problem files carried in .sw/): R=$OUT bash benchmarks/tuning/round5.sh VARIANTS_FILE
# Embedded-default tuning aid, not part of the pipeline; results and dates in docs/benchmarks.md.
# GRPO variants from one fixed SFT team (no SFT here), each against that team's own evaluation on the same GPU.
set -u
R=${R:-$OUT}; ROOT=$PWD; W=/tmp/sw5; mkdir -p $W
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTHONPATH=$ROOT:${PYTHONPATH:-}
CLI="python3 -m corecode.cli"
G="--set tracking.enabled=false --set sandbox.isolation=unshare --set sandbox.python=${SBX_PY:-$(command -v python3)} --set sandbox.workers=1 --set model.dtype=float32 --set evaluate.benchmarks=[composite_test] --set grpo.eval_steps=0 ${EXTRA_G:-}"
T=$R/sweep.tsv; t0=$(date +%s)
log() { echo "$(( $(date +%s)-t0 ))s $*" | tee -a $T; }
mkd() { local d=$W/$1; mkdir -p $d/data/checkpoints; cd $d; cp $ROOT/params.yaml .; cp -r $ROOT/.sw/processed data/processed
  ln -s $ROOT/.sw/ck/sft_planner data/checkpoints/sft_planner; ln -s $ROOT/.sw/ck/sft_coder data/checkpoints/sft_coder; }
wait_for() { while [ ! -f $W/$1.done ]; do sleep 3; done; }
( mkd REF; $CLI evaluate --method planner_coder_sft $G > $R/REF.eval.log 2>&1
  log "REF $(python3 $ROOT/benchmarks/tuning/p1.py data/reports/eval/planner_coder_sft)"; touch $W/refeval.done ) &
gvar() { local n=$1; shift; local s=""; for kv in "$@"; do s="$s --set $kv"; done
  ( mkd $n; timeout ${GRPO_TIMEOUT:-480} $CLI grpo-team $G $s > $W/$n.grpo.log 2>&1; log "$n grpo rc=$? | $s"
    python3 - $W/$n/data/reports/train/grpo_team.json >> $T <<'PY'
import json, sys
try:
    h = [r for r in json.load(open(sys.argv[1])) if "pass_rate/coder" in r]
except Exception as e:
    print("no log", e); raise SystemExit
q = max(1, len(h) // 4)
print("  train pass_rate/coder by quarter:", [round(sum(r["pass_rate/coder"] for r in h[i:i + q]) / len(h[i:i + q]), 3) for i in range(0, len(h), q)],
      "step_time", round(sum(r["step_time_s"] for r in h) / len(h), 2))
if "coder/plan_adherence" in h[0]:
    print("  coder/plan_adherence by quarter:", [round(sum(r["coder/plan_adherence"] for r in h[i:i + q]) / len(h[i:i + q]), 3) for i in range(0, len(h), q)])
PY
    $CLI evaluate --method planner_coder_grpo $G > $W/$n.eval.log 2>&1
    wait_for refeval; log "$n $(python3 $ROOT/benchmarks/tuning/cmp.py data/reports/eval/planner_coder_grpo $W/REF/data/reports/eval/planner_coder_sft)" ) & }
source $1
wait
log all done
