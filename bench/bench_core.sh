#!/usr/bin/env bash
# bench_core.sh CORONER ZOO
#
# The core model's figures (the foundation issue's targets):
#  - bytes read from each core for registers-only analysis (target: <= 64 KiB);
#  - cores per second analyzed in one process from page cache (target: >= 2000);
#  - against gdb reading the same cores' registers, in the same run.
# Timings are wall-clock on a shared machine: read them as ratios.
set -euo pipefail
coroner=$1 zoo=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t cores < <(ls "$zoo"/cores/*.core | grep -v -- '-gcore')
cat "${cores[@]}" > /dev/null  # page cache
now() { date +%s.%N; }

# Bytes read per core, registers and modules, one pass over the zoo.
"$coroner" analyze --json --registers-only --no-module-files "${cores[@]}" > "$work/one.ndjson"
grep -o '"bytes_read":[0-9]*' "$work/one.ndjson" | cut -d: -f2 | sort -n > "$work/bytes"
n=$(wc -l < "$work/bytes")
median=$(sed -n "$(( (n + 1) / 2 ))p" "$work/bytes")
max=$(tail -1 "$work/bytes")
# The largest core in the zoo (many threads, 256 MiB) against the smallest.
biggest=$(ls -S "${cores[@]}" | head -1)
big_bytes=$("$coroner" analyze --json --registers-only --no-module-files "$biggest" | grep -o '"bytes_read":[0-9]*' | cut -d: -f2)
single=$(grep -v '"tid":[0-9]*,.*"tid":' "$work/one.ndjson" | grep -o '"bytes_read":[0-9]*' | cut -d: -f2 | sort -n | tail -1)

# Throughput: the zoo repeated to at least 2000 cores, in one process.
list=()
while [ ${#list[@]} -lt 2000 ]; do list+=("${cores[@]}"); done
total=${#list[@]}
t0=$(now)
"$coroner" analyze --json --registers-only --no-module-files "${list[@]}" > /dev/null
t1=$(now)
"$coroner" analyze --json --registers-only "${list[@]}" > /dev/null
t2=$(now)

# gdb, registers of every thread, over the zoo once.
g0=$(now)
for c in "${cores[@]}"; do
  gdb -nx -batch -q -ex 'thread apply all info registers rip' "$c" > /dev/null 2>&1 || true
done
g1=$(now)

awk -v n="$total" -v a="$t0" -v b="$t1" -v c="$t2" -v zn="${#cores[@]}" -v g0="$g0" -v g1="$g1" \
    -v median="$median" -v max="$max" -v single="$single" -v big="$big_bytes" -v bigf="$(basename "$biggest")" '
BEGIN {
  regs = n / (b - a); full = n / (c - b);
  gdb_per = (g1 - g0) / zn; ours_per = (b - a) / n;
  printf "cores_in_zoo: %d (analyzed %d times over: %d cores per run)\n", zn, n / zn, n;
  printf "bytes_read_median: %d\n", median;
  printf "bytes_read_max: %d\n", max;
  printf "bytes_read_max_single_thread_core: %d (target <= 65536)\n", single;
  printf "bytes_read_largest_core: %d (%s)\n", big, bigf;
  printf "registers_only_cores_per_s: %.0f (target >= 2000)\n", regs;
  printf "with_module_files_cores_per_s: %.0f\n", full;
  printf "gdb_registers_ms_per_core: %.1f\n", gdb_per * 1000;
  printf "coroner_registers_ms_per_core: %.3f\n", ours_per * 1000;
  printf "speedup_vs_gdb: %.0fx\n", gdb_per / ours_per;
}'
