#!/usr/bin/env bash
# Run on the device machine from the repo root (wheels for trl/datasets/pydantic on PYTHONPATH): R=$OUT bash benchmarks/tuning/round4.sh
# Embedded-default tuning aid, not part of the pipeline; results and dates in docs/benchmarks.md ("Embedded default, third landing").
# Tuning sweep round 4 (not project code). Same reference SFT recipe with an rl split of 600 problems; GRPO on the
# rl split vs the train split, with one role frozen, bigger batches, KL, temperature; TRL single GRPO on rl.
set -u
R=${R:-$OUT}; ROOT=$PWD; W=/tmp/sw4; mkdir -p $W
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTHONPATH=$ROOT:${PYTHONPATH:-}
CLI="python3 -m corecode.cli"
G="--set tracking.enabled=false --set sandbox.isolation=unshare --set sandbox.python=$(command -v python3) --set sandbox.workers=2 --set sft.dtype=float32 --set model.dtype=float32 --set evaluate.benchmarks=[composite_test] --set data.composite.n_rl=600"  # (the 2026-11-26 run also set sft.group_by_length=true, an option since removed: see docs/benchmarks.md)
T=$R/sweep.tsv; t0=$(date +%s)
log() { echo "$(( $(date +%s)-t0 ))s $*" | tee -a $T; }
B=$W/base; mkdir -p $B; cd $B; cp $ROOT/params.yaml .
$CLI build-data $G > $R/build.log 2>&1 && $CLI init-model $G > $R/init.log 2>&1 || { echo BUILD FAIL; tail $R/build.log $R/init.log; exit 1; }
log built
PL="--set sft.planner.completion_only_loss=false --set sft.planner.max_steps=2600 --set sft.planner.learning_rate=0.001"
CL="--set sft.coder.completion_only_loss=false --set sft.coder.max_steps=1200"
SL="--set sft.single.completion_only_loss=false --set sft.single.max_steps=1200"
( cd $B; $CLI sft --role planner $G $PL > $R/ref_planner.log 2>&1; log "ref planner rc=$?"; touch $W/planner.done ) &
( cd $B; $CLI sft --role coder $G $CL > $R/ref_coder.log 2>&1; log "ref coder rc=$?"; touch $W/coder.done ) &
( cd $B; $CLI sft --role single $G $SL > $R/ref_single.log 2>&1; log "ref single rc=$?"; touch $W/single.done
  $CLI evaluate --method single_sft $G > $R/ref_single_eval.log 2>&1; log "single_sft $(python3 $ROOT/benchmarks/tuning/p1.py data/reports/eval/single_sft)"; touch $W/singleeval.done ) &
svar() { local n=$1; shift; local s=""; for kv in "$@"; do s="$s --set $kv"; done
  ( wait_for single; mkd $n; ln -s $B/data/checkpoints/sft_single data/checkpoints/sft_single
    $CLI grpo-single $G $s > $R/$n.grpo.log 2>&1; log "$n grpo-single rc=$? | $s"
    $CLI evaluate --method single_grpo $G > $R/$n.eval.log 2>&1
    wait_for singleeval; log "$n $(python3 $ROOT/benchmarks/tuning/cmp.py data/reports/eval/single_grpo $B/data/reports/eval/single_sft)" ) & }
mkd() { local d=$W/$1; mkdir -p $d/data/checkpoints; cd $d; cp $B/params.yaml .; cp -r $B/data/processed data/; ln -s $B/data/checkpoints/base data/checkpoints/base; }
wait_for() { while [ ! -f $W/$1.done ]; do sleep 3; done; }
team_eval() {  # NAME PLANNER CODER: evaluate planner_coder_sft with those checkpoints in the current dir
  $CLI evaluate --method planner_coder_sft $G --set agents.teams.planner_coder_sft.roles.planner.model=$2 \
    --set agents.teams.planner_coder_sft.roles.coder.model=$3 > $R/$1.eval.log 2>&1
  log "$1 team $(python3 $ROOT/benchmarks/tuning/p1.py data/reports/eval/planner_coder_sft)"
}
pvar() { local n=$1; shift; local s=""; for kv in "$@"; do s="$s --set $kv"; done
  ( mkd $n; $CLI sft --role planner $G $s > $R/$n.sft.log 2>&1; log "$n sft rc=$? | $s"
    python3 $ROOT/benchmarks/tuning/pacc.py data/checkpoints/sft_planner | tr '\n' ' ' | sed "s/^/$n /" >> $T; echo >> $T
    wait_for coder; team_eval $n $W/$n/data/checkpoints/sft_planner $B/data/checkpoints/sft_coder ) & }
cvar() { local n=$1 role=$2; shift 2; local s=""; for kv in "$@"; do s="$s --set $kv"; done
  ( mkd $n; $CLI sft --role $role $G $s > $R/$n.sft.log 2>&1; log "$n sft rc=$? | $s"
    if [ $role = coder ]; then wait_for planner; team_eval $n $B/data/checkpoints/sft_planner $W/$n/data/checkpoints/sft_coder
    else $CLI evaluate --method single_sft $G > $R/$n.eval.log 2>&1; log "$n single $(python3 $ROOT/benchmarks/tuning/p1.py data/reports/eval/single_sft)"; fi ) & }
gvar() { local n=$1; shift; local s=""; for kv in "$@"; do s="$s --set $kv"; done
  ( wait_for planner; wait_for coder; mkd $n
    ln -s $B/data/checkpoints/sft_planner data/checkpoints/sft_planner; ln -s $B/data/checkpoints/sft_coder data/checkpoints/sft_coder
    $CLI grpo-team $G $s > $R/$n.grpo.log 2>&1; log "$n grpo rc=$? | $s"
    $CLI evaluate --method planner_coder_grpo $G > $R/$n.eval.log 2>&1
    wait_for refeval; log "$n $(python3 $ROOT/benchmarks/tuning/cmp.py data/reports/eval/planner_coder_grpo $B/data/reports/eval/planner_coder_sft)" ) & }
( wait_for planner; cd $B; python3 $ROOT/benchmarks/tuning/pacc.py data/checkpoints/sft_planner | tr '\n' ' ' | sed "s/^/REF /" >> $T; echo >> $T
  wait_for coder; team_eval REF $B/data/checkpoints/sft_planner $B/data/checkpoints/sft_coder; touch $W/refeval.done ) &
source $ROOT/benchmarks/tuning/round4_variants.sh
wait
log all done
cat $T
