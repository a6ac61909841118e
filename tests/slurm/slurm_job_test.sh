#!/usr/bin/env bash
# A real Slurm job of 8 tasks on the single-node cluster of
# tests/slurm/slurm_cluster.sh: the ranks of ring_rank pass a token around
# a ring over loopback TCP; rank 5 dereferences NULL; the other 7 find the
# ring broken and throw as NCCL and PyTorch do. Every rank's core is kept
# (tests/fixtures/make_core.sh: the kernel's, else gdb's). Asserts: the job
# each core carries is what srun gave its task (the task's own dump of its
# SLURM variables); epi finds one incident of 8 cores whose root is rank 5
# (the null-deref) with 7 collateral, and the collateral has no finding.
# Needs CORONER_BIN, CORONER_SOURCE_DIR, CORONER_RING_RANK.
set -euo pipefail
for tool in munged slurmctld slurmd srun python3; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed (make deps installs slurm-wlm and munge)"; exit 77; }
done
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN ring=$CORONER_RING_RANK
dir=$(mktemp -d)
trap '"$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" stop; rm -rf "$dir"' EXIT
SLURM_CONF=$("$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" start)
export SLURM_CONF
mkdir -p "$dir/cores" "$dir/env"
cd "$dir"
# The node may still be registering: srun waits for it (--immediate is not set).
timeout 600 srun -n 8 --overcommit --kill-on-bad-exit=0 -o "$dir/task-%t.log" \
  bash -c 'exec "$0" "$1" "$2/cores/rank-$SLURM_PROCID.core" "$3" 5 "$2/env"' \
  "$src/tests/fixtures/make_core.sh" "$ring" "$dir" 0 || true
fail() { echo "FAILED: $*"; tail -n 5 "$dir"/task-*.log; exit 1; }
n=$(ls "$dir/cores" | wc -l)
[ "$n" = 8 ] || fail "$n cores of 8 ranks"
"$coroner" scan "$dir/cores" --db "$dir/d.db" > /dev/null
"$coroner" epi --db "$dir/d.db" --json > "$dir/epi.json"
for r in 0 1 2 3 4 5 6 7; do "$coroner" analyze --json "$dir/cores/rank-$r.core" > "$dir/rank-$r.json"; done
python3 - "$dir" <<'PY' || fail "see above"
import json, sys
d = sys.argv[1]
ok = True
def check(what, got, want):
    global ok
    if got != want:
        print(f"FAILED: {what}: {got!r}, want {want!r}")
        ok = False
for r in range(8):
    env = dict(l.rstrip("\n").split("=", 1) for l in open(f"{d}/env/rank-{r}.env") if "=" in l)
    job = json.load(open(f"{d}/rank-{r}.json"))["job"]
    check(f"rank {r} launcher", job["launcher"], "slurm")
    check(f"rank {r} job_id", job["job_id"], env["SLURM_JOB_ID"])
    check(f"rank {r} step", job["step"], env["SLURM_STEP_ID"])
    check(f"rank {r} rank", job["rank"], int(env["SLURM_PROCID"]))
    check(f"rank {r} world_size", job["world_size"], int(env["SLURM_NTASKS"]))
    check(f"rank {r} local_rank", job["local_rank"], int(env["SLURM_LOCALID"]))
    check(f"rank {r} node", job["node"], env["SLURMD_NODENAME"])
    check(f"rank {r} cluster", job["cluster"], env["SLURM_CLUSTER_NAME"])
    check(f"rank {r} cluster name", env["SLURM_CLUSTER_NAME"], "coroner-test")
e = json.load(open(f"{d}/epi.json"))
check("incidents", len(e["incidents"]), 1)
check("observations", e["incident_count"], 1)
if e["incidents"]:
    i = e["incidents"][0]
    check("cores", i["cores"], 8)
    check("job", i["job"], env["SLURM_JOB_ID"] + " step " + env["SLURM_STEP_ID"] + " on cluster coroner-test")
    check("root rank", i["root"]["rank"], 5)
    check("root signature", i["root"]["signature"].split(" | ")[0], "null-deref")
    check("collateral", i["collateral"], 7)
    check("alike", i["alike"], False)
for c in e["clusters"]:
    if c["syndrome"] != "null-deref":
        check(f"{c['id']} findings", c["findings"], [])
        check(f"{c['id']} collateral of", c["collateral_of"], e["incidents"][0]["root"]["cluster"])
sys.exit(0 if ok else 1)
PY
echo "PASSED: 8 ranks of a real Slurm job: each core's job is its task's, one incident rooted at rank 5, 7 collateral"
