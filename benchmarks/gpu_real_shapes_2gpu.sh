#!/usr/bin/env bash
# Issue-17 measurements on a 2-GPU host, on random-weight stand-ins of the real shapes: first team GRPO at the 7B
# shape under accelerate DDP on both GPUs (gpu_team_shape.sh, NPROC=2; each process holds the profile's shared bf16
# base with a LoRA adapter per role, or with SHARED_7B=false a bf16 base + LoRA per role); then, side by side, the
# qwen2.5-coder-1.5b-instruct profile end to end on GPU 0 (gpu_dev_pipeline.sh) and on GPU 1 benchmarks/grpo_step.py
# at the 1.5B shape (CUDA_LAUNCH_BLOCKING=1, so a device-side assert names its kernel) followed by team GRPO at the
# 14B shape. Results under $R/{t7x2,p15,t14}; $R/DONE when finished.
#   R=/tmp/real setsid bash benchmarks/gpu_real_shapes_2gpu.sh &    then poll: benchmarks/gpu_poll.sh
set -u
R=${R:-/tmp/real}; mkdir -p "$R"
GRPO_SET="grpo.team.eval_steps=0 grpo.team.max_plan_tokens=128 grpo.team.max_code_tokens=192 tracking.enabled=false"
CUDA_VISIBLE_DEVICES=0,1 R=$R/t7x2 PROFILE=qwen2.5-coder-7b-instruct SHAPE=7b STEPS=${STEPS_7B:-5} NPROC=2 \
  EXTRA_SET="$GRPO_SET grpo.team.shared_base=${SHARED_7B:-true}" bash benchmarks/gpu_team_shape.sh
rm -rf data/standin/7b-instruct data/work/7b data/run_state  # the disk holds 64 GB
(
  export CUDA_VISIBLE_DEVICES=0
  R=$R/p15 PROFILE=qwen2.5-coder-1.5b-instruct STANDIN=1.5b SKIP_THROUGHPUT=1 SKIP_SINGLE=1 GRPO_STEPS=${GRPO_STEPS:-20} \
    EVAL_BENCH='[composite_test, humaneval]' EXTRA_SET="sft.max_steps=60 evaluate.max_problems=100 $GRPO_SET" \
    bash benchmarks/gpu_dev_pipeline.sh
) &
(
  export CUDA_VISIBLE_DEVICES=1; mkdir -p "$R/t14"
  CUDA_LAUNCH_BLOCKING=1 python3 benchmarks/grpo_step.py --shape 1.5b --steps 3 --tokenizer .bench/tok32k.json \
    --json "$R/grpo_step_1.5b.json" >"$R/grpo_step.log" 2>&1
  R=$R/t14 PROFILE=qwen2.5-coder-14b-instruct SHAPE=14b STEPS=${STEPS_14B:-3} EXTRA_SET="$GRPO_SET" \
    bash benchmarks/gpu_team_shape.sh
) &
wait
touch "$R/DONE"
