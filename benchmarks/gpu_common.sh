# Sourced by the GPU benchmark scripts: `step NAME CMD...` runs a command, appends its output to $R/log and one line
# to $R/steps.tsv: name, exit code, seconds, peak memory.used of the busiest GPU it sees (nvidia-smi, polled every
# 250 ms), and how many of its processes held a CUDA context on more than one GPU (polled every 2 s; a data-parallel
# rank should hold one: a second means a rank put work or memory on another rank's GPU; "?" where nvidia-smi listed
# no process, as in some containers; the polls are in $R/apps.NAME).
# NVLink multicast stays off (NCCL, PyTorch, NVSHMEM): the lent multi-GPU hosts require it.
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1
CLI="python3 -m corecode.cli --pipeline-outputs"  # the pipeline's places under data/, as dvc.yaml
# multi_gpu_pids FILE: how many processes of nvidia-smi's compute-apps polls (pid, bus id) had contexts on 2+ GPUs.
multi_gpu_pids() {
  sort -u "$1" 2>/dev/null | awk -F', *' 'NF == 2 {n[$1]++}
    END {m = 0; k = 0; for (p in n) {k++; if (n[p] > 1) m++}; print k ? m : "?"}'
}
step() {
  local name=$1; shift; local t0=$(date +%s.%N)
  echo "=== $name: $*" >>"$R/log"
  # nvidia-smi ignores CUDA_VISIBLE_DEVICES: poll only the GPUs this step sees (another step may share the host)
  nvidia-smi ${CUDA_VISIBLE_DEVICES:+-i "$CUDA_VISIBLE_DEVICES"} --query-gpu=memory.used --format=csv,noheader,nounits \
    -lms 250 >"$R/mem.$name" 2>/dev/null &
  local poll=$!
  nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader -l 2 >"$R/apps.$name" 2>/dev/null &
  local apps=$!
  "$@" >>"$R/log" 2>&1; local rc=$?
  kill $poll $apps 2>/dev/null; wait $poll $apps 2>/dev/null
  local peak=$(sort -n "$R/mem.$name" 2>/dev/null | tail -1)
  local multi=$(multi_gpu_pids "$R/apps.$name")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")" "${peak:-?}MiB" \
    "multi-GPU pids: ${multi:-?}" | tee -a "$R/steps.tsv"
  return $rc
}
# The first sandbox isolation that passes the canonical-solutions self-test (bubblewrap is usually absent on GPU
# hosts); sets ISO_SET to the --set arguments that select it. Needs $P written by the caller's `profile apply`.
pick_isolation() {
  ISO_SET=()
  for combo in "bwrap true" "unshare true" "unshare false" "none false"; do
    set -- $combo
    if $CLI sandbox-selftest --params "$P" --isolation $1 >>"$R/log" 2>&1; then
      ISO_SET=(--set "sandbox.isolation=$1" --set "sandbox.cgroup=$2"); echo "sandbox: $1 cgroup=$2" >>"$R/steps.tsv"
      return 0
    fi
  done
  return 1
}
