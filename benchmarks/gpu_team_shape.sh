#!/usr/bin/env bash
# Team GRPO of both roles at a real model shape on random weights: a stand-in of $SHAPE (benchmarks/
# standin_checkpoint.py) is both roles' start, the $PROFILE profile's GRPO settings (LoRA, gradient checkpointing,
# dtype, shared base) train it for $STEPS steps on `composite` problems, on one GPU (NPROC=1) or under accelerate DDP
# (NPROC=2: one process per GPU, each holding the profile's role models, a shared base where it says so). Wall time
# and peak GPU memory per step go to $R/steps.tsv, the per-step summary (median step time, rollout tokens/s) after it.
# Needs PYTHONPATH with corecode + its wheels.
#   PROFILE=qwen2.5-coder-7b-instruct SHAPE=7b STEPS=6 R=/tmp/t7 bash benchmarks/gpu_team_shape.sh
#   NPROC=2 EXTRA_SET="grpo.team.shared_base=false" ... (a base per role in each process)
set -u
PROFILE=${PROFILE:?a profile, e.g. qwen2.5-coder-7b-instruct}; SHAPE=${SHAPE:?a shape: 1.5b, 3b, 7b, 14b}
STEPS=${STEPS:-6}; NPROC=${NPROC:-1}; R=${R:-/tmp/team_$SHAPE}; mkdir -p "$R" data
P=data/params.team-$SHAPE.yaml; M=data/standin/$SHAPE-instruct; LOG=data/reports/train/grpo_team_$SHAPE.json
source "$(dirname "$0")/gpu_common.sh"  # step, pick_isolation
{ nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; } >"$R/env.txt" 2>&1
[ -f "$M/config.json" ] || step "standin_$SHAPE" python3 benchmarks/standin_checkpoint.py --shape "$SHAPE" --out "$M"
EXTRA=(); for kv in ${EXTRA_SET:-}; do EXTRA+=(--set "$kv"); done
apply() { $CLI profile apply "$PROFILE" -o $P --set "model.name_or_path=$M" --set "grpo.team.planner_model=$M" \
  --set "grpo.team.coder_model=$M" --set grpo.team.max_steps=$STEPS --set grpo.team.eval_steps=0 \
  --set grpo.team.save_steps=1000 --set grpo.team.resume=false --set "grpo.team.log_path=$LOG" \
  --set "grpo.team.checkpoint_dir=data/run_state/team_$SHAPE" --set "grpo.team.planner_output=data/work/$SHAPE/planner" \
  --set "grpo.team.coder_output=data/work/$SHAPE/coder" --set sandbox.python=$(command -v python3) "${EXTRA[@]}" "$@" \
  >>"$R/log" 2>&1; }
apply && pick_isolation && apply "${ISO_SET[@]}"
[ -f data/processed/composite_rl.jsonl ] || step build_data $CLI build-data --params $P
if [ "$NPROC" = 1 ]; then
  step "grpo_${SHAPE}_1gpu" $CLI grpo-team --params $P
else
  step "grpo_${SHAPE}_${NPROC}gpu" python3 -m accelerate.commands.launch --config_file configs/accelerate/ddp.yaml \
    --num_processes "$NPROC" -m corecode.cli --pipeline-outputs grpo-team --params $P
fi
python3 benchmarks/grpo_log_summary.py "$LOG" | tee -a "$R/steps.tsv"
