#!/usr/bin/env bash
# bench_backtrace.sh CORONER ZOO
#
# Full analysis (every thread unwound and symbolized) of a batch of zoo cores
# in one `coroner analyze` call, against a loop of `gdb -batch -ex 'thread
# apply all bt'` and a loop of `eu-stack --core` over the same cores, in the
# same run. All three stop each backtrace at 1024 frames. Targets: >= 150x
# gdb, >= 5x eu-stack (the `--json` a batch of users reads). Also the bytes
# read per core.
set -euo pipefail
coroner=$1 zoo=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debug="$zoo/debug"

mapfile -t zoo_cores < <(ls "$zoo"/cores/*.core)
cores=()
while [ ${#cores[@]} -lt 50 ]; do cores+=("${zoo_cores[@]}"); done
n=${#cores[@]}
now() { date +%s.%N; }
exe_of() { local b; b=$(basename "$1" .core); echo "$zoo/bin/${b%-gcore}"; }
# Page cache: the cores, the binaries and the debug files every tool reads.
cat "${zoo_cores[@]}" "$zoo"/bin/* > /dev/null
find "$debug" /usr/lib/debug/.build-id -name '*.debug' -exec cat {} + > /dev/null 2>&1 || true
"$coroner" analyze --json --debug-dir "$debug" "${zoo_cores[@]}" > /dev/null

# coroner's batch takes some 60 ms, where one run is at the mercy of a
# shared machine: the median of five.
for _ in 1 2 3 4 5; do
  s=$(now)
  "$coroner" analyze --json --debug-dir "$debug" --max-frames 1024 "${cores[@]}" > "$work/ours.ndjson"
  echo "$s $(now)" | awk '{print $2 - $1}'
done | sort -n | sed -n 3p > "$work/median"
t1=$(now)
for c in "${cores[@]}"; do
  gdb -nx -batch -q -iex "set debug-file-directory $debug:/usr/lib/debug" -ex 'thread apply all bt 1024' \
    "$(exe_of "$c")" "$c" > /dev/null 2>&1 || true
done
t2=$(now)
for c in "${cores[@]}"; do
  eu-stack -n 1024 --debuginfo-path="$debug:/usr/lib/debug" --core="$c" -e "$(exe_of "$c")" > /dev/null 2>&1 || true
done
t3=$(now)
# eu-stack asked for what coroner reports: inlined frames (-i) and source lines (-s).
for c in "${cores[@]}"; do
  eu-stack -i -s -n 1024 --debuginfo-path="$debug:/usr/lib/debug" --core="$c" -e "$(exe_of "$c")" > /dev/null 2>&1 || true
done
t4=$(now)

grep -o '"bytes_read":[0-9]*' "$work/ours.ndjson" | cut -d: -f2 | sort -n > "$work/bytes"
median=$(sed -n "$(( (n + 1) / 2 ))p" "$work/bytes")
max=$(tail -1 "$work/bytes")
frames=$(grep -o '"trust":' "$work/ours.ndjson" | wc -l)

awk -v n="$n" -v ours="$(cat "$work/median")" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v median="$median" -v max="$max" -v frames="$frames" '
BEGIN {
  gdb = c - b; eu = d - c; eu_is = e - d;
  printf "cores: %d (every zoo core once; repeated only if fewer than 50)\n", n;
  printf "frames_symbolized: %d\n", frames;
  printf "coroner_s: %.2f (%.1f ms per core)\n", ours, ours / n * 1000;
  printf "gdb_s: %.2f (%.1f ms per core)\n", gdb, gdb / n * 1000;
  printf "eu_stack_s: %.2f (%.1f ms per core)\n", eu, eu / n * 1000;
  printf "eu_stack_inlines_lines_s: %.2f (%.1f ms per core)\n", eu_is, eu_is / n * 1000;
  printf "bytes_read_per_core_median: %d\n", median;
  printf "bytes_read_per_core_max: %d\n", max;
  printf "speedup_vs_gdb: %.1fx (target >= 150x)\n", gdb / ours;
  printf "speedup_vs_eu_stack: %.1fx (target >= 5x)\n", eu / ours;
  printf "speedup_vs_eu_stack_inlines_lines: %.1fx\n", eu_is / ours;
}'
