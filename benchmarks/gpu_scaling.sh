#!/usr/bin/env bash
# Team-GRPO scaling on a 2-GPU host: the gpu-dev profile's data + SFT, then grpo-team for the same number of steps on
# 1 GPU (plain process) and on 2 GPUs (accelerate launch, configs/accelerate/ddp.yaml, one process per GPU), then the
# 1-GPU GRPO team is evaluated. Per-step times: data/reports/train/grpo_team{,_ddp}.json (step_time_s, tokens_per_s).
#   R=/tmp/gpurun STEPS=12 bash benchmarks/gpu_scaling.sh
set -u
R=${R:-/tmp/gpurun}; mkdir -p "$R" data; P=data/params.gpu-dev.yaml;  # data/ is ignored: survives a tree re-sync
STEPS=${STEPS:-12}
source "$(dirname "$0")/gpu_common.sh"  # step, CLI, the environment
{ nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; } >"$R/env.txt" 2>&1
$CLI profile apply configs/profiles/gpu-dev.yaml -o $P --set sandbox.isolation=unshare \
  --set sandbox.python=$(command -v python3) --set grpo.team.max_steps=$STEPS --set grpo.team.eval_steps=0 --set sft.max_steps=300 >>"$R/log" 2>&1
export CUDA_VISIBLE_DEVICES=0
step build_data $CLI build-data --params $P
step init_model $CLI init-model --params $P
step sft_planner $CLI sft --role planner --params $P
step sft_coder $CLI sft --role coder --params $P
step grpo_1gpu $CLI grpo-team --params $P
export CUDA_VISIBLE_DEVICES=0,1
step grpo_2gpu python3 -m accelerate.commands.launch --config_file configs/accelerate/ddp.yaml -m corecode.cli --pipeline-outputs grpo-team \
  --params $P --set grpo.team.planner_output=data/checkpoints/ddp_planner --set grpo.team.coder_output=data/checkpoints/ddp_coder \
  --set grpo.team.checkpoint_dir=data/checkpoints/ddp_state --set grpo.team.log_path=data/reports/train/grpo_team_ddp.json
export CUDA_VISIBLE_DEVICES=0
step eval_grpo $CLI evaluate --method planner_coder_grpo --params $P
tar czf "$R/reports.tgz" data/reports --exclude='*.jsonl' 2>/dev/null
touch "$R/DONE"
