#!/usr/bin/env bash
# Two independent one-GPU timing runs at the same time, on GPUs 0 and 1, with no collective between them: what two GPUs
# of this host give when they share nothing but the host (CPU, memory, PCIe). The `pair` arrangement of
# benchmarks/gpu_scaling.sh; set against DDP on the same 2 GPUs, it tells host contention from data-parallel cost.
# Each process takes a DDP rank's share of the cores (LOCAL_WORLD_SIZE=2: data_parallel.take_host_share;
# CORECODE_LOCAL_RANK picks its own cores under grpo.team.pin_cores), so the two arrangements differ only in the
# collectives and DDP's wrapper.
# Arguments as benchmarks/team_timing.py's; the second process writes its log and state beside the first's (`.gpu1`).
#   bash benchmarks/team_timing_pair.sh --params P --set grpo.team.log_path=L --set grpo.team.checkpoint_dir=D
set -u
second=()
for a in "$@"; do
  case $a in
    grpo.team.log_path=*) second+=("${a%.json}.gpu1.json") ;;
    grpo.team.checkpoint_dir=*) second+=("$a.gpu1") ;;
    *) second+=("$a") ;;
  esac
done
here=$(dirname "$0")
LOCAL_WORLD_SIZE=2 CORECODE_LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=0 python3 "$here/team_timing.py" "$@" & first_pid=$!
LOCAL_WORLD_SIZE=2 CORECODE_LOCAL_RANK=1 CUDA_VISIBLE_DEVICES=1 python3 "$here/team_timing.py" "${second[@]}" & second_pid=$!
wait $first_pid; rc0=$?
wait $second_pid; rc1=$?
exit $((rc0 > rc1 ? rc0 : rc1))
