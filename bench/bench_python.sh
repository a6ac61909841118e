#!/usr/bin/env bash
# bench_python.sh CORONER CORES_DIR
#
# What the Python stacks cost: the full analysis of python3 cores (those of
# tests/python/make_python_cores.sh, made in CORES_DIR when absent) with and
# without them (--no-python), in the same run, 20 times each, alternating.
# Target: Python frames add <= 10% to the time and to the bytes read.
set -euo pipefail
coroner=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -s "$dir/manifest.tsv" ] || "$here/../tests/python/make_python_cores.sh" "$dir" >/dev/null 2>&1
mapfile -t cores < <(awk -F'\t' '!/^#/ {print $3}' "$dir/manifest.tsv")
if [ ${#cores[@]} -eq 0 ]; then
  echo "python: no python3 cores (no CPython 3.11+ here)"
  exit 0
fi
cat "${cores[@]}" > /dev/null
"$coroner" analyze --json "${cores[@]}" > /dev/null
now() { date +%s.%N; }
with=0 without=0
for i in $(seq 20); do
  t0=$(now); "$coroner" analyze --json "${cores[@]}" > /dev/null; t1=$(now)
  "$coroner" analyze --json --no-python "${cores[@]}" > /dev/null; t2=$(now)
  with=$(echo "$with + $t1 - $t0" | bc); without=$(echo "$without + $t2 - $t1" | bc)
done
bytes_with=$("$coroner" analyze --json "${cores[@]}" | grep -o '"bytes_read":[0-9]*' | cut -d: -f2 | paste -sd+ | bc)
bytes_without=$("$coroner" analyze --json --no-python "${cores[@]}" | grep -o '"bytes_read":[0-9]*' | cut -d: -f2 | paste -sd+ | bc)
frames=$("$coroner" analyze --json "${cores[@]}" | grep -o '"kind":"python"' | wc -l)
awk -v n="${#cores[@]}" -v w="$with" -v wo="$without" -v bw="$bytes_with" -v bwo="$bytes_without" -v frames="$frames" '
BEGIN {
  printf "python_cores: %d (python frames: %d)\n", n, frames;
  printf "python_full_ms_per_core: %.1f with Python stacks, %.1f without\n", w / 20 / n * 1000, wo / 20 / n * 1000;
  printf "python_time_ratio: %.3f (target <= 1.10)\n", w / wo;
  printf "python_bytes_read: %d with, %d without, ratio %.3f (target <= 1.10)\n", bw, bwo, bw / bwo;
}'
