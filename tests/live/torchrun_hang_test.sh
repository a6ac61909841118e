#!/usr/bin/env bash
# A Python job of 8 ranks under a torchrun-style launcher
# (tests/live/elastic_launch.py) hangs: rank 5's main thread waits in
# Queue.get <- next_batch for a batch its loader thread never brings (the
# loader blocks reading a FIFO nobody writes), and the other 7 wait in
# ring_step's recv for the token (tests/live/ring_rank.py). Debian's own
# python3.
#  (b) live: `coroner scan --pid` of every rank into two shards, `merge`,
#      `epi`: one hang incident of the torchrun run whose odd rank is 5,
#      waiting in next_batch (a Python frame), the others in ring_step;
#      rank 5's Python frames as the interpreter's own faulthandler writes
#      them; then the FIFO is written and the job finishes with exit 0.
#  (a) the same hang ended by SIGABRT to every rank (held stopped until
#      all are signalled): the kernel's cores give epi the same hang
#      (skipped where the core pattern keeps no core here).
# Needs CORONER_BIN, CORONER_SOURCE_DIR.
set -euo pipefail
py=/usr/bin/python3
[ -x "$py" ] || { echo "SKIPPED: Debian's python3 is not installed"; exit 77; }
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN
dir=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null || true; pkill -KILL -f -- "$dir/" 2>/dev/null || true; rm -rf "$dir"' EXIT
. "$src/tests/fixtures/hung_job.sh"
fail() { echo "FAILED: $*"; tail -n 5 "$dir"/*/launcher.log 2>/dev/null || true; exit 1; }
futex_nr=202; [ "$(uname -m)" = aarch64 ] && futex_nr=98

# Whether the main thread of pid $1 waits in a futex (rank 5's Queue.get).
in_futex_wait() { [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)" = "$futex_nr" ]; }

# Starts the job in $dir/$1, each rank's working directory its own (where
# the kernel leaves its core), and waits until rank 5's main thread waits
# in a futex and the others sleep, five checks in a row: a
# synchronization, bounded for a hang only.
start_job() {
  local run=$dir/$1
  mkdir -p "$run/env"
  mkfifo "$run/fifo"
  exec 3<>"$run/fifo"  # held open: the loader's open() returns, its read() waits for a byte
  (set +e; cd "$run" && ulimit -c unlimited && timeout 600 "$py" "$src/tests/live/elastic_launch.py" --nproc 8 --run-id "hang-$1" \
     "$src/tests/live/ring_rank.py" "$run/env" "$run/fifo" 5 5 > "$run/launcher.log" 2>&1; echo $? > "$run/status") &
  wait_until_hung "$run" in_futex_wait || fail "the job did not reach its hang"
}

check_hang() {  # check_hang EPI_JSON WHAT RUN_ID
  "$py" - "$1" "$2" "$3" <<'PY' || fail "see above"
import json, sys
e = json.load(open(sys.argv[1])); what, run_id = sys.argv[2], sys.argv[3]
ok = True
def check(name, got, want):
    global ok
    if got != want:
        print(f"FAILED ({what}): {name}: {got!r}, want {want!r}"); ok = False
check("incidents", len(e["incidents"]), 1)
if e["incidents"]:
    i = e["incidents"][0]
    check("kind", i["kind"], "hang")
    check("launcher", i["launcher"], "torchrun")
    check("the run", run_id in i["job"], True)
    check("cores", i["cores"], 8)
    check("odd ranks", [r["rank"] for r in i["odd_ranks"]], [5])
    odd = (i["odd_ranks"][0]["where"] if i["odd_ranks"] else "").split(" | ")
    check(f"rank 5 waits in next_batch: {odd}", "next_batch" in odd and "Queue.get" in odd, True)
    check("waiting ranks", (i["waiting"] or {}).get("ranks"), 7)
    check("they wait in ring_step", "ring_step" in ((i["waiting"] or {}).get("where") or "").split(" | "), True)
sys.exit(0 if ok else 1)
PY
}

# (b) Live.
start_job live
run=$dir/live
snapshot_ranks "$run"
check_hang "$run/epi.json" live hang-live
# The interpreter's own view of rank 5's main thread, after the snapshot.
kill -USR1 "${pids[5]}"
for _ in $(seq 3000); do grep -q "next_batch" "$run/env/rank-5.stacks" 2>/dev/null && break; sleep 0.1; done
"$py" - "$run/rank-5.json" "$run/env/rank-5.stacks" <<'PY' || fail "rank 5's Python frames"
import json, re, sys
j = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
# faulthandler: "Current thread 0x... (most recent call first):" or
# "Thread 0x...", then '  File "...", line N in NAME' lines.
blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text.strip())
theirs = None
for b in blocks:
    names = re.findall(r'^  File ".*", line \d+ in (\S+)$', b, re.M)
    if "next_batch" in names:
        theirs = names
assert theirs, text
main = j["threads"][0]
ours = [f["function"] for f in main["frames"] if f["trust"] == "python"]
# coroner names a method by its class (Queue.get); faulthandler by the
# function alone. Both innermost first.
assert [n.split(".")[-1] for n in ours] == theirs, (ours, theirs)
assert j["job"]["launcher"] == "torchrun" and j["job"]["rank"] == 5, j["job"]
PY
printf x >&3  # the batch arrives: the ring goes on and ends
for _ in $(seq 3000); do [ -f "$run/status" ] && break; sleep 0.1; done
[ "$(cat "$run/status" 2>/dev/null)" = 0 ] || fail "the job did not finish cleanly after the snapshots: $(cat "$run/launcher.log")"
exec 3>&-

# (a) Every rank sent SIGABRT.
start_job abort
run=$dir/abort
read_rank_pids "$run"
ranks=("${pids[@]}")
kill -STOP "${ranks[@]}"
kill -ABRT "${ranks[@]}"
kill -CONT "${ranks[@]}"
for _ in $(seq 3000); do [ -f "$run/status" ] && break; sleep 0.1; done
[ "$(cat "$run/status" 2>/dev/null)" = 1 ] || fail "the launcher did not fail when its ranks died: $(cat "$run/launcher.log")"
exec 3>&-
n=$(gather_cores "$run")
if [ "$n" != 8 ]; then
  echo "PASSED (live only): the kernel kept $n of 8 cores here (core_pattern $(cat /proc/sys/kernel/core_pattern))"
  exit 0
fi
"$coroner" scan "$run/cores" --db "$run/d.db" > /dev/null
"$coroner" epi --db "$run/d.db" --json > "$run/epi.json"
check_hang "$run/epi.json" abort hang-abort
echo "PASSED: a torchrun-style Python job's hang, live and from its cores: rank 5 waits in Queue.get <- next_batch, 7 ranks in ring_step; the job finished after its snapshots"
