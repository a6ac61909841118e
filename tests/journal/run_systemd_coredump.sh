#!/usr/bin/env bash
# run_systemd_coredump.sh OUT STORAGE TOOLS PROGRAM [ARGS...]
#
# Debian's real systemd-coredump (from TOOLS, tests/fixtures/systemd_tools.sh)
# takes PROGRAM's crash the way the kernel hands it over — the core on
# stdin, `%P %u %g %s %t %c %h` as its arguments, the crashed process still
# there to read /proc from — with Storage=STORAGE (external or journal).
# Nothing of the machine changes: it runs in a private mount namespace
# whose /run/systemd, /var/lib/systemd and /etc/systemd are empty tmpfs of
# its own (core_pattern is never touched; the kernel's own handoff is
# replaced by gdb, which stops PROGRAM at its fault and writes the core).
# tests/journal/coredump_host.py stands in for systemd (socket activation)
# and journald (the native socket). Leaves OUT/entry.export (the journal
# entry systemd-coredump logged), OUT/coredump/ (what it stored, with its
# xattrs) and OUT/gdb.core (the core it was given).
set -euo pipefail
out=$(realpath -m "$1") storage=$2 tools=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
if [ "${CORONER_IN_NAMESPACE:-}" != 1 ]; then
  exec env CORONER_IN_NAMESPACE=1 unshare --mount --propagation private "$0" "$out" "$storage" "$tools" "$@"
fi
for d in /run/systemd /var/lib/systemd /etc/systemd; do mount -t tmpfs coroner-test "$d"; done
mkdir -p /var/lib/systemd/coredump
printf '[Coredump]\nStorage=%s\n' "$storage" > /etc/systemd/coredump.conf
lib=$tools/root/usr/lib/x86_64-linux-gnu
binary=$tools/root/lib/systemd/systemd-coredump
export LD_LIBRARY_PATH=$lib
rm -f "$out/ready" "$out/entry.export"
python3 "$here/coredump_host.py" "$out" "$binary" &
host=$!
for _ in $(seq 600); do [ -e "$out/ready" ] && break; sleep 0.05; done
# At the fault: the core, then systemd-coredump's kernel-mode run on it
# while the process is still stopped there.
gdb -nx -batch -ex run -ex "generate-core-file $out/gdb.core" \
  -ex "python import gdb, subprocess, time, socket; pid = gdb.selected_inferior().pid; signo = int(gdb.parse_and_eval('\$_siginfo.si_signo')); subprocess.run(['$binary', str(pid), str($(id -u)), str($(id -g)), str(signo), str(int(time.time())), '18446744073709551615', socket.gethostname()], stdin=open('$out/gdb.core', 'rb'), check=False)" \
  -ex kill --args "$@" > "$out/gdb.log" 2>&1 || true
wait "$host"
rm -rf "$out/coredump"
cp -a /var/lib/systemd/coredump "$out/coredump"
[ -s "$out/entry.export" ]
