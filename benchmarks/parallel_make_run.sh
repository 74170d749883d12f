#!/usr/bin/env bash
# `make run` with its stages side by side (corecode repro: RUN_JOBS=nproc stages at once, one torch thread each)
# against the same pipeline one stage at a time (dvc repro dvc.yaml with OMP_NUM_THREADS=nproc), each in a fresh
# clone of this checkout's HEAD, install included. The side-by-side run goes first, so a failure shows early.
# Prints each side's wall time, their ratio, each stage's seconds from the runs' MLflow records, and whether the two
# data/reports/metrics.json files are byte-identical (they are when a stage computes the same on one thread as on
# two).
#   bash benchmarks/parallel_make_run.sh [WORKDIR]     (about 55 minutes on the 2-core VM; WORKDIR keeps the clones)
set -euo pipefail
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cores=$(nproc)
echo "HEAD $(git -C "$src" rev-parse --short HEAD), $cores cores, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

timed() {  # NAME COMMAND...: run COMMAND in a fresh clone WORK/NAME, log to WORK/NAME.log, print its seconds
  local name=$1; shift
  rm -rf "${work:?}/$name"
  git clone -q "$src" "$work/$name"
  local t0; t0=$(date +%s)
  if ! (cd "$work/$name" && "$@") > "$work/$name.log" 2>&1; then
    echo "$name failed after $(( $(date +%s) - t0 )) s; the end of $work/$name.log:" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  fi
  echo $(( $(date +%s) - t0 ))
}

side_s=$(timed side_by_side make run)
echo "side by side (make run: corecode repro --jobs $cores --threads 1): $side_s s"
# make run before corecode repro: the venv first on PATH (the Makefile exports it), every core's threads in each stage
serial_s=$(timed one_at_a_time bash -c "make setup && PATH=\$PWD/.venv/bin:\$PATH OMP_NUM_THREADS=$cores dvc repro dvc.yaml")
echo "one at a time (dvc repro dvc.yaml, OMP_NUM_THREADS=$cores): $serial_s s"
python3 -c "print(f'ratio one at a time / side by side: {$serial_s / $side_s:.3f}')"

echo "stage seconds (MLflow run start to end): side by side / one at a time"
python3 - "$work/side_by_side/mlflow.db" "$work/one_at_a_time/mlflow.db" <<'EOF'
import sqlite3, sys
rows = [dict(sqlite3.connect(db).execute(
    "select name, (end_time - start_time) / 1000.0 from runs where end_time is not null")) for db in sys.argv[1:]]
for name in sorted(rows[1], key=lambda n: -rows[1][n]):
    print(f"  {name:<34} {rows[0].get(name, float('nan')):7.1f} {rows[1][name]:7.1f}")
EOF
if cmp -s "$work/side_by_side/data/reports/metrics.json" "$work/one_at_a_time/data/reports/metrics.json"; then
  echo "metrics.json: byte-identical"
else
  echo "metrics.json: differs"
  diff <(python3 -m json.tool "$work/side_by_side/data/reports/metrics.json") \
       <(python3 -m json.tool "$work/one_at_a_time/data/reports/metrics.json") | head -40 || true
fi
