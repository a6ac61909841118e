#!/usr/bin/env bash
# bench_live.sh BUILD
#
# How long `analyze --pid` holds a running process, against its peers in
# the same run on the same processes (tests/live/busy.c: N threads blocked
# on a condition variable): gdb -p (attach, `thread apply all bt`, detach)
# and eu-stack -p hold the process for their whole run, so their wall time
# is their stop; coroner's is its own `snapshot.stopped_ms`. Targets: 20
# threads <= 10 ms, 2,000 threads <= 100 ms; and a host of 64 ranks
# (`scan --pid` of 64 processes) < 1 s of wall time.
set -euo pipefail
build=$1
busy=$build/tests/live_busy
[ -x "$busy" ] || { echo "bench_live: $busy is not built (make build)"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
start() {  # start N: a busy process of N waiting threads, in $started once they all wait
  "$busy" many "$1" > "$work/out.$1.${#pids[@]}" &
  started=$!
  pids+=("$started")
  for _ in $(seq 600); do grep -q ready "$work/out.$1.$((${#pids[@]} - 1))" 2>/dev/null && break; sleep 0.05; done
}
start 20; p20=$started
start 2000; p2000=$started
python3 - "$build/coroner" "$p20" "$p2000" <<'PY'
import json, shutil, statistics, subprocess, sys, time
coroner, pids = sys.argv[1], {20: sys.argv[2], 2000: sys.argv[3]}
target = {20: 10.0, 2000: 100.0}
def wall(cmd):
    t = time.monotonic(); subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); return (time.monotonic() - t) * 1e3
for n, pid in pids.items():
    held = []
    for _ in range(7):
        out = subprocess.run([coroner, "analyze", "--json", "--registers-only", "--pid", pid], capture_output=True, check=True)
        held.append(json.loads(out.stdout)["snapshot"]["stopped_ms"])
    ours = statistics.median(held)
    line = f"live: {n} threads: coroner holds the process {ours:.2f} ms (median of 7; target <= {target[n]:.0f} ms)"
    peers = []
    runs = 3 if n <= 100 else 1  # gdb takes minutes over 2,000 threads
    if shutil.which("gdb"):
        peers.append(("gdb -p + bt", statistics.median(
            wall(["timeout", "600", "gdb", "-nx", "-batch", "-p", pid, "-ex", "thread apply all bt"]) for _ in range(runs))))
    if shutil.which("eu-stack"):
        peers.append(("eu-stack -p", statistics.median(wall(["timeout", "600", "eu-stack", "-p", pid]) for _ in range(runs))))
    for name, ms in peers:
        line += f"; {name} {ms:.0f} ms ({ms / max(ours, 0.001):.0f}x)"
    print(line, flush=True)
PY
# A host of 64 ranks: one scan of 64 processes.
many=()
for _ in $(seq 64); do start 4; many+=("$started"); done
t0=$(date +%s%N)
"$build/coroner" scan --pid "${many[@]}" --db "$work/host.db" > /dev/null
t1=$(date +%s%N)
echo "live: scan --pid of a host of 64 ranks (4 threads each): $(( (t1 - t0) / 1000000 )) ms of wall time, snapshots and analysis (target < 1000 ms)"
