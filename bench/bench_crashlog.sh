#!/usr/bin/env bash
# bench_crashlog.sh BUILD ZOO
#
# libcoroner_crashlog: the cost of installing the handler, the time from a
# fault 64 frames deep to its line being written (read from a pipe by the
# crashing process's parent), and ingesting
# 100,000 lines with `coroner scan --log`. Targets: < 1 ms, < 1 ms, < 5 s.
set -euo pipefail
build=$(realpath "$1") zoo=$(realpath "$2")
coroner=$build/coroner crasher=$build/tests/linked_crasher so=$build/libcoroner_crashlog.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for i in $(seq 21); do "$crasher" install "$work/i.log"; done | awk '{ print $2 }' | median > "$work/install"
for i in $(seq 21); do
  (ulimit -c 0; "$crasher" deep "$work/d.log" > /dev/null 2> "$work/err") 2> /dev/null || true
  awk '/fault_to_line_ns/ { print $2 }' "$work/err"
done | median > "$work/fault"
# Real lines: every dynamically linked zoo crasher once, preloaded.
for bin in "$zoo"/bin/*-O0 "$zoo"/bin/*-O2; do
  case $bin in *unwind_race*) continue ;; esac
  (cd "$work" && ulimit -c 0 && timeout 20 env CORONER_CRASHLOG_FILE="$work/real.log" LD_PRELOAD="$so" "$bin" > /dev/null 2>&1) \
    2> /dev/null || true
done
n=${CRASHLOG_LINES:-100000}
awk -v n="$n" '{ line[NR] = $0 } END {
  for (i = 0; i < n; i++) { l = line[i % NR + 1]; sub(/pid=[0-9]+/, "pid=" (100000 + i), l); print "2026-12-01T00:00:00Z pod-" i " " l } }' \
  "$work/real.log" > "$work/big.log"
# Three runs into a new dataset each (a shared machine is noisy): the
# median wall time, and the CPU time (user + system) of that run.
for i in 1 2 3; do
  rm -f "$work"/log.db*
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$coroner" scan --log "$work/big.log" --db "$work/log.db" > "$work/scan"
  cat "$work/time"
done | sort -n | sed -n 2p > "$work/ingest"
head -1 "$work/scan"
echo "real lines: $(wc -l < "$work/real.log") crashers, repeated to $n"
read -r wall user sys < "$work/ingest"
awk -v wall="$wall" -v cpu="$user" -v sys="$sys" -v n="$n" -v inst="$(cat "$work/install")" -v f="$(cat "$work/fault")" 'BEGIN {
  printf "crashlog_install_us: %.1f (target < 1000)\n", inst / 1000;
  printf "crashlog_fault_to_line_64_frames_us: %.1f (target < 1000)\n", f / 1000;
  printf "crashlog_ingest_%d_lines_s: %.1f (target < 5; median of 3; %.1f CPU-s, %.0f lines/s)\n", n, wall, cpu + sys, n / wall; }'
