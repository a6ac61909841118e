#!/usr/bin/env bash
# The demo's "hardware" fleet (a bad host, a bad GPU, the application's own
# bugs, planted in real zoo cores) told twice: once with the demo's
# sidecars, once as systemd-coredump hosts tell it — no sidecar at all, one
# journal per host (real .journal files from Debian's systemd-journal-remote)
# whose entries give each crash's host and time, and the cores gathered into
# one directory. With the same inventory and kernel logs, epi must reach
# the same hardware verdicts (the planted host and GPU, and nothing else)
# and the same host findings from the journal as from the sidecars.
# Needs CORONER_BIN, CORONER_ZOO, CORONER_SOURCE_DIR, CORONER_SYSTEMD_TOOLS.
set -euo pipefail
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN
. "$src/tests/fixtures/systemd_tools.sh"
systemd_tools_or_skip "$CORONER_SYSTEMD_TOOLS"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CORONER_ZOO=$CORONER_ZOO "$coroner" demo --scenario hardware --out "$dir/demo" > /dev/null
fleet=$dir/demo/fleet

# Each host's journal: one entry per core, from what its sidecar said (host,
# time, boot); the cores, without sidecars, in one directory.
mkdir -p "$dir/journal" "$dir/cores" "$dir/export"
python3 - "$fleet/cores" "$dir/cores" "$dir/export" <<'PY'
import datetime, hashlib, json, os, struct, sys
cores, out_cores, out_export = sys.argv[1:4]
streams = {}
for root, _, files in os.walk(cores):
    for name in sorted(files):
        if not name.endswith(".core"):
            continue
        side = json.load(open(os.path.join(root, name + ".json")))
        os.link(os.path.join(root, name), os.path.join(out_cores, name))
        t = int(datetime.datetime.strptime(side["time"], "%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=datetime.timezone.utc).timestamp())
        boot = hashlib.md5((side["host"] + side["boot_time"]).encode()).hexdigest()
        fields = [("__REALTIME_TIMESTAMP", t * 1000000 + 250000), ("__MONOTONIC_TIMESTAMP", 1),
                  ("_BOOT_ID", boot), ("_MACHINE_ID", hashlib.md5(side["host"].encode()).hexdigest()),
                  ("_HOSTNAME", side["host"]), ("MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1"),
                  ("MESSAGE", "Process dumped core."), ("COREDUMP_UID", 0), ("COREDUMP_GID", 0),
                  ("COREDUMP_TIMESTAMP", t * 1000000),
                  ("COREDUMP_FILENAME", "/var/lib/systemd/coredump/" + name)]
        streams.setdefault(side["host"], []).append(
            "".join(f"{k}={v}\n" for k, v in fields) + "\n")
for host, entries in streams.items():
    with open(os.path.join(out_export, host + ".export"), "w") as f:
        f.write("".join(entries))
PY
for e in "$dir"/export/*.export; do
  $JOURNAL_REMOTE -o "$dir/journal/$(basename "$e" .export).journal" - < "$e" 2>/dev/null
done
logs=()
for f in "$fleet"/kernel-logs/*.log; do logs+=(--kernel-log "$(basename "$f" .log)=$f"); done

"$coroner" scan --db "$dir/journal.db" --journal "$dir/journal" "$dir/cores" --inventory "$fleet/inventory.csv" > /dev/null
"$coroner" epi --db "$dir/demo/dataset.db" --json "${logs[@]}" --inventory "$fleet/inventory.csv" > "$dir/sidecars.json"
"$coroner" epi --db "$dir/journal.db" --json "${logs[@]}" --inventory "$fleet/inventory.csv" > "$dir/journal.json"
"$coroner" query --json --db "$dir/journal.db" \
  "SELECT count(*) AS n, count(host) AS placed, sum(host_source = 'journal') AS from_journal FROM cores_with_attributes" > "$dir/placed.json"

python3 - "$dir/sidecars.json" "$dir/journal.json" "$dir/placed.json" <<'PY'
import json, sys
sidecars, journal, placed = (json.load(open(p)) for p in sys.argv[1:4])
failures = 0
def check(what, got, expected):
    global failures
    if got == expected:
        print("ok:", what)
    else:
        print(f"FAIL: {what}: got {got!r}, expected {expected!r}")
        failures += 1
check("every core placed on its host by the journal", placed[0], {"n": 180, "placed": 180, "from_journal": 180})
def verdicts(r):
    return [(h["host"], h["crashes"], h["score"], h.get("verdict")) for h in r["hosts"]]
suspects = [h["host"] for h in journal["hosts"] if h.get("verdict") and "suspect hardware" in h["verdict"]]
# The planted causes (the demo's hardware scenario): host we-node-03, and the GPU of machine phys-eus-03.
check("the suspects are the planted ones", sorted(suspects), ["phys-eus-03", "we-node-03"])
check("the same hardware verdicts as with sidecars", verdicts(journal), verdicts(sidecars))
def host_findings(r):
    return sorted((c["signature"], f["attribute"], f["value"]) for c in r["clusters"] for f in c.get("findings", [])
                  if f["attribute"] in ("host", "machine"))
check("the same host and machine findings", host_findings(journal), host_findings(sidecars))
check("host findings were made", len(host_findings(journal)) >= 4, True)
sys.exit(1 if failures else 0)
PY
echo "journal fleet: all checks passed"
