#!/usr/bin/env bash
# Evaluate a sweep's finished runs (left in /tmp/sw5 on a still-warm device machine) against its REF team, all at
# once: R=$OUT EXTRA_G="..." bash benchmarks/tuning/eval_runs.sh RUN [RUN ...]. Tuning aid, not part of the pipeline.
set -u
R=${R:-$OUT}; ROOT=$PWD; W=/tmp/sw5
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTHONPATH=$ROOT:${PYTHONPATH:-}
CLI="python3 -m corecode.cli"
G="--set tracking.enabled=false --set sandbox.isolation=unshare --set sandbox.python=${SBX_PY:-$(command -v python3)} --set model.dtype=float32 --set evaluate.benchmarks=[composite_test] ${EXTRA_G:-}"
( cd $W/REF && $CLI evaluate --method planner_coder_sft $G > $R/REF.eval.log 2>&1; echo "REF rc=$?" ) &
for n in "$@"; do ( cd $W/$n && $CLI evaluate --method planner_coder_grpo $G > $R/$n.eval.log 2>&1; echo "$n rc=$?" ) & done
wait
for n in "$@"; do echo "$n $(cd $W/$n && python3 $ROOT/benchmarks/tuning/cmp.py data/reports/eval/planner_coder_grpo $W/REF/data/reports/eval/planner_coder_sft)"; done
mkdir -p $R/samples; cp $W/REF/data/reports/eval/planner_coder_sft/composite_test.jsonl $R/samples/REF.jsonl
for n in "$@"; do cp $W/$n/data/reports/eval/planner_coder_grpo/composite_test.jsonl $R/samples/$n.jsonl; done
