#!/usr/bin/env bash
# Team-GRPO scaling across GPUs in ONE command (docs/gpu.md "Several GPUs"): for each shape of $SHAPES, grpo-team with
# the same work per GPU on 1 GPU and, for each arrangement of $ARRANGEMENTS, on N GPUs (each N of $NGPUS that the host
# has), $STEPS steps a run; then benchmarks/scaling_summary.py's table: median step time of steps 3.. with its spread,
# programs/s, throughput against 1 GPU, and every rank's per-phase medians (corecode.training.timing).
# Timing runs, no SFT: both roles start from random weights of the shape, every rollout runs to its max tokens
# (grpo.team.fixed_length: each rank and step generates the same tokens), every sequence is trained
# (grpo.team.skip_zero_advantage: false; random weights score 0 everywhere), both roles update, no evaluation, no
# checkpoints, no final save (benchmarks/team_timing.py).
#   R=/tmp/scaling bash benchmarks/gpu_scaling.sh          # every shape and arrangement; 2 GPUs (and 4 where 4 are seen)
#   SHAPES=gpudev ARRANGEMENTS="ddp fsdp" NGPUS="2 4" STEPS=20 R=/tmp/scaling bash benchmarks/gpu_scaling.sh
# SETS="KEY=VALUE ..." adds settings to every run of every shape (e.g. grpo.team.micro_batch_size=16
# grpo.team.gradient_checkpointing=false: fewer, larger kernels; docs/gpu.md "Reading the phase timings"); use a fresh
# R and RESUME=0, or another machine, since runs.tsv keys runs by shape and arrangement only.
# REPEATS=N runs every run N times, the 1-GPU run and the arrangements in turn, each arrangement's ratio against its
# own round's 1-GPU run; the summary then gives the ratios' median and range over the rounds (one 20-step run per
# arrangement moved by 0.2-0.3 between two hosts of one kind: docs/benchmarks.md).
# WARMUP=N (default 8; 0: none): before a shape's first round, an untimed one-GPU run of N steps, so that no timed run
# pays the CUDA driver's one-time JIT compile of kernels it loads as PTX (on a fresh machine the first run's steps 3, 4
# and 7 took 2-3x the others at full 1.5B on an H200; the driver keeps the compiled kernels in ~/.nv/ComputeCache, and
# env.txt gives that cache's size before the runs; docs/gpu.md "Reading the phase timings").
# A command stops starting runs $DEADLINE seconds after it began (default 540: the lent machines' 10-minute command) and
# ends a run still going then; run it again on the same machine and it goes on with the runs not done yet (RESUME=1,
# the default; a run that failed is not retried; RESUME=0 starts over). Every run's figures are in the tables as soon
# as it ends.
# Shapes (gpudev decodes with the profile's static cache, about a minute's compile per process; GPUDEV_DECODE=lean
# decodes with grpo.team.lean_decode; the 1.5B shapes decode with grpo.team.lean_decode, whose step is a CUDA graph
# recorded without compiling, since a static cache compiles for minutes there):
#   gpudev    the gpu-dev profile: its 92M model (init-model: random weights, the profile's tokenizer), 8 problems x 4
#             plans x 4 programs per GPU, 96 / 192 tokens, bf16 (fp32 master weights, a bf16 sampling copy per role)
#   lora1.5b  Qwen2.5-Coder-1.5B-Instruct's shape (benchmarks/standin_checkpoint.py; needs .bench/tok32k.json), the
#             qwen2.5-coder-1.5b-instruct profile's LoRA, bf16 and gradient checkpointing; 4 x 2 x 2 per GPU,
#             $TOKENS_15B tokens per plan and program
#   full1.5b  the same with every weight trained (fp32 master weights + a bf16 sampling copy per role)
# Arrangements: ddp, fsdp (accelerate launch, configs/accelerate/{ddp,fsdp}.yaml, one process per GPU, each with its
#   own problems); fsdp_keep (fsdp.yaml with --fsdp_reshard_after_forward false: a layer's gathered weights are kept
#   from its forward to its backward, one all-gather per micro-batch instead of two, for more memory; not a default);
#   fsdp_accum (fsdp_keep plus grpo.team.fsdp_accumulate: every backward of an update but the last keeps the gradient
#   unsharded and the weights gathered, so an update does one all-gather and one reduce-scatter instead of one each
#   per micro-batch, for the memory of an unsharded gradient; not a default); split (one process, the Planner on GPU 0
#   and the Coder on GPU 1, as many problems per step as DDP on 2 GPUs: grpo.team.planner_device / coder_device).
#   pair (2 GPUs only: two independent one-GPU runs at once, benchmarks/team_timing_pair.sh; its throughput is both
#   processes', its phase rows GPU 0's as rank 0 and GPU 1's as rank 1: what the host allows two GPUs without any
#   collective, the ceiling against which DDP's cost shows, and whether one GPU is slower than the other).
#   ddp_overlap: ddp with grpo.team.overlap_allreduce true (the gradient all-reduced by DDP's reducer inside an
#   update's last backward pass, not after the backward: no <role>_allreduce phase).
#   ddp_pin, pair_pin: ddp and pair with grpo.team.pin_cores (each process and its sandbox workers on their own cores).
# Leaves under $R, copied to $OUT when set: scaling.md (the tables), scaling.json, steps.tsv (wall and peak GPU memory
# per run), env.txt, log.txt (every command's output) and logs.tgz (runs.tsv, per-step logs, params files).
set -u
R=${R:-/tmp/scaling}; mkdir -p "$R" data/scaling/logs
STEPS=${STEPS:-20}; SHAPES=${SHAPES:-gpudev lora1.5b full1.5b}; ARRANGEMENTS=${ARRANGEMENTS:-ddp pair fsdp split}
TOKENS_15B=${TOKENS_15B:-64}; RUN_TIMEOUT=${RUN_TIMEOUT:-300}  # seconds a run may take (a hung collective ends there)
DEADLINE=${DEADLINE:-540}; RESUME=${RESUME:-1}; GPUDEV_DECODE=${GPUDEV_DECODE:-static}; START=$(date +%s); LEFT_OVER=0
REPEATS=${REPEATS:-1}; REP=1; WARMUP=${WARMUP:-8}
VISIBLE=$(nvidia-smi -L 2>/dev/null | wc -l)
NGPUS=${NGPUS:-$([ "$VISIBLE" -ge 4 ] && echo "2 4" || echo 2)}
source "$(dirname "$0")/gpu_common.sh"  # step, pick_isolation, CLI; NVLink multicast off
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; echo "visible GPUs: $VISIBLE"
  python3 -c 'import torch, transformers, accelerate, peft; print(torch.__version__, transformers.__version__,
accelerate.__version__, peft.__version__)'
  echo "CUDA JIT cache before the runs: $(du -sh "${CUDA_CACHE_PATH:-$HOME/.nv/ComputeCache}" 2>/dev/null || echo none)"
} >"$R/env.txt" 2>&1
RUNS=data/scaling/runs.tsv; [ "$RESUME" = 1 ] && [ -f $RUNS ] || : >$RUNS
export CUDA_VISIBLE_DEVICES=0

# Timing-run settings every shape shares (grpo.team; tracking off: the GPU image has no MLflow).
COMMON=(--set grpo.team.max_steps=$STEPS --set grpo.team.eval_steps=0 --set grpo.team.eval_problems=0
  --set grpo.team.save_steps=100000 --set grpo.team.resume=false --set "grpo.team.frozen_roles=[]"
  --set grpo.team.skip_zero_advantage=false --set grpo.team.fixed_length=true --set grpo.team.ptx_coef=0
  --set tracking.enabled=false --set sandbox.workers=14 --set "sandbox.python=$(command -v python3)")
for kv in ${SETS:-}; do COMMON+=(--set "$kv"); done  # e.g. SETS="grpo.team.micro_batch_size=16"
P=data/params.scaling-gpudev.yaml
$CLI profile apply gpu-dev -o $P "${COMMON[@]}" >>"$R/log" 2>&1
pick_isolation || echo "no sandbox isolation passed its self-test" >>"$R/steps.tsv"
[ -f data/processed/composite_rl.jsonl ] || step build_data $CLI build-data --params $P

# params SHAPE: writes data/params.scaling-SHAPE.yaml; sets PPS (problems per step per GPU) and PROGS (programs per
# step per GPU), and makes the shape's start checkpoint when it is missing.
params() {
  local shape=$1 out=data/params.scaling-$1.yaml
  case $shape in
    gpudev)
      [ -f data/scaling/gpudev-base/config.json ] || step init_gpudev $CLI init-model --params $P \
        --out data/scaling/gpudev-base
      PPS=8; PROGS=128; local decode=(--set grpo.team.static_cache=false --set grpo.team.lean_decode=true)
      [ "$GPUDEV_DECODE" = static ] && decode=()
      $CLI profile apply gpu-dev -o $out "${COMMON[@]}" "${ISO_SET[@]}" "${decode[@]}" \
        --set grpo.team.planner_model=data/scaling/gpudev-base --set grpo.team.coder_model=data/scaling/gpudev-base ;;
    lora1.5b|full1.5b)
      [ -f data/scaling/standin-1.5b/config.json ] || step standin_1.5b python3 benchmarks/standin_checkpoint.py \
        --shape 1.5b --out data/scaling/standin-1.5b
      local M=data/scaling/standin-1.5b lora=true; [ $shape = full1.5b ] && lora=false
      PPS=4; PROGS=16
      $CLI profile apply qwen2.5-coder-1.5b-instruct -o $out "${COMMON[@]}" "${ISO_SET[@]}" \
        --set model.name_or_path=$M --set grpo.team.planner_model=$M --set grpo.team.coder_model=$M \
        --set grpo.team.lora.enabled=$lora --set grpo.team.problems_per_step=$PPS --set grpo.team.num_plans=2 \
        --set grpo.team.num_programs=2 --set grpo.team.max_plan_tokens=$TOKENS_15B \
        --set grpo.team.max_code_tokens=$TOKENS_15B --set grpo.team.static_cache=false \
        --set grpo.team.lean_decode=true ;;
    *) echo "unknown shape $shape (gpudev, lora1.5b, full1.5b)" >>"$R/steps.tsv"; return 1 ;;
  esac >>"$R/log" 2>&1
}

# report: the tables so far, and the files to bring back, under $R and $OUT (after every run: a command stopped at its
# time limit still leaves the runs it finished).
report() {
  python3 benchmarks/scaling_summary.py $RUNS --json "$R/scaling.json" >"$R/scaling.md" 2>>"$R/log"
  cp $RUNS "$R/runs.tsv"
  tar czf "$R/logs.tgz" data/scaling/logs data/scaling/runs.tsv data/params.scaling-*.yaml "$R"/mem.* "$R"/apps.* 2>/dev/null
  tail -c 8000000 "$R/log" >"$R/log.txt"  # the run tool brings back files of at most 16 MB
  [ -z "${OUT:-}" ] || cp "$R"/{scaling.md,scaling.json,steps.tsv,env.txt,log.txt,logs.tgz} "$OUT"/ 2>/dev/null
  return 0
}

# run SHAPE ARRANGEMENT GPUS PROGRAMS CMD...: one timing run on GPUs 0..GPUS-1 (round $REP), its line in runs.tsv
# (keyed by its log file).
run() {
  local shape=$1 arr=$2 gpus=$3 programs=$4; shift 4
  local name=${shape}_${arr}_${gpus}gpu; [ "$REP" = 1 ] || name=${name}_r$REP
  local log=data/scaling/logs/$name.json t0=$(date +%s.%N)
  # a run an earlier call finished (or that failed there: it would again) is not run again; one stopped is
  if awk -F'\t' -v f="$log" '$5 == f && $6 != "stopped" {found = 1} END {exit !found}' $RUNS; then
    echo "$name: run in an earlier call" >>"$R/log"; return; fi
  local left=$((DEADLINE - $(date +%s) + START))
  if [ $left -lt 60 ]; then echo "$name: not started, $left s left (run the command again)" | tee -a "$R/steps.tsv"
    LEFT_OVER=1; return; fi
  rm -f "$log"
  export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1)))
  step "$name" timeout -k 20 $((left < RUN_TIMEOUT ? left : RUN_TIMEOUT)) "$@" --params data/params.scaling-$shape.yaml \
    --set "grpo.team.log_path=$log" --set "grpo.team.checkpoint_dir=data/scaling/state/$name"
  local rc=$?
  [ $left -lt $RUN_TIMEOUT ] && { [ $rc = 124 ] || [ $rc = 137 ]; } && { rc=stopped; LEFT_OVER=1; }  # the deadline
  awk -F'\t' -v f="$log" '$5 != f' $RUNS >$RUNS.tmp; mv $RUNS.tmp $RUNS  # an earlier call's stopped try
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$arr" "$gpus" "$programs" "$log" "$rc" \
    "$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")" "$REP" >>$RUNS
  export CUDA_VISIBLE_DEVICES=0
  report
}

TIMING="python3 benchmarks/team_timing.py"
LAUNCH="python3 -m accelerate.commands.launch"
# warmup SHAPE: the untimed one-GPU run of $WARMUP steps (once per shape and call; not in runs.tsv).
warmup() {
  [ "$WARMUP" -gt 0 ] || return 0
  local name=$1_warmup left=$((DEADLINE - $(date +%s) + START))
  [ $left -ge 120 ] || return 0
  step "$name" timeout -k 20 $((left < RUN_TIMEOUT ? left : RUN_TIMEOUT)) $TIMING \
    --params data/params.scaling-$1.yaml --set grpo.team.max_steps=$WARMUP \
    --set "grpo.team.log_path=data/scaling/logs/$name.json" --set "grpo.team.checkpoint_dir=data/scaling/state/$name"
}

for shape in $SHAPES; do
  params $shape || continue
  warmup $shape
  for REP in $(seq "$REPEATS"); do  # a round: the 1-GPU run, then every arrangement
    run $shape single 1 $PROGS $TIMING
    for n in $NGPUS; do
      [ "$n" -le "$VISIBLE" ] || { echo "$n GPUs asked for, $VISIBLE visible: skipped" >>"$R/steps.tsv"; continue; }
      for arr in $ARRANGEMENTS; do
        case $arr in
          ddp|fsdp) run $shape $arr $n $((n * PROGS)) $LAUNCH --config_file configs/accelerate/$arr.yaml \
            --num_processes $n benchmarks/team_timing.py ;;
          fsdp_keep) run $shape $arr $n $((n * PROGS)) $LAUNCH --config_file configs/accelerate/fsdp.yaml \
            --fsdp_reshard_after_forward false --num_processes $n benchmarks/team_timing.py ;;
          fsdp_accum) run $shape $arr $n $((n * PROGS)) $LAUNCH --config_file configs/accelerate/fsdp.yaml \
            --fsdp_reshard_after_forward false --num_processes $n benchmarks/team_timing.py \
            --set grpo.team.fsdp_accumulate=true ;;
          split) [ "$n" = 2 ] && run $shape split 2 $((2 * PROGS)) $TIMING --set grpo.team.planner_device=cuda:0 \
            --set grpo.team.coder_device=cuda:1 --set grpo.team.problems_per_step=$((2 * PPS)) ;;
          ddp_overlap) run $shape $arr $n $((n * PROGS)) $LAUNCH --config_file configs/accelerate/ddp.yaml \
            --num_processes $n benchmarks/team_timing.py --set grpo.team.overlap_allreduce=true ;;
          ddp_pin) run $shape $arr $n $((n * PROGS)) $LAUNCH --config_file configs/accelerate/ddp.yaml \
            --num_processes $n benchmarks/team_timing.py --set grpo.team.pin_cores=true ;;
          pair) [ "$n" = 2 ] && run $shape pair 2 $((2 * PROGS)) bash benchmarks/team_timing_pair.sh ;;
          pair_pin) [ "$n" = 2 ] && run $shape pair_pin 2 $((2 * PROGS)) bash benchmarks/team_timing_pair.sh \
            --set grpo.team.pin_cores=true ;;
          *) [ "$REP" = 1 ] && echo "unknown arrangement $arr (ddp, ddp_overlap, ddp_pin, pair, pair_pin, fsdp," \
            "fsdp_keep, fsdp_accum, split)" >>"$R/steps.tsv" ;;
        esac
      done
    done
  done
done

report
cat "$R/scaling.md"
if [ $LEFT_OVER = 0 ]; then touch "$R/DONE"; else echo "runs left: run the same command again to go on"; fi
