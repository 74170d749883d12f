#!/usr/bin/env bash
# Wait (at most $1 seconds) for the detached gpu_dev_pipeline.sh to finish, then copy its small results to $OUT.
R=${R:-/tmp/gpurun}; end=$(( $(date +%s) + ${1:-500} ))
while [ ! -e "$R/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
tar czf "$OUT/reports.tgz" data/reports --exclude='*.jsonl' 2>/dev/null
cp "$R"/log "$R"/steps.tsv "$R"/env.txt "$R"/throughput.json "$OUT"/ 2>/dev/null
cat "$R/env.txt" "$R/steps.tsv"; [ -e "$R/DONE" ] && echo PIPELINE_DONE; tail -c 5000 "$R/log"
