#!/usr/bin/env bash
# bench_a64.sh CORONER ZOO
#
# The aarch64 zoo (qemu-user's cores, read through the dynamic linker's
# list) analyzed in one `coroner analyze --json` call, beside the x86_64
# zoo's batch in the same run: the per-core cost of each, and their ratio
# (target: the same cost, <= 1.25x). Also against a loop of gdb-multiarch
# and of eu-stack over the aarch64 cores. Each batch is the median of five
# runs: one run of 40 ms is at the mercy of a shared machine.
set -euo pipefail
coroner=$1 zoo=$2
sysroot=/usr/aarch64-linux-gnu
# The cores gdb-multiarch has an oracle for: it does not finish on qemu's
# signal frames (the handler crashers), which would stall its loop.
mapfile -t a64 < <(awk -F'\t' '!/^#/ && $5 != "-" {print $4}' "$zoo/a64/manifest.tsv")
mapfile -t x86 < <(ls "$zoo"/cores/*.core)
exes=()  # the programs and the libraries beside them (the dlopen crashers')
for b in "$zoo"/a64/bin/*; do exes+=(--exe "$b"); done
now() { date +%s.%N; }
median5() {  # the median of five runs of "$@", in seconds
  for _ in 1 2 3 4 5; do
    local s; s=$(now)
    "$@" > /dev/null
    echo "$s $(now)" | awk '{print $2 - $1}'
  done | sort -n | sed -n 3p
}
cat "${a64[@]}" "${x86[@]}" "$zoo"/a64/bin/* "$sysroot"/lib/*.so* > /dev/null 2>&1 || true
ours_a64=$(median5 "$coroner" analyze --json --sysroot "$sysroot" "${exes[@]}" "${a64[@]}")
ours_x86=$(median5 "$coroner" analyze --json --debug-dir "$zoo/debug" "${x86[@]}")
t1=$(now)
for c in "${a64[@]}"; do
  b="$zoo/a64/bin/$(basename "$c" .core)"
  gdb-multiarch -nx -batch -q -iex "set sysroot $sysroot" -iex "set solib-search-path $zoo/a64/bin" \
    -ex 'thread apply all bt 1024' "$b" "$c" > /dev/null 2>&1 || true
done
t2=$(now)
for c in "${a64[@]}"; do
  b="$zoo/a64/bin/$(basename "$c" .core)"
  eu-stack -n 1024 --core="$c" -e "$b" > /dev/null 2>&1 || true
done
t3=$(now)
awk -v na="${#a64[@]}" -v nx="${#x86[@]}" -v a="$ours_a64" -v x="$ours_x86" -v b="$t1" -v c="$t2" -v d="$t3" '
BEGIN {
  gdb = c - b; eu = d - c;
  pa = a / na * 1000; px = x / nx * 1000;
  printf "aarch64_cores: %d, x86_64_cores: %d\n", na, nx;
  printf "coroner_aarch64_s: %.3f (%.2f ms per core)\n", a, pa;
  printf "coroner_x86_64_s: %.3f (%.2f ms per core)\n", x, px;
  printf "aarch64_per_core_cost_vs_x86_64: %.2fx (target <= 1.25x)\n", pa / px;
  printf "gdb_multiarch_s: %.2f (%.1f ms per core): %.0fx coroner\n", gdb, gdb / na * 1000, gdb / a;
  printf "eu_stack_s: %.2f (%.1f ms per core): %.1fx coroner\n", eu, eu / na * 1000, eu / a;
}'
