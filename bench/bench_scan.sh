#!/usr/bin/env bash
# bench_scan.sh CORONER ZOO
#
# `coroner scan` over a fleet of 1,000 real zoo cores (hard links of the
# plain, zstd and lz4 cores, the 1 GiB-heap cores among them) against a
# shell loop of `eu-stack --core` over the same cores, in the same run.
# Per CPU core: the scan runs with --jobs 1 and is charged the CPU time of
# itself and its worker. Targets: >= 2,000 cores/s per CPU core, >= 5x
# eu-stack per CPU core, median bytes read <= 1 MiB, and the 1 GiB-heap
# cores read no more than small ones.
#
# The xz copy is left out of the fleet: an xz stream has no seek points, so
# reaching the stack at the end of a 268 MB core means decoding all of it
# (about 0.2 s); it is timed on its own below.
set -euo pipefail
coroner=$1 zoo=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=1000

mapfile -t zoo_cores < <(ls "$zoo"/cores/*.core "$zoo"/cores/*.zst "$zoo"/cores/*.lz4)
mkdir "$work/fleet"
i=0
while [ $i -lt $n ]; do
  for c in "${zoo_cores[@]}"; do
    [ $i -ge $n ] && break
    ln "$c" "$work/fleet/c$i-$(basename "$c")" 2>/dev/null || ln -s "$c" "$work/fleet/c$i-$(basename "$c")"
    i=$((i + 1))
  done
done
exe_of() { local b; b=$(basename "$1"); b=${b#c*-}; b=${b%%.core*}; echo "$zoo/bin/${b%-gcore}"; }
# Page cache: the cores' heads and the binaries every tool reads.
for c in "${zoo_cores[@]}"; do head -c 1048576 "$c" > /dev/null; done
cat "$zoo"/bin/* > /dev/null
"$coroner" scan "$work/fleet" --db "$work/warm.db" --jobs 1 > /dev/null

cpu() { /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" > /dev/null 2>&1; awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$work/time"; }
read -r scan_wall scan_cpu < <(cpu "$coroner" scan "$work/fleet" --db "$work/one.db" --jobs 1)
jobs=$(nproc)
read -r par_wall par_cpu < <(cpu "$coroner" scan "$work/fleet" --db "$work/par.db" --jobs "$jobs")
cat > "$work/eu.sh" <<EOS
for c in "$work"/fleet/*; do
  case "\$c" in *.zst|*.lz4) continue;; esac
  eu-stack --core="\$c" > /dev/null 2>&1 || true
done
EOS
plain=$(ls "$work"/fleet | grep -c '\.core$')
read -r eu_wall eu_cpu < <(cpu bash "$work/eu.sh")
xz=$(ls "$zoo"/cores/*.xz | head -1)
read -r xz_wall xz_cpu < <(cpu "$coroner" scan "$xz" --db "$work/xz.db" --jobs 1)

q() { "$coroner" query --db "$work/one.db" "$1" | sed -n 3p | tr -d ' '; }
ok=$(q "SELECT count(*) FROM cores WHERE status = 'ok'")
median=$(q "SELECT bytes_read FROM cores ORDER BY bytes_read LIMIT 1 OFFSET $((n / 2))")
max=$(q "SELECT max(bytes_read) FROM cores")
big=$(q "SELECT max(bytes_read) FROM cores WHERE size >= 1073741824")
small=$(q "SELECT max(bytes_read) FROM cores WHERE path LIKE '%null_deref-O0.core'")

awk -v n="$n" -v ok="$ok" -v sw="$scan_wall" -v sc="$scan_cpu" -v pw="$par_wall" -v pc="$par_cpu" -v jobs="$jobs" \
    -v ew="$eu_wall" -v ec="$eu_cpu" -v plain="$plain" -v median="$median" -v max="$max" -v big="$big" \
    -v small="$small" -v xw="$xz_wall" '
BEGIN {
  ours = n / sc; eu = plain / ec;
  printf "fleet_cores: %d (%d ok)\n", n, ok;
  printf "scan_jobs1_s: %.2f wall, %.2f cpu\n", sw, sc;
  printf "scan_jobs%d_s: %.2f wall (%.0f cores/s), %.2f cpu\n", jobs, pw, n / pw, pc;
  printf "eu_stack_loop_s: %.2f wall, %.2f cpu over the %d uncompressed cores\n", ew, ec, plain;
  printf "xz_core_scan_s: %.2f (one 268 MB core as an xz stream)\n", xw;
  printf "bytes_read_per_core_median: %d\n", median;
  printf "bytes_read_per_core_max: %d\n", max;
  printf "bytes_read_1GiB_heap_core: %d (small null_deref core: %d)\n", big, small;
  printf "scan_cores_per_s_per_cpu: %.0f (target >= 2000)\n", ours;
  printf "eu_stack_cores_per_s_per_cpu: %.0f\n", eu;
  printf "speedup_vs_eu_stack_per_cpu: %.1fx (target >= 5x)\n", ours / eu;
}'
