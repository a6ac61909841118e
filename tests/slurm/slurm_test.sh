#!/usr/bin/env bash
# A real single-node Slurm cluster (tests/slurm/slurm_cluster.sh) runs
# contrib/slurm/coroner-scan.sbatch as a 4-task job array over the zoo's
# cores, one task made to die mid-scan once (it is requeued and resumes),
# then the dependent merge job. The merged dataset must equal a single
# `coroner scan` of the same cores: same rows, same labels, nothing lost,
# nothing doubled. Needs CORONER_BIN, CORONER_ZOO, CORONER_SOURCE_DIR.
set -euo pipefail
for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed (make deps installs slurm-wlm and munge)"; exit 77; }
done
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN cores=$CORONER_ZOO/cores
dir=$(mktemp -d)
trap '"$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" stop; rm -rf "$dir"' EXIT
SLURM_CONF=$("$src"/tests/slurm/slurm_cluster.sh "$dir/cluster" start)
export SLURM_CONF

# Task 1's first run is killed with SIGKILL once it has committed some cores.
cat > "$dir/coroner" <<WRAP
#!/usr/bin/env bash
if [ "\$SLURM_ARRAY_TASK_ID" = 1 ] && [ ! -e "$dir/killed-once" ]; then
  touch "$dir/killed-once"
  "$coroner" "\$@" > /dev/null 2>&1 &
  scan=\$!
  db="$dir/out/shard-1.db"
  for _ in \$(seq 500); do
    n=\$("$coroner" query --db "\$db" "SELECT count(*) FROM cores" 2>/dev/null | sed -n 3p | tr -d ' ')
    [ "\${n:-0}" -gt 0 ] && break
    sleep 0.01
  done
  kill -9 \$scan
  echo "task 1: killed its scan after \${n:-0} committed cores" >&2
  exit 137
fi
exec "$coroner" "\$@"
WRAP
chmod +x "$dir/coroner"

cd "$dir"
array=$(CORONER="$dir/coroner" sbatch --parsable --export=ALL --cpus-per-task=1 --open-mode=append --array=0-3 \
  "$src/contrib/slurm/coroner-scan.sbatch" "$dir/out" "$cores")
merge=$(sbatch --parsable --dependency=afterok:"$array" -o "$dir/merge.log" \
  --wrap "$coroner merge --db $dir/out/fleet.db $dir/out/shard-0.db $dir/out/shard-1.db $dir/out/shard-2.db $dir/out/shard-3.db")
released=" "
for _ in $(seq 360); do
  [ -z "$(squeue -h -j "$array,$merge" 2>/dev/null)" ] && break
  # Slurm holds a requeued job back for a while; this test has no time to
  # wait. It is released once, 2 s on: slurmd refuses a launch whose
  # credential was made in the same second as the requeue revoked the old
  # one ("Job credential revoked"), which fails the array and so the merge.
  for held in $(squeue -h -j "$array" -o '%i %r' | awk '$2 == "BeginTime" {print $1}'); do
    case $released in *" $held "*) continue ;; esac
    scontrol update jobid="$held" StartTime=now+2
    released="$released$held "
  done
  sleep 0.5
done
fail() { echo "FAILED: $*"; cat "$dir"/cluster/slurmctld.log | tail -20; exit 1; }
[ -z "$(squeue -h -j "$array,$merge" 2>/dev/null)" ] || fail "jobs still queued after 180 s"
[ -e "$dir/killed-once" ] || fail "task 1 was never killed"
grep -q "requeueing" coroner-scan-*_1.log || fail "task 1 did not ask to be requeued"
scontrol show job "${array}_1" | grep -q 'Restarts=[1-9]' || fail "task 1 was not requeued"
grep -q "merged 4 shards" merge.log || fail "merge: $(cat merge.log)"

"$coroner" scan "$cores" --db "$dir/single.db" > /dev/null
dump() {
  "$coroner" query --db "$1" --json "SELECT path, status, error, signal, si_code, fault_address, syndrome, context,
    signature, crashing_tid, exe, build_id, time, uptime, truncated,
    (SELECT group_concat(pc || ' ' || ifnull(function, '?') || ' ' || trust, ';')
       FROM (SELECT * FROM frames f WHERE f.core = c.id ORDER BY thread, \"index\")) AS frames,
    (SELECT group_concat(tid || ' ' || registers, ';')
       FROM (SELECT * FROM threads t WHERE t.core = c.id ORDER BY thread)) AS threads,
    (SELECT count(*) FROM modules m WHERE m.core = c.id) AS modules
    FROM cores c ORDER BY path"
}
dump "$dir/out/fleet.db" > merged.json
dump "$dir/single.db" > single.json
cmp -s merged.json single.json || fail "the merged dataset differs from the single scan: $(diff <(tr '}' '\n' < merged.json) <(tr '}' '\n' < single.json) | head -5)"
inputs=$(ls "$cores" | wc -l)
counts=$("$coroner" query --db "$dir/out/fleet.db" "SELECT count(*) || ' ' || count(DISTINCT path) FROM cores" | sed -n 3p | tr -d ' ')
[ "$counts" = "${inputs}${inputs}" ] || fail "cores in the merged dataset: $counts, inputs: $inputs"
echo "PASSED: $inputs cores over 4 Slurm tasks (task 1 killed once and requeued), merged = single scan"
