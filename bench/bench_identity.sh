#!/usr/bin/env bash
# bench_identity.sh BUILD ZOO
#
# What reading each core's command line and environment costs a scan: the
# read alone on the zoo's cores (bench/identity_cost.cc, in process), against
# the CPU time per core of `coroner scan --jobs 1` over the same cores (the
# scan and its worker), in the same run. Target: < 5%.
set -euo pipefail
build=$1 zoo=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t cores < <(ls "$zoo"/cores/*.core)
cat "${cores[@]}" > /dev/null
line=$("$build/bench/identity_cost" "${cores[@]}")
echo "$line"
per_read=$(sed -n 's/.*environment \([0-9.]*\) us a core.*/\1/p' <<< "$line")
# The scan, five times over the cores (a fresh dataset each time): the CPU
# time of the scan and its worker.
python3 - "$build/coroner" "$work" "$per_read" "${cores[@]}" <<'PY'
import resource, subprocess, sys
coroner, work, per_read, cores = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
for i in range(5):
    subprocess.run([coroner, "scan", "--jobs", "1", "--db", f"{work}/d{i}.db", *cores], check=True,
                   stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
per_scan = (r.ru_utime + r.ru_stime) / (5 * len(cores)) * 1e6
print(f"identity: coroner scan --jobs 1: {per_scan:.0f} us of CPU a core; reading the command line and "
      f"environment is {100 * per_read / per_scan:.2f}% of it (target < 5%)")
PY
