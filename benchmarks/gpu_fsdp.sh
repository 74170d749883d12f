#!/usr/bin/env bash
# Team GRPO under FSDP2 on a 2-GPU host (docs/gpu.md), against one GPU in the same call: the gpu-dev profile's data +
# SFT (300 steps per role, GPU 0), a decoder check (the SFT team evaluated with generation.fast_path static vs off on
# composite_test), then grpo-team for $STEPS steps on 1 GPU (plain process), on 2 GPUs under FSDP2
# (configs/accelerate/fsdp.yaml) and on 2 GPUs under DDP (configs/accelerate/ddp.yaml), all with grpo.team.bf16: true.
# Per-step times: data/reports/train/grpo_team_{1gpu,fsdp,ddp}.json (step_time_s, tokens_per_s).
#   R=/tmp/gpurun STEPS=16 bash benchmarks/gpu_fsdp.sh
set -u
R=${R:-/tmp/gpurun}; mkdir -p "$R" data; P=data/params.gpu-dev.yaml; STEPS=${STEPS:-16}
source "$(dirname "$0")/gpu_common.sh"  # step, CLI, the environment
{ nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; } >"$R/env.txt" 2>&1
mkparams() {  # mkparams OUT [--set K=V ...]
  local out=$1; shift
  $CLI profile apply configs/profiles/gpu-dev.yaml -o $out --set sandbox.isolation=unshare \
    --set sandbox.python=$(command -v python3) --set grpo.team.max_steps=$STEPS --set grpo.team.eval_steps=0 \
    --set grpo.team.save_steps=100000 --set sft.max_steps=300 --set sft.planner.max_steps=300 \
    --set "evaluate.benchmarks=[composite_test]" "$@" >>"$R/log" 2>&1
}
mkparams $P
export CUDA_VISIBLE_DEVICES=0
step build_data $CLI build-data --params $P
step init_model $CLI init-model --params $P
step sft_planner $CLI sft --role planner --params $P
step sft_coder $CLI sft --role coder --params $P
for fp in static off; do
  mkparams data/params.$fp.yaml --set "generation.fast_path='$fp'"
  step "eval_sft_$fp" $CLI evaluate --method planner_coder_sft --params data/params.$fp.yaml
  cp data/reports/eval/planner_coder_sft/composite_test.jsonl "$R/sft_$fp.jsonl"
done
G="--set grpo.team.planner_output=data/checkpoints/grpo_planner_"
step grpo_1gpu $CLI grpo-team --params $P ${G}1gpu --set grpo.team.coder_output=data/checkpoints/grpo_coder_1gpu \
  --set grpo.team.checkpoint_dir=data/checkpoints/state_1gpu --set grpo.team.log_path=data/reports/train/grpo_team_1gpu.json
export CUDA_VISIBLE_DEVICES=0,1
for mode in fsdp ddp; do
  step "grpo_2gpu_$mode" python3 -m accelerate.commands.launch --config_file configs/accelerate/$mode.yaml \
    -m corecode.cli --pipeline-outputs grpo-team --params $P ${G}$mode --set grpo.team.coder_output=data/checkpoints/grpo_coder_$mode \
    --set grpo.team.checkpoint_dir=data/checkpoints/state_$mode --set grpo.team.log_path=data/reports/train/grpo_team_$mode.json
done
tar czf "$R/reports.tgz" data/reports --exclude='*.jsonl' 2>/dev/null
touch "$R/DONE"
