#!/usr/bin/env bash
# Wait (at most $1 seconds) for a detached GPU benchmark driver writing under $R to touch $R/DONE, then copy its
# small results to $OUT and print its step tables and the end of its logs.
R=${R:-/tmp/gpurun}; end=$(( $(date +%s) + ${1:-500} ))
while [ ! -e "$R/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
tar czf "$OUT/results.tgz" -C "$R" --exclude='mem.*' . 2>/dev/null
tar czf "$OUT/reports.tgz" data/reports --exclude='*.jsonl' 2>/dev/null
for f in $(find "$R" -name steps.tsv | sort); do echo "== $f"; cat "$f"; done
[ -e "$R/DONE" ] && echo DRIVER_DONE
for f in $(find "$R" -name log | sort); do echo "== tail $f"; tail -c 1500 "$f"; done
