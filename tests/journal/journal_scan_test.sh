#!/usr/bin/env bash
# A fleet with no sidecars: real kernel cores of the zoo and the journal
# entries systemd-coredump writes about them, made into real .journal files
# by Debian's systemd-journal-remote (tests/fixtures/systemd_tools.sh).
# `coroner scan --journal` must give every core its host, unit, slice,
# cgroup, container, pod, owner, package and time from its entry; find
# each core by its name among the gathered cores, where the entry says,
# or inside the entry (Storage=journal); keep a row for a core that is
# gone; read a rotated file; report a corrupt one and read the rest; keep
# the environment and command line out; and `coroner list --journal` must
# agree with Debian's own coredumpctl. Oracles: the entries this test
# writes, gdb's reading of each core's signal, coredumpctl, and a scan of
# the same cores as plain files.
# Needs CORONER_BIN, CORONER_ZOO, CORONER_SOURCE_DIR, CORONER_SYSTEMD_TOOLS.
set -euo pipefail
src=$CORONER_SOURCE_DIR coroner=$CORONER_BIN zoo=$CORONER_ZOO/cores
. "$src/tests/fixtures/systemd_tools.sh"
systemd_tools_or_skip "$CORONER_SYSTEMD_TOOLS"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
check() {  # check WHAT ACTUAL EXPECTED
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', expected '$3'"; failures=$((failures + 1)); fi
}
q() { "$coroner" query --json --db "$1" "$2"; }
# The value of one attribute of the row whose path ends in $2.
attr() {
  "$coroner" query --json --db "$1" "SELECT a.value FROM attributes a JOIN cores c ON c.id = a.core WHERE c.path LIKE '%$2' AND a.key = '$3'" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["value"] if r else "")'
}
col() {
  "$coroner" query --json --db "$1" "SELECT $3 AS v FROM cores WHERE path LIKE '%$2'" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("" if not r or r[0]["v"] is None else r[0]["v"])'
}
signo() { gdb -nx -batch -c "$1" -ex 'print $_siginfo.si_signo' 2>/dev/null | sed -n 's/^\$1 = //p'; }

boot=0123456789abcdef0123456789abcdef machine=fedcba9876543210fedcba9876543210
mkdir -p "$dir/fleet/cores" "$dir/fleet/journal/$machine" "$dir/var"
# The gathered cores, named as systemd-coredump names them (compressed, as it does by default).
name_a=core.bad_pointer.1000.$boot.4242.1790000000000000.zst
zstd -q "$zoo/bad_pointer-O2.core" -o "$dir/fleet/cores/$name_a"
name_e=core.divide_by_zero.0.$boot.5151.1790000500000000.zst
zstd -q "$zoo/divide_by_zero-O2.core" -o "$dir/fleet/cores/$name_e"
echo '{"host": "rack7-node-e"}' > "$dir/fleet/cores/$name_e.json"  # a sidecar wins over the journal
# A core where its entry says it is, with a hostname xattr the journal's host wins over.
path_c=$dir/var/core.null_deref.1000.$boot.6161.1790000200000000
cp "$zoo/null_deref-O2.core" "$path_c"
xattrs=1
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.coredump.hostname", b"xattr-host")' "$path_c" 2>/dev/null || xattrs=0
# A core the kernel cut short (systemd-coredump's ProcessSizeMax).
path_d=$dir/var/core.many_threads.0.$boot.7171.1790000300000000
head -c $(($(stat -c %s "$zoo/many_threads-O2.core") * 2 / 5)) "$zoo/many_threads-O2.core" > "$path_d"

sig_a=$(signo "$zoo/bad_pointer-O2.core") sig_b=$(signo "$zoo/abort_assert-O2.core")
sig_c=$(signo "$zoo/null_deref-O2.core") sig_e=$(signo "$zoo/divide_by_zero-O2.core")
check "gdb reads the cores' signals" "$sig_a $sig_b $sig_c $sig_e" "11 6 11 8"

docker=1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988
containerd=aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44
pod=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
cat > "$dir/entries.json" <<JSON
[
 {"__REALTIME_TIMESTAMP": "1790000000300000", "__MONOTONIC_TIMESTAMP": "1000", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-a", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 4242 (bad_pointer) of user 1000 dumped core.", "COREDUMP_PID": "4242", "COREDUMP_UID": "1000",
  "COREDUMP_GID": "1000", "COREDUMP_SIGNAL": "$sig_a", "COREDUMP_TIMESTAMP": "1790000000000000",
  "COREDUMP_COMM": "bad_pointer", "COREDUMP_EXE": "/opt/trainer/bin/bad_pointer",
  "COREDUMP_CMDLINE": "bad_pointer --token=s3cr3t-cmdline", "COREDUMP_ENVIRON": "API_KEY=s3cr3t-environ",
  "COREDUMP_UNIT": "docker-$docker.scope", "COREDUMP_SLICE": "system.slice",
  "COREDUMP_CGROUP": "/system.slice/docker-$docker.scope",
  "COREDUMP_PACKAGE_NAME": "trainer", "COREDUMP_PACKAGE_VERSION": "2.4.1-1",
  "COREDUMP_FILENAME": "/var/lib/systemd/coredump/$name_a"},
 {"__REALTIME_TIMESTAMP": "1790000100300000", "__MONOTONIC_TIMESTAMP": "2000", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-b", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 77 (abort_assert) of user 0 dumped core.", "COREDUMP_PID": "77", "COREDUMP_UID": "0",
  "COREDUMP_GID": "0", "COREDUMP_SIGNAL": "$sig_b", "COREDUMP_TIMESTAMP": "1790000100000000",
  "COREDUMP_COMM": "abort_assert", "COREDUMP_EXE": "/usr/bin/abort_assert",
  "COREDUMP_UNIT": "kubepods-burstable-pod${pod//-/_}.slice", "COREDUMP_SLICE": "kubepods-burstable.slice",
  "COREDUMP_CGROUP": "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${pod//-/_}.slice/cri-containerd-$containerd.scope",
  "COREDUMP": {"file": "$zoo/abort_assert-O2.core"}},
 {"__REALTIME_TIMESTAMP": "1790000200300000", "__MONOTONIC_TIMESTAMP": "3000", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-c", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 6161 (null_deref) of user 1000 dumped core.", "COREDUMP_PID": "6161", "COREDUMP_UID": "1000",
  "COREDUMP_GID": "1000", "COREDUMP_SIGNAL": "$sig_c", "COREDUMP_TIMESTAMP": "1790000200000000",
  "COREDUMP_COMM": "null_deref", "COREDUMP_EXE": "/usr/bin/null_deref", "COREDUMP_UNIT": "user@1000.service",
  "COREDUMP_USER_UNIT": "app.service", "COREDUMP_OWNER_UID": "1000", "COREDUMP_SLICE": "user-1000.slice",
  "COREDUMP_CGROUP": "/machine.slice/machine-web\\\\x2d01.scope/payload",
  "COREDUMP_FILENAME": "$path_c"},
 {"__REALTIME_TIMESTAMP": "1790000250300000", "__MONOTONIC_TIMESTAMP": "3500", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-c", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 6262 (gone) of user 1000 dumped core.", "COREDUMP_PID": "6262", "COREDUMP_UID": "1000",
  "COREDUMP_GID": "1000", "COREDUMP_SIGNAL": "7", "COREDUMP_TIMESTAMP": "1790000250000000",
  "COREDUMP_COMM": "gone", "COREDUMP_EXE": "/usr/bin/gone", "COREDUMP_PACKAGE_NAME": "gone",
  "COREDUMP_PACKAGE_VERSION": "1.0", "COREDUMP_FILENAME": "/var/lib/systemd/coredump/core.gone.1000.$boot.6262.1790000250000000.zst"},
 {"__REALTIME_TIMESTAMP": "1790000300300000", "__MONOTONIC_TIMESTAMP": "4000", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-d", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 7171 (many_threads) of user 0 dumped core.", "COREDUMP_PID": "7171", "COREDUMP_UID": "0",
  "COREDUMP_GID": "0", "COREDUMP_SIGNAL": "11", "COREDUMP_TIMESTAMP": "1790000300000000",
  "COREDUMP_COMM": "many_threads", "COREDUMP_EXE": "/usr/bin/many_threads", "COREDUMP_TRUNCATED": "1",
  "COREDUMP_FILENAME": "$path_d"},
 {"__REALTIME_TIMESTAMP": "1790000350300000", "__MONOTONIC_TIMESTAMP": "4500", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-a", "MESSAGE": "an ordinary message, not a crash"}
]
JSON
cat > "$dir/rotated.json" <<JSON
[
 {"__REALTIME_TIMESTAMP": "1790000500300000", "__MONOTONIC_TIMESTAMP": "5000", "_BOOT_ID": "$boot",
  "_MACHINE_ID": "$machine", "_HOSTNAME": "node-e", "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
  "MESSAGE": "Process 5151 (divide_by_zero) of user 0 dumped core.", "COREDUMP_PID": "5151", "COREDUMP_UID": "0",
  "COREDUMP_GID": "0", "COREDUMP_SIGNAL": "$sig_e", "COREDUMP_TIMESTAMP": "1790000500000000",
  "COREDUMP_COMM": "divide_by_zero", "COREDUMP_EXE": "/usr/bin/divide_by_zero",
  "COREDUMP_FILENAME": "/var/lib/systemd/coredump/$name_e"}
]
JSON
python3 "$src/tests/journal/export_entries.py" "$dir/entries.json" > "$dir/entries.export"
python3 "$src/tests/journal/export_entries.py" "$dir/rotated.json" > "$dir/rotated.export"
$JOURNAL_REMOTE -o "$dir/fleet/journal/$machine/remote.journal" - < "$dir/entries.export" 2>/dev/null
# Rotated after an unclean shutdown: journald renames such a file *.journal~.
$JOURNAL_REMOTE -o "$dir/rotated.journal" - < "$dir/rotated.export" 2>/dev/null
mv "$dir/rotated.journal" "$dir/fleet/journal/$machine/system@00062a2b3c4d5e6f-0123456789abcdef.journal~"
head -c 4096 /dev/urandom > "$dir/fleet/journal/$machine/user-1000.journal"  # corrupt
db=$dir/fleet.db

# --- scan ---
"$coroner" scan --db "$db" --journal "$dir/fleet/journal" "$dir/fleet/cores" > "$dir/scan.out" 2> "$dir/scan.err"
cat "$dir/scan.out" "$dir/scan.err"
check "the corrupt file is reported by name" "$(grep -c 'user-1000.journal: not a readable journal file' "$dir/scan.err")" 1
check "one row per crash" "$(q "$db" "SELECT count(*) AS n FROM cores" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["n"])')" 6

# Gathered core matched by name: the journal's facts, the core's analysis.
check "a: host" "$(attr "$db" "$name_a" host)" node-a
check "a: host_source" "$(attr "$db" "$name_a" host_source)" journal
check "a: unit" "$(attr "$db" "$name_a" unit)" "docker-$docker.scope"
check "a: slice" "$(attr "$db" "$name_a" slice)" system.slice
check "a: container" "$(attr "$db" "$name_a" container)" "${docker:0:12}"
check "a: container_runtime" "$(attr "$db" "$name_a" container_runtime)" docker
check "a: package" "$(attr "$db" "$name_a" package)" trainer
check "a: package_version" "$(attr "$db" "$name_a" package_version)" 2.4.1-1
check "a: boot_id" "$(attr "$db" "$name_a" boot_id)" "$boot"
check "a: machine_id" "$(attr "$db" "$name_a" machine_id)" "$machine"
check "a: uid" "$(attr "$db" "$name_a" uid)" 1000
check "a: time from COREDUMP_TIMESTAMP" "$(col "$db" "$name_a" "time || ' ' || time_source")" "2026-09-21T14:13:20Z journal"
check "a: signal (the core's)" "$(col "$db" "$name_a" signal)" "$sig_a"
check "a: analyzed" "$(col "$db" "$name_a" status)" ok

# Stored in the journal: the same analysis as the core's file.
label=journal:node-b:77:2026-09-21T14:15:00.000000Z
"$coroner" scan --db "$dir/plain.db" "$zoo/abort_assert-O2.core" > /dev/null
check "b: the stored core is the row's" "$(col "$db" "$label" "status || ' ' || size")" "ok $(stat -c %s "$zoo/abort_assert-O2.core")"
check "b: its signature is the file's" "$(col "$db" "$label" signature)" "$(col "$dir/plain.db" abort_assert-O2.core signature)"
check "b: signal" "$(col "$db" "$label" signal)" "$sig_b"
check "b: pod" "$(attr "$db" "$label" pod)" "$pod"
check "b: container" "$(attr "$db" "$label" container)" "${containerd:0:12}"
check "b: container_runtime" "$(attr "$db" "$label" container_runtime)" containerd
check "b: no scratch file is left" "$(ls "${TMPDIR:-/tmp}" | grep -c '^coroner-journal-' || true)" 0

# Where the entry says: the journal's host over the xattr's.
check "c: host" "$(attr "$db" "$(basename "$path_c")" host)" node-c
[ "$xattrs" = 1 ] && check "c: the xattr's hostname kept as such" "$(attr "$db" "$(basename "$path_c")" hostname)" xattr-host
check "c: user_unit" "$(attr "$db" "$(basename "$path_c")" user_unit)" app.service
check "c: owner_uid" "$(attr "$db" "$(basename "$path_c")" owner_uid)" 1000
check "c: an nspawn machine's name" "$(attr "$db" "$(basename "$path_c")" container)" web-01
check "c: signal" "$(col "$db" "$(basename "$path_c")" signal)" "$sig_c"

# Gone: a row from the journal alone.
gone=core.gone.1000.$boot.6262.1790000250000000.zst
check "gone: partial, and why" "$(col "$db" "$gone" "status || ' ' || substr(error, 1, 17)")" "partial core file missing"
check "gone: process, signal, executable" "$(col "$db" "$gone" "pid || ' ' || signal || ' ' || exe")" "6262 7 /usr/bin/gone"
check "gone: package_version" "$(attr "$db" "$gone" package_version)" 1.0

# Truncated.
check "d: truncated (journal)" "$(attr "$db" "$(basename "$path_d")" truncated)" 1
check "d: truncated (core)" "$(col "$db" "$(basename "$path_d")" truncated)" 1

# The rotated file's entry, under its sidecar's host.
check "e: the sidecar's host wins" "$(attr "$db" "$name_e" host)" rack7-node-e
check "e: unit-less entry still placed" "$(attr "$db" "$name_e" boot_id)" "$boot"
check "e: signal" "$(col "$db" "$name_e" signal)" "$sig_e"

# Secrets: the environment and the command line reach nothing.
check "no secret in the dataset" "$(cat "$db"* | grep -c 's3cr3t' || true)" 0

# The view a newcomer queries.
check "cores_with_attributes by host" \
  "$("$coroner" query --json --db "$db" "SELECT host, count(*) AS n FROM cores_with_attributes GROUP BY host ORDER BY host" | python3 -c 'import json,sys; print(" ".join("%s=%s" % (r["host"], r["n"]) for r in json.load(sys.stdin)))')" \
  "node-a=1 node-b=1 node-c=2 node-d=1 rack7-node-e=1"

# Again: nothing changed, nothing analyzed (the stored core not taken out).
"$coroner" scan --db "$db" --journal "$dir/fleet/journal" "$dir/fleet/cores" > "$dir/again.out" 2>/dev/null
check "a rescan finds every row unchanged" "$(head -n 1 "$dir/again.out" | grep -o '0 analyzed.*unchanged')" "0 analyzed (0 ok, 0 error), 6 unchanged"

# --since/--until select by the entry's time.
"$coroner" scan --db "$dir/window.db" --journal "$dir/fleet/journal" --since 2026-09-21T14:15:00Z \
  --until 2026-09-21T14:18:00Z > /dev/null 2>&1
check "--since/--until" "$("$coroner" query --json --db "$dir/window.db" "SELECT group_concat(host, ' ') AS h FROM (SELECT host FROM cores_with_attributes ORDER BY time)" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["h"])')" "node-b node-c node-c"
check "--boot of another boot selects nothing" \
  "$("$coroner" list --json --journal "$dir/fleet/journal" --boot ffffffffffffffffffffffffffffffff 2>/dev/null)" "[]"

# `coroner list --journal` against Debian's coredumpctl on the same files
# (the good ones: coredumpctl refuses the corrupt one too).
good=("$dir/fleet/journal/$machine/remote.journal" "$dir/fleet/journal/$machine/system@00062a2b3c4d5e6f-0123456789abcdef.journal~")
files=()
for f in "${good[@]}"; do files+=(--file "$f"); done
$COREDUMPCTL "${files[@]}" list --json=short > "$dir/coredumpctl.json"
"$coroner" list --json --journal "${good[0]}" --journal "${good[1]}" > "$dir/list.json"
python3 "$src/tests/journal/compare_with_coredumpctl.py" "$dir/coredumpctl.json" "$dir/list.json" ||
  failures=$((failures + 1))

# `coroner list --db`: the dataset's view, newest first, with the signature.
"$coroner" list --json --db "$db" > "$dir/listdb.json"
check "list --db: newest first, hosts" "$(python3 -c 'import json,sys; print(" ".join(e["host"] for e in json.load(open(sys.argv[1]))))' "$dir/listdb.json")" \
  "rack7-node-e node-d node-c node-c node-b node-a"
check "list --db: a signature" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["signature"])' "$dir/listdb.json")" \
  "$(col "$db" "$name_a" signature)"
check "no secret in the listings" "$(cat "$dir"/list*.json | grep -c 's3cr3t' || true)" 0

# --- Debian's real systemd-coredump, run as the kernel runs it ---
# (tests/journal/run_systemd_coredump.sh: a private mount namespace, so root
# and unshare are needed). One crash stored as a file, one in the journal.
if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
  echo "note: the real systemd-coredump part needs root and unshare: not run"
else
  real=$dir/real
  API_KEY=s3cr3t-real "$src/tests/journal/run_systemd_coredump.sh" "$real/ext" external "$CORONER_SYSTEMD_TOOLS" \
    "$CORONER_ZOO/bin/bad_pointer-O2"
  API_KEY=s3cr3t-real "$src/tests/journal/run_systemd_coredump.sh" "$real/jrn" journal "$CORONER_SYSTEMD_TOOLS" \
    "$CORONER_ZOO/bin/abort_assert-O2"
  check "systemd-coredump logged the environment it was given" "$(grep -ac 's3cr3t-real' "$real/ext/entry.export")" 1
  mkdir -p "$real/journal"
  $JOURNAL_REMOTE -o "$real/journal/ext.journal" - < "$real/ext/entry.export" 2>/dev/null
  $JOURNAL_REMOTE -o "$real/journal/jrn.journal" - < "$real/jrn/entry.export" 2>/dev/null
  stored=$(ls "$real/ext/coredump")
  check "systemd-coredump stored one core file" "$(echo "$stored" | wc -l)" 1
  "$coroner" scan --db "$real/d.db" --journal "$real/journal" "$real/ext/coredump" > /dev/null 2>&1
  "$coroner" scan --db "$real/gdb.db" "$real/ext/gdb.core" "$real/jrn/gdb.core" > /dev/null 2>&1
  field() { grep -a "^$2=" "$1" | head -n 1 | cut -d= -f2-; }
  jlabel="journal:$(hostname):$(field "$real/jrn/entry.export" COREDUMP_PID):"
  check "real: two rows, both analyzed" "$(q "$real/d.db" "SELECT group_concat(status, ' ') AS s FROM cores" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["s"])')" "ok ok"
  check "real, file: the core systemd-coredump was given" "$(col "$real/d.db" "$stored" signature)" "$(col "$real/gdb.db" ext/gdb.core signature)"
  check "real, file: signal as gdb reads it" "$(col "$real/d.db" "$stored" signal)" "$(signo "$real/ext/gdb.core")"
  check "real, file: host" "$(attr "$real/d.db" "$stored" host) $(attr "$real/d.db" "$stored" host_source)" "$(hostname) journal"
  check "real, file: boot" "$(attr "$real/d.db" "$stored" boot_id)" "$(tr -d '-' < /proc/sys/kernel/random/boot_id)"
  check "real, file: uid" "$(attr "$real/d.db" "$stored" uid)" "$(id -u)"
  check "real, file: time" "$(col "$real/d.db" "$stored" "CAST(strftime('%s', time) AS INTEGER)")" \
    "$(( $(field "$real/ext/entry.export" COREDUMP_TIMESTAMP) / 1000000 ))"
  check "real, journal: the stored core's analysis" "$(q "$real/d.db" "SELECT signature FROM cores WHERE path LIKE '$jlabel%'" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["signature"])')" \
    "$(col "$real/gdb.db" jrn/gdb.core signature)"
  check "real: no secret in the dataset" "$(cat "$real"/d.db* | grep -c 's3cr3t' || true)" 0
  $COREDUMPCTL --file "$real/journal/ext.journal" --file "$real/journal/jrn.journal" list --json=short > "$real/coredumpctl.json"
  "$coroner" list --json --journal "$real/journal" > "$real/list.json"
  python3 "$src/tests/journal/compare_with_coredumpctl.py" "$real/coredumpctl.json" "$real/list.json" ||
    failures=$((failures + 1))
  # The system journal, as `--journal` alone reads it (coredumpctl's
  # default): the files where journald keeps them, in a private mount
  # namespace whose /var/log/journal is the test's; --boot alone is this boot.
  unshare --mount --propagation private bash -c '
    set -e
    mount -t tmpfs coroner-test /var/log/journal
    mkdir "/var/log/journal/$(cat /etc/machine-id)"
    cp "$1/journal/ext.journal" "/var/log/journal/$(cat /etc/machine-id)/system.journal"
    cp "$1/journal/jrn.journal" "/var/log/journal/$(cat /etc/machine-id)/system@0123-4567.journal~"
    "$2" scan --journal --boot --db "$1/system.db" "$1/ext/coredump" > /dev/null 2>&1
    "$2" list --json --journal --boot > "$1/system-list.json"
    "$2" list --json --journal --boot ffffffffffffffffffffffffffffffff > "$1/other-boot.json"' _ "$real" "$coroner"
  check "the system journal: this boot's crashes" "$(q "$real/system.db" "SELECT group_concat(status, ' ') AS s FROM cores" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["s"])')" "ok ok"
  check "the system journal: the same rows" "$(q "$real/system.db" "SELECT group_concat(signature, ';') AS s FROM (SELECT signature FROM cores ORDER BY signature)" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["s"])')" \
    "$(q "$real/d.db" "SELECT group_concat(signature, ';') AS s FROM (SELECT signature FROM cores ORDER BY signature)" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["s"])')"
  check "the system journal: list" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$real/system-list.json")" 2
  check "the system journal: another boot's list" "$(cat "$real/other-boot.json")" "[]"
fi

[ "$failures" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "journal scan: all checks passed"
