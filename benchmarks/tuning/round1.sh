#!/usr/bin/env bash
# Run on the device machine from the repo root (wheels for trl/datasets/pydantic on PYTHONPATH): R=$OUT bash benchmarks/tuning/round1.sh
# Embedded-default tuning aid, not part of the pipeline; results and dates in docs/benchmarks.md ("Embedded default, third landing").
# Tuning sweep (not project code): planner SFT variants of the embedded default, fp32, several at once on one GPU.
# Each variant: sft planner -> greedy exact-plan on val/test -> team pass@1 (baseline coder) on composite_test.
set -u
R=${R:-$OUT}; ROOT=$PWD; W=/tmp/sw; mkdir -p $W
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTHONPATH=$ROOT:${PYTHONPATH:-}
CLI="python3 -m corecode.cli"
G="--set tracking.enabled=false --set sandbox.isolation=unshare --set sandbox.python=$(command -v python3) --set sandbox.workers=2 --set sft.dtype=float32 --set model.dtype=float32 --set evaluate.benchmarks=[composite_test]"
cd $W; mkdir -p base; cd base; cp $ROOT/params.yaml .
$CLI sandbox-selftest --params params.yaml --isolation unshare > $R/selftest.log 2>&1 || G="$G --set sandbox.cgroup=false"
echo "G=$G" > $R/sweep.tsv
t0=$(date +%s)
$CLI build-data $G > $R/build.log 2>&1 && $CLI init-model $G > $R/init.log 2>&1 || { echo BUILD FAIL; tail $R/build.log $R/init.log; exit 1; }
echo "base built $(( $(date +%s)-t0 ))s" >> $R/sweep.tsv
( $CLI sft --role coder $G > $R/sft_coder.log 2>&1; echo "coder $(( $(date +%s)-t0 ))s rc=$?" >> $R/sweep.tsv ) &
variant() {  # NAME INIT_SETS -- SFT_SETS
  local n=$1; shift; local init=""; while [ "$1" != "--" ]; do init="$init --set $1"; shift; done; shift
  local s=""; for kv in "$@"; do s="$s --set $kv"; done
  local d=$W/$n; mkdir -p $d/data/checkpoints; cd $d; cp $W/base/params.yaml .; cp -r $W/base/data/processed data/
  local t=$(date +%s)
  if [ -n "$init" ]; then $CLI init-model $G $init > $R/$n.init.log 2>&1; else ln -s $W/base/data/checkpoints/base data/checkpoints/base; fi
  $CLI sft --role planner $G $s > $R/$n.sft.log 2>&1 || { echo "$n SFTFAIL" >> $R/sweep.tsv; return; }
  local ts=$(( $(date +%s)-t ))
  python3 $ROOT/benchmarks/tuning/pacc.py data/checkpoints/sft_planner > $R/$n.pacc.txt 2>$R/$n.pacc.err
  while [ ! -f $W/base/data/checkpoints/sft_coder/config.json ]; do sleep 5; done; sleep 5
  ln -s $W/base/data/checkpoints/sft_coder data/checkpoints/sft_coder
  $CLI evaluate --method planner_coder_sft $G > $R/$n.eval.log 2>&1
  local p=$(python3 -c "import json;s=json.load(open('data/reports/eval/planner_coder_sft/summary.json'))['benchmarks']['composite_test'];print(round(s['pass_at_1'],4))" 2>&1 | tail -1)
  cp data/reports/eval/planner_coder_sft/composite_test.jsonl $R/$n.eval.jsonl 2>/dev/null
  echo "$n sft=${ts}s pass@1=$p $(tr '\n' ' ' < $R/$n.pacc.txt) | $init | $s" >> $R/sweep.tsv
}
source $ROOT/benchmarks/tuning/round1_variants.sh
wait
echo "all $(( $(date +%s)-t0 ))s" >> $R/sweep.tsv
cat $R/sweep.tsv
