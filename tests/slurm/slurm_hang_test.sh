#!/usr/bin/env bash
# A real Slurm job of 8 tasks hangs: rank 5 blocks reading a FIFO nobody
# writes (ReadShard <- LoadBatch), as a data loader on a dead mount does,
# and the other 7 wait for the token in RingStep's recv, as ranks wait in a
# collective (tests/slurm/ring_rank.cc).
#  (b) live: `coroner scan --pid` of every rank into a shard per half of the
#      ranks, `merge`, `epi`: one hang incident whose odd rank is 5, waiting
#      in ReadShard, the other 7 waiting in RingStep; then the FIFO is
#      written and the job finishes, every task with exit status 0 (the
#      snapshots left nothing stopped).
#  (a) the same hang ended by the scheduler's SIGABRT to every rank, one
#      by one as `scancel --signal=ABRT` sends it: the kernel's cores of
#      all 8 ranks, scanned, give epi the same hang (skipped where the core
#      pattern keeps no core here). Rank 5 is signalled first and rank 6,
#      its successor, finds the ring broken and aborts on its own (a peer
#      failure: collateral of the hang, not a rank that waited elsewhere);
#      the other ranks are held stopped meanwhile, so that each dies of
#      its own signal and the peer failure is the planted one.
#  (c) the hangs nothing ends, planted in rank 5 the same way: a spin on a
#      fence word (WaitForFence) and a deadlock of two threads on two
#      mutexes (LockBoth); `scan --pid` of every rank, `epi`: rank 5 is the
#      odd rank, where it spins or waits for the mutex.
# Needs CORONER_BIN, CORONER_SOURCE_DIR, CORONER_RING_RANK.
set -euo pipefail
for tool in munged slurmctld slurmd srun scancel python3; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed (make deps installs slurm-wlm and munge)"; exit 77; }
done
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN ring=$CORONER_RING_RANK
dir=$(mktemp -d)
# On every way out, a job still running goes too (its srun and ranks name
# $dir on their command lines): a failed check leaves no srun behind to
# hold the test's output open.
trap 'exec 3>&- 2>/dev/null || true; pkill -KILL -f -- "$dir/" 2>/dev/null || true; "$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" stop; rm -rf "$dir"' EXIT
SLURM_CONF=$("$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" start)
export SLURM_CONF
. "$src/tests/fixtures/hung_job.sh"
fail() { echo "FAILED: $*"; tail -n 5 "$dir"/*/task-*.log 2>/dev/null || true; exit 1; }
read_nr=0 futex_nr=202; [ "$(uname -m)" = aarch64 ] && read_nr=63 futex_nr=98

# Whether rank 5 (pid $2) is where hang kind $1 holds it: blocked in read,
# on the CPU (the spin), or with both its threads in a futex wait.
rank5_hung() {
  case $1 in
    read) [ "$(cut -d' ' -f1 "/proc/$2/syscall" 2>/dev/null)" = "$read_nr" ] ;;
    spin) [ "$(cut -d' ' -f1 "/proc/$2/syscall" 2>/dev/null)" = running ] ;;
    deadlock)
      local n=0 t
      for t in /proc/"$2"/task/*; do
        [ "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" = "$futex_nr" ] && n=$((n + 1))
      done
      [ $n = 2 ] ;;
  esac
}

# Starts the job in $dir/$1 with rank 5's hang of kind $2 (read when not
# given), each rank in a directory of its own (where the kernel leaves its
# core), and waits until rank 5 hangs and the others sleep, five checks in
# a row (a rank of an early round is on the CPU for microseconds): a
# synchronization, bounded for a hang only.
start_job() {
  local run=$dir/$1 kind=${2:-read}
  mkdir -p "$run/env"
  for r in 0 1 2 3 4 5 6 7; do mkdir -p "$run/rank-$r"; done
  mkfifo "$run/fifo"
  exec 3<>"$run/fifo"  # held open: the rank's open() returns, its read() waits for a byte
  (set +e; cd "$run" && RING_HANG_RANK=5 RING_HANG_KIND=$kind RING_FIFO=$run/fifo RING_ROUNDS=5 timeout 600 \
     srun -n 8 --overcommit --kill-on-bad-exit=0 -o "$run/task-%t.log" \
     bash -c 'ulimit -c unlimited; cd "$2/rank-$SLURM_PROCID" && exec "$0" "$1" -1 "$2/env"' "$ring" 0 "$run" \
     > "$run/srun.out" 2>&1; echo $? > "$run/srun.status") &
  wait_until_hung "$run" rank5_hung "$kind" || fail "the job did not reach its hang"
}

check_hang() {  # check_hang EPI_JSON WHAT WAITING_RANKS RANK_5_FUNCTION
  python3 - "$1" "$2" "$3" "${4:-ReadShard}" <<'PY' || fail "see above"
import json, sys
e = json.load(open(sys.argv[1])); what = sys.argv[2]; waiting = int(sys.argv[3]); function = sys.argv[4]
ok = True
def check(name, got, want):
    global ok
    if got != want:
        print(f"FAILED ({what}): {name}: {got!r}, want {want!r}"); ok = False
check("incidents", len(e["incidents"]), 1)
check("observations", e["incident_count"], 1)
if e["incidents"]:
    i = e["incidents"][0]
    check("kind", i["kind"], "hang")
    check("cores", i["cores"], 8)
    check("odd ranks", [r["rank"] for r in i["odd_ranks"]], [5])
    check("root rank", i["root"]["rank"], 5)
    odd = i["odd_ranks"][0]["where"] if i["odd_ranks"] else ""
    check(f"rank 5 waits in {function}: {odd}", function in odd.split(" | ") and "LoadBatch" in odd.split(" | "), True)
    check("waiting ranks", (i["waiting"] or {}).get("ranks"), waiting)
    check("they wait in RingStep", "RingStep" in ((i["waiting"] or {}).get("where") or "").split(" | "), True)
    check("collateral", i["collateral"], 7)
sys.exit(0 if ok else 1)
PY
}

# (b) Live.
start_job live
run=$dir/live
snapshot_ranks "$run"
"$coroner" epi --db "$run/all.db" > "$run/epi.txt"
check_hang "$run/epi.json" live 7
"$coroner" query --json --db "$run/all.db" "SELECT c.source, a.value FROM cores c LEFT JOIN attributes a ON a.core = c.id AND a.key = 'stopped_ms'" > "$run/stopped.json"
python3 - "$run/stopped.json" <<'PY' || fail "the snapshots' stop times"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 8 and all(r["source"] == "snapshot" and float(r["value"]) > 0 for r in rows), rows
PY
grep "hang of" "$run/epi.txt"
grep -q "hang of 8 ranks; rank 5 on host .* waits in .*ReadShard" "$run/epi.txt" || fail "the text report: $(cat "$run/epi.txt")"
python3 - "$run/rank-5.json" <<'PY' || fail "rank 5's snapshot"
import json, sys
j = json.load(open(sys.argv[1]))
fns = [f["function"] for f in j["threads"][0]["frames"]]
assert "ReadShard" in fns and "LoadBatch" in fns, fns
assert j["threads"][0]["state"] == "read", j["threads"][0]["state"]
assert j["job"]["rank"] == 5 and j["job"]["launcher"] == "slurm", j["job"]
PY
printf x >&3  # the shard arrives: the ring goes on and ends
for _ in $(seq 3000); do [ -f "$run/srun.status" ] && break; sleep 0.1; done
[ "$(cat "$run/srun.status" 2>/dev/null)" = 0 ] || fail "the job did not finish cleanly after the snapshots: $(cat "$run/srun.out")"
exec 3>&-

# (a) The watchdog's cores.
start_job watchdog
run=$dir/watchdog
job=$(sed -n 's/^SLURM_JOB_ID=//p' "$run/env/rank-0.env")
read_rank_pids "$run"
ranks=("${pids[@]}")
held=("${ranks[@]:0:5}" "${ranks[7]}")
kill -STOP "${held[@]}"
kill -ABRT "${ranks[5]}"
for _ in $(seq 3000); do [ -d "/proc/${ranks[6]}" ] || break; sleep 0.1; done
[ -d "/proc/${ranks[6]}" ] && fail "rank 6 did not give up after rank 5 died"
kill -ABRT "${held[@]}"
kill -CONT "${held[@]}"
# Every rank gone (its core written), then the job and srun ended: srun
# itself would wait minutes on after its tasks died of a signal.
for _ in $(seq 3000); do
  alive=0
  for r in 0 1 2 3 4 5 6 7; do [ -d "/proc/$(cat "$run/env/rank-$r.pid")" ] && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
scancel "$job" 2>/dev/null || true
pkill -KILL -f -- "-o $run/task-" 2>/dev/null || true
exec 3>&-
n=$(gather_cores "$run")
hung_dbs=("$dir/live/all.db")
if [ "$n" != 8 ]; then
  echo "(the kernel kept $n of 8 cores here (core_pattern $(cat /proc/sys/kernel/core_pattern)): the cores' part is skipped)"
else
  "$coroner" scan "$run/cores" --db "$run/d.db" > /dev/null
  "$coroner" epi --db "$run/d.db" --json > "$run/epi.json"
  check_hang "$run/epi.json" watchdog 6
  "$coroner" query --json --db "$run/d.db" "SELECT r.value AS rank FROM attributes a JOIN attributes r ON r.core = a.core AND r.key = 'rank' WHERE a.key = 'peer_failure'" > "$run/peer.json"
  python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != [{"rank": "6"}])' "$run/peer.json" ||
    fail "rank 6's core is not the one peer failure: $(cat "$run/peer.json")"
  # No sidecar names the host: each core's own SLURMD_NODENAME does (the
  # ranks wrote their Slurm variables beside them).
  node=$(sed -n 's/^SLURMD_NODENAME=//p' "$run/env/rank-0.env")
  "$coroner" query --json --db "$run/d.db" "SELECT h.value AS host, s.value AS source FROM attributes h JOIN attributes s ON s.core = h.core AND s.key = 'host_source' WHERE h.key = 'host'" > "$run/hosts.json"
  python3 - "$run/hosts.json" "$node" <<'PY' || fail "the cores' host"
import json, sys
rows, node = json.load(open(sys.argv[1])), sys.argv[2]
assert node and rows == [{"host": node, "source": "environment"}] * 8, (rows, node)
PY
  hung_dbs+=("$run/d.db")
fi
# (c) Spin and deadlock.
for kind in spin:WaitForFence deadlock:LockBoth; do
  start_job "${kind%%:*}" "${kind%%:*}"
  run=$dir/${kind%%:*}
  job=$(sed -n 's/^SLURM_JOB_ID=//p' "$run/env/rank-0.env")
  read_rank_pids "$run"
  "$coroner" scan --pid "${pids[@]}" --db "$run/d.db" > /dev/null
  "$coroner" analyze --json --pid "${pids[5]}" > "$run/rank-5.json"
  "$coroner" epi --db "$run/d.db" --json > "$run/epi.json"
  kill -KILL "${pids[@]}" 2>/dev/null || true
  scancel "$job" 2>/dev/null || true
  pkill -KILL -f -- "-o $run/task-" 2>/dev/null || true
  exec 3>&-
  check_hang "$run/epi.json" "${kind%%:*}" 7 "${kind#*:}"
  hung_dbs+=("$run/d.db")
  python3 - "$run/rank-5.json" "${kind%%:*}" <<'PY' || fail "rank 5's ${kind%%:*}"
import json, sys
j, kind = json.load(open(sys.argv[1])), sys.argv[2]
main = j["threads"][0]
if kind == "spin":
    assert main["state"] == "spinning", main["state"]
    assert main["spin"]["word_name"].endswith("fence_done"), main["spin"]
    assert main["spin"]["value"] == 0 and main["spin"]["pauses"], main["spin"]
else:
    assert j["diagnosis"]["syndrome"] == "deadlock", j["diagnosis"]["syndrome"]
    names = {t["lock_wait"]["mutex_name"] for t in j["threads"] if t["lock_wait"]}
    assert any(n.endswith("shard_lock") for n in names) and any(n.endswith("stats_lock") for n in names), names
PY
done

# (d) The jobs together: every hang began with rank 5 on this host (the
# snapshots' host is the machine's name, the cores' their SLURMD_NODENAME:
# one name here), which the hardware verdicts count as hangs begun here,
# never as crashes.
"$coroner" merge --db "$dir/hangs.db" "${hung_dbs[@]}" > /dev/null
"$coroner" epi --db "$dir/hangs.db" --json > "$dir/hangs.json"
python3 - "$dir/hangs.json" "${#hung_dbs[@]}" <<'PY' || fail "the hangs' host"
import json, sys
e, jobs = json.load(open(sys.argv[1])), int(sys.argv[2])
assert [i["kind"] for i in e["incidents"]] == ["hang"] * jobs, [i["kind"] for i in e["incidents"]]
hosts = {i["root"]["host"] for i in e["incidents"]}
assert len(hosts) == 1, hosts
h = [h for h in e["hosts"] if h["host"] in hosts]
assert len(h) == 1, e["hosts"]
assert any(w.startswith(f"the odd rank of {jobs} hung jobs ran here") for w in h[0]["evidence"]), h[0]
assert h[0]["crashes"] == 0 and h[0]["verdict"] is None, h[0]
PY

echo "PASSED: a real Slurm job's hang, live and from the scheduler's cores: rank 5 waits in ReadShard, the others in RingStep or gave up after rank 5; the job finished after its snapshots; a spinning and a deadlocked rank 5 named too"
