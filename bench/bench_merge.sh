#!/usr/bin/env bash
# bench_merge.sh CORONER ZOO
#
# `coroner merge` of 4 shards of 250,000 cores each. The shards are made by
# copying one real scanned core (with its attributes, threads, frames and
# modules) under 250,000 paths each, directly in SQL. Target: under 30 s.
# Also checks the merged counts.
set -euo pipefail
coroner=$1 zoo=$2
work=$(mktemp -d)
trap "rm -rf \"$work\"" EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
per=${MERGE_ROWS:-250000}
"$coroner" scan "$zoo/cores/null_deref-O0.core" --db "$work/template.db" > /dev/null
for s in 0 1 2 3; do
  cp "$work/template.db" "$work/shard$s.db"
  sqlite3 "$work/shard$s.db" <<SQL
PRAGMA foreign_keys = OFF;
CREATE TEMP TABLE t AS SELECT * FROM cores;
CREATE TEMP TABLE n(i INTEGER PRIMARY KEY);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < $per) INSERT INTO n SELECT i FROM r;
DELETE FROM cores;
INSERT INTO cores SELECT n.i + $s * $per, '/fleet/shard$s/core' || n.i, source, size, mtime_ns, bytes_read, status,
  error, warnings, time, time_source, uptime, pid, comm, signal, signal_name, si_code, fault_address, real_signal,
  real_si_code, real_fault_address, syndrome, context, signature, crashing_tid, exe, build_id, truncated, cpu_time,
  analysis_ms, scanned_at FROM t, n;
CREATE TEMP TABLE a AS SELECT * FROM attributes; DELETE FROM attributes;
INSERT INTO attributes SELECT n.i + $s * $per, k.key, k.value FROM n,
  (SELECT 'host' AS key, 'node-1' AS value UNION ALL SELECT 'region', 'westeurope' UNION ALL SELECT 'release', '2026.10.3') k;
CREATE TEMP TABLE th AS SELECT * FROM threads; DELETE FROM threads;
INSERT INTO threads SELECT n.i + $s * $per, thread, tid, crashing, pc, sp, cpu_time, registers FROM th, n;
CREATE TEMP TABLE f AS SELECT * FROM frames; DELETE FROM frames;
INSERT INTO frames SELECT n.i + $s * $per, thread, "index", pc, module, build_id, offset, function, file, line, trust,
  inlined FROM f, n;
CREATE TEMP TABLE m AS SELECT * FROM modules; DELETE FROM modules;
INSERT INTO modules SELECT n.i + $s * $per, path, base, size, build_id, status FROM m, n;
SQL
done
rows() { sqlite3 "$1" "SELECT (SELECT count(*) FROM cores) || ' cores, ' || (SELECT count(*) FROM frames) || ' frames, ' ||
  (SELECT count(*) FROM threads) || ' threads, ' || (SELECT count(*) FROM modules) || ' modules, ' ||
  (SELECT count(*) FROM attributes) || ' attributes'"; }
t0=$(date +%s.%N)
"$coroner" merge --db "$work/merged.db" "$work"/shard{0,1,2,3}.db > /dev/null
t1=$(date +%s.%N)
"$coroner" merge --db "$work/merged.db" "$work"/shard{0,1,2,3}.db > "$work/again"
t2=$(date +%s.%N)
echo "shard: $(rows "$work/shard0.db")"
echo "merged: $(rows "$work/merged.db")"
echo "merge_again: $(cat "$work/again")"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v per="$per" 'BEGIN {
  printf "merge_again_s: %.1f (nothing to change)\n", c - b;
  printf "merge_4x%d_s: %.1f (target < 30)\n", per, b - a; }'
