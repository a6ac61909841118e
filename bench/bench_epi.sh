#!/usr/bin/env bash
# bench_epi.sh CORONER
#
# `coroner epi` over 10,000,000 cores synthesized directly in a dataset:
# 1,000 hosts in 5 regions, 4 SKUs, 3 kernels, 4 releases, 6 services (6
# attribute rows a core, 60M in all), 600 signatures of skewed sizes over 90
# days, one of them planted on a single host. Then again with an inventory
# of the hosts' placements (9 rows a host: a machine every 10 days, with
# region, SKU and kernel), so every host, region, SKU, kernel and machine
# value is tested per host-day. Target: under 60 s and 4 GiB each. Also
# checks that the planted cluster's top finding is that host. EPI_ROWS sets
# the cores (the signatures scale with them: one per 16,667 cores); KEEP=1
# keeps the dataset.
set -euo pipefail
coroner=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT; [ -n "${KEEP:-}" ] && trap - EXIT && echo "dataset kept in $work"
n=${EPI_ROWS:-10000000}
k=$(( (n + 16666) / 16667 ))
db=$work/fleet.db
# An empty dataset of the current schema: scan of nothing valid, then rows.
printf 'not a core' > "$work/empty"
"$coroner" scan "$work/empty" --db "$db" > /dev/null
sqlite3 "$db" > /dev/null <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
DELETE FROM cores;
CREATE TEMP TABLE n(i INTEGER PRIMARY KEY);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < $n) INSERT INTO n SELECT i FROM r;
-- Cluster k of $k with weight ~ 1/(k+1); core i: k from a hash of i. The
-- planted cluster 7 sits on host 417 only.
CREATE TEMP TABLE c AS SELECT i,
  CASE WHEN (i * 2654435761) % 1000 < 8 THEN 7 ELSE
    CAST($k * (((i * 40503) % 65536) / 65536.0) * (((i * 40503) % 65536) / 65536.0) AS INTEGER) END AS k,
  (i * 7919) % 1000 AS h FROM n;
UPDATE c SET h = 417 WHERE k = 7;
INSERT INTO cores(id, path, source, size, mtime_ns, bytes_read, status, time, time_source, uptime, pid, comm,
                  signal, signal_name, syndrome, context, signature, exe, build_id, truncated, cpu_time, scanned_at)
SELECT i, '/fleet/core.' || i, 'file', 315392, 0, 17000, 'ok',
  strftime('%Y-%m-%dT%H:%M:%SZ', 1788220800 + (i * 104729) % (90 * 86400), 'unixepoch'), 'sidecar',
  (i * 31337) % (14 * 86400), i % 32768, 'service', 11, 'SIGSEGV',
  CASE k % 5 WHEN 0 THEN 'null-deref' WHEN 1 THEN 'bad-pointer' WHEN 2 THEN 'return-to-null'
    WHEN 3 THEN 'abort-assert' ELSE 'heap-corruption' END, 'runtime',
  'sig' || k || ' | frame_' || k || ' | main', '/usr/bin/service', 'build' || (i % 4), 0, (i % 3600) * 1.0,
  '2026-12-01T00:00:00Z'
FROM c;
INSERT INTO attributes(core, key, value)
SELECT i, 'host', 'node-' || h FROM c UNION ALL
SELECT i, 'region', 'region-' || (h % 5) FROM c UNION ALL
SELECT i, 'sku', 'sku-' || (h % 4) FROM c UNION ALL
SELECT i, 'kernel', 'kernel-' || (h % 3) FROM c UNION ALL
SELECT i, 'release', 'release-' || (i % 4) FROM c UNION ALL
SELECT i, 'service', 'service-' || (i % 6) FROM c;
SQL
echo "dataset: $(sqlite3 "$db" "SELECT count(*) FROM cores") cores, $(sqlite3 "$db" "SELECT count(*) FROM attributes") attributes"
python3 - "$work/hosts.csv" <<'PY'
import sys, datetime
start = 1788220800
with open(sys.argv[1], "w") as out:
    out.write("host,machine,region,sku,kernel,valid_from,valid_to\n")
    iso = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for h in range(1000):
        for p in range(9):
            a, b = start + p * 10 * 86400, start + (p + 1) * 10 * 86400
            out.write(f"node-{h},phys-{h % 5}-{(h * 7 + p) % 40},region-{h % 5},sku-{h % 4},kernel-{h % 3},{iso(a)},{iso(b)}\n")
PY
for mode in cases exposure; do
  args=""
  [ "$mode" = exposure ] && args="--inventory $work/hosts.csv"
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %M' -o "$work/time" "$coroner" epi --db "$db" --json $args > "$work/epi.json"
  read -r seconds kib < "$work/time"
  python3 - "$work/epi.json" "$mode" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
planted = [c for c in r["clusters"] if c["signature"].startswith("sig7 |")][0]
top = planted["findings"][0]
print(f"{sys.argv[2]}: clusters: {len(r['clusters'])}, tests: {r['tests']}; planted cluster: {planted['count']} cores, "
      f"top finding {top['attribute']}={top['value']} (p_adj {top['p_adjusted']:.1e}, rate ratio {top['rate_ratio']})")
assert (top["attribute"], top["value"]) == ("host", "node-417"), top
assert (sys.argv[2] == "exposure") == (top["host_days"] is not None), top
PY
  awk -v s="$seconds" -v k="$kib" -v n="$n" -v m="$mode" 'BEGIN {
    printf "epi_%s_%d_cores_s: %.1f (target < 60 for 10M)\n", m, n, s;
    printf "epi_%s_%d_cores_max_rss_mib: %.0f (target < 4096 for 10M)\n", m, n, k / 1024; }'
done
