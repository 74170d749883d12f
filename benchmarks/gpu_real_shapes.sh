#!/usr/bin/env bash
# Issue-17 measurements on one GPU, in order of priority, each on random-weight stand-ins of the real shapes:
# the qwen2.5-coder-1.5b-instruct profile end to end (gpu_dev_pipeline.sh: SFT of both roles, team GRPO of both
# roles, evaluation), team GRPO at the 7B shape (gpu_team_shape.sh), benchmarks/grpo_step.py at the 1.5B shape,
# team GRPO at the 14B shape. Results under $R/{p15,t7,t14}; $R/DONE when finished.
#   R=/tmp/real setsid bash benchmarks/gpu_real_shapes.sh &    then poll: benchmarks/gpu_poll.sh
set -u
R=${R:-/tmp/real}; mkdir -p "$R"
GRPO_SET="grpo.team.eval_steps=0 grpo.team.max_plan_tokens=128 grpo.team.max_code_tokens=192 tracking.enabled=false"
R=$R/p15 PROFILE=qwen2.5-coder-1.5b-instruct STANDIN=1.5b SKIP_THROUGHPUT=1 SKIP_SINGLE=1 GRPO_STEPS=${GRPO_STEPS:-20} \
  EVAL_BENCH='[composite_test, humaneval]' EXTRA_SET="sft.max_steps=60 evaluate.max_problems=100 $GRPO_SET" \
  bash benchmarks/gpu_dev_pipeline.sh
R=$R/t7 PROFILE=qwen2.5-coder-7b-instruct SHAPE=7b STEPS=6 EXTRA_SET="$GRPO_SET" bash benchmarks/gpu_team_shape.sh
python3 benchmarks/grpo_step.py --shape 1.5b --steps 6 --tokenizer .bench/tok32k.json --json "$R/grpo_step_1.5b.json" >"$R/grpo_step.log" 2>&1 \
  || python3 benchmarks/grpo_step.py --shape 1.5b --steps 6 --tokenizer .bench/tok32k.json --no-static-cache --json "$R/grpo_step_1.5b.json" \
    >>"$R/grpo_step.log" 2>&1
rm -rf data/standin/7b-instruct data/checkpoints data/work  # the disk holds 64 GB
R=$R/t14 PROFILE=qwen2.5-coder-14b-instruct SHAPE=14b STEPS=3 EXTRA_SET="$GRPO_SET" bash benchmarks/gpu_team_shape.sh
touch "$R/DONE"
