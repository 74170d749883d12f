#!/usr/bin/env bash
# Local Prefect for corecode (`make prefect`): a server on 127.0.0.1, the two work pools, the `gpu` tag concurrency
# limit, the deployments of flows/prefect-local.yaml, and one worker per pool. Runs from the repo root wherever it is
# called from.
# Stop with Ctrl-C (the server and workers are this script's children). Docs: docs/prefect.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# The repo's venv first on PATH: the CLIs here, and the `corecode`/`dvc` that the workers' stages call.
if [[ -x .venv/bin/prefect ]]; then export PATH="$PWD/.venv/bin:$PATH"; fi
PORT="${PREFECT_PORT:-4200}"
export PREFECT_API_URL="http://127.0.0.1:${PORT}/api"
# The server otherwise sends usage telemetry to an outside host; this machine has (and wants) no such traffic.
export PREFECT_SERVER_ANALYTICS_ENABLED="${PREFECT_SERVER_ANALYTICS_ENABLED:-false}"
# The client retries 408, 429, 502 and 503 but not 500, which this SQLite-backed server can answer now and then: a flow
# whose final state change met one would crash after its work is done (docs/prefect.md).
export PREFECT_CLIENT_RETRY_EXTRA_CODES="${PREFECT_CLIENT_RETRY_EXTRA_CODES:-500}"
export DO_NOT_TRACK="${DO_NOT_TRACK:-true}" MLFLOW_DISABLE_TELEMETRY="${MLFLOW_DISABLE_TELEMETRY:-true}"
PREFECT="${PREFECT:-prefect}"

trap 'kill $(jobs -p) 2>/dev/null || true' EXIT INT TERM
"$PREFECT" server start --host 127.0.0.1 --port "$PORT" &
for _ in $(seq 90); do
  curl -sf "${PREFECT_API_URL}/health" >/dev/null && break
  sleep 1
done
curl -sf "${PREFECT_API_URL}/health" >/dev/null || { echo "prefect server did not come up on port ${PORT}" >&2; exit 1; }

for pool in cpu gpu; do
  "$PREFECT" work-pool inspect "$pool" >/dev/null 2>&1 || "$PREFECT" work-pool create "$pool" --type process
done
"$PREFECT" concurrency-limit inspect gpu >/dev/null 2>&1 || "$PREFECT" concurrency-limit create gpu 1
"$PREFECT" --no-prompt deploy --all --prefect-file flows/prefect-local.yaml

"$PREFECT" worker start --pool cpu &
if [[ "${CORECODE_GPU_WORKER:-1}" == "1" ]]; then
  "$PREFECT" worker start --pool gpu &
fi
echo "Prefect UI: http://127.0.0.1:${PORT}  (run: prefect deployment run corecode-pipeline/pipeline-full)"
wait
