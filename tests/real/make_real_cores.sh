#!/usr/bin/env bash
# make_real_cores.sh OUT
#
# The real-programs corpus: cores of programs from Debian packages, crashed
# the way they crash in the field, with gdb's view of each (the oracle). The
# crash methods are in expected.tsv beside this script; a program that is not
# installed is left out and the manifest says so. Incremental: a core is made
# again only when its oracle is missing.
#
# The kernel's core is used when core_pattern leaves it in the working
# directory; otherwise gdb writes one at the same signal (for a process killed
# by another, gdb attaches and a shell it starts sends the signal).
set -euo pipefail
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/../fixtures
mkdir -p "$out/cores" "$out/oracle" "$out/logs"
manifest=$out/manifest.tsv.tmp
printf '#name\tbinary\tcore\toracle\twriter\n' >"$manifest"

. "$fixtures/kernel_cores.sh"

# Waits until PID sleeps in the kernel (state S): a synchronization, bounded
# for a hang only.
# With WAIT_SYSCALL set (numbers), until its main thread is in one of those
# system calls (/proc/PID/syscall): a program that also sleeps while it
# starts up (node) is killed only once idle.
wait_asleep() {
  local i call
  for i in $(seq 6000); do
    if [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = S ]; then
      [ -z "${WAIT_SYSCALL:-}" ] && return 0
      call=$(awk '{print $1}' "/proc/$1/syscall" 2>/dev/null || true)
      for n in $WAIT_SYSCALL; do [ "$call" = "$n" ] && return 0; done
    fi
    sleep 0.01
  done
  return 1
}

take_core() {  # take_core DIR NAME: the kernel's core in DIR, if any
  local core
  core=$(find "$1" -maxdepth 1 -name 'core*' -type f | head -n 1)
  [ -n "$core" ] && [ -s "$core" ] && mv "$core" "$out/cores/$2.core" && echo kernel >"$out/cores/$2.writer"
}

# record NAME BINARY: the oracle and the manifest line, which says who wrote
# the core (kernel or gdb: gdb writes it at the first signal it stops at,
# and the process's arguments as gdb quotes them).
record() {
  local name=$1 bin=$2 writer
  [ -s "$out/oracle/$name.gdb" ] || "$fixtures/gdb_oracle.sh" "$bin" "$out/cores/$name.core" "$out/oracle/$name.gdb"
  writer=$(cat "$out/cores/$name.writer" 2>/dev/null || echo unknown)
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$bin" "$out/cores/$name.core" "$out/oracle/$name.gdb" "$writer" >>"$manifest"
}

have() {  # have NAME BINARY: false (and a note) when the program is absent
  if [ ! -x "$2" ]; then
    echo "real cores: $1 left out: $2 is not installed" >&2
    printf '#absent\t%s\t%s\n' "$1" "$2" >>"$manifest"
    return 1
  fi
}

# crash NAME BINARY ARGS...: a program that crashes by itself. What it
# prints is kept in logs/NAME.log (a runtime's own crash report). HANDLED
# says how the program's own handler ends a fault, for gdb where gdb writes
# the core: "reraise" (gdb passes the first signal on and writes the core at
# the second) or "abort" (gdb passes every SIGSEGV on, as a JVM raises many,
# and writes the core at SIGABRT).
crash() {
  local name=$1 bin=$2
  shift 2
  have "$name" "$bin" || return 0
  if [ ! -s "$out/oracle/$name.gdb" ]; then
    local work
    work=$(mktemp -d)
    # What the program prints goes to NAME.out; a program that writes its
    # own report into NAME.log (the JVM's -XX:ErrorFile) keeps it.
    rm -f "$out/logs/$name.log" "$out/logs/$name.out"
    if [ $kernel_cores = yes ]; then
      (cd "$work" && ulimit -c unlimited && timeout 120 "$bin" "$@" </dev/null >"$out/logs/$name.out" 2>&1) || true
    fi
    if ! take_core "$work" "$name"; then
      local before=() after=()
      [ "${HANDLED:-}" = reraise ] && after=(-ex continue)
      [ "${HANDLED:-}" = abort ] && before=(-ex 'handle SIGSEGV nostop noprint pass')
      timeout 300 gdb -nx -batch -q -ex 'set pagination off' "${before[@]}" -ex run "${after[@]}" \
        -ex "generate-core-file $out/cores/$name.core" --args "$bin" "$@" </dev/null >"$work/gdb.log" 2>&1 || true
      cp "$work/gdb.log" "$out/logs/$name.out"
      echo gdb >"$out/cores/$name.writer"
    fi
    [ -s "$out/logs/$name.log" ] || mv "$out/logs/$name.out" "$out/logs/$name.log"
    rm -rf "$work"
  fi
  record "$name" "$bin"
}

# kill_with NAME SIGNAL BINARY ARGS...: a program blocked in a system call,
# sent SIGNAL by this script. Its stdin is a FIFO held open, so a program
# that reads it blocks in read().
kill_with() {
  local name=$1 sig=$2 bin=$3
  shift 3
  have "$name" "$bin" || return 0
  if [ ! -s "$out/oracle/$name.gdb" ]; then
    local work pid
    work=$(mktemp -d)
    mkfifo "$work/stdin"
    exec {fifo}<>"$work/stdin"
    if [ $kernel_cores = yes ]; then
      (cd "$work" && ulimit -c unlimited && exec "$bin" "$@" <&$fifo >/dev/null 2>&1) &
      pid=$!
      # Never a hang: a program that does not settle is sent the signal
      # anyway, and the test then says what its core shows.
      wait_asleep $pid || echo "real cores: $name did not settle; signalled anyway" >&2
      kill -s "$sig" $pid
      wait $pid || true
    fi
    if ! take_core "$work" "$name"; then
      (cd "$work" && exec "$bin" "$@" <&$fifo >/dev/null 2>&1) &
      pid=$!
      wait_asleep $pid
      timeout 300 gdb -nx -batch -q -ex 'set pagination off' -p $pid \
        -ex "shell kill -s $sig $pid" -ex continue \
        -ex "generate-core-file $out/cores/$name.core" -ex kill </dev/null >"$work/gdb.log" 2>&1 || true
      echo gdb >"$out/cores/$name.writer"
      kill -KILL $pid 2>/dev/null || true
      wait $pid 2>/dev/null || true
    fi
    exec {fifo}<&-
    rm -rf "$work"
  fi
  record "$name" "$bin"
}

python=/usr/bin/python3
# ctypes reads a NULL char* (strlen in libc) after mmap'ing libc a second time.
crash python-ctypes-mmap $python -c "
import ctypes, mmap
f = open('/lib/x86_64-linux-gnu/libc.so.6', 'rb')
m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
ctypes.string_at(0)"
# Three threads waiting (a lock, a sleep, a pipe read) while the main thread
# reads through a NULL pointer.
crash python-threads $python -c "
import ctypes, os, threading, time
lock = threading.Lock(); lock.acquire()
r, w = os.pipe()
for target in (lock.acquire, lambda: time.sleep(1000), lambda: os.read(r, 1)):
    threading.Thread(target=target, daemon=True).start()
time.sleep(0.5)
ctypes.string_at(0)"
# faulthandler prints the Python stack and re-raises from its handler: the
# core's signal is the re-raise, the fault is in the handler's frame.
HANDLED=reraise crash python-faulthandler $python -X faulthandler -c "import ctypes; ctypes.string_at(0)"
# ctypes.memmove onto libc's code (printf), mapped read and execute.
crash python-write-code $python -c "
import ctypes
printf = ctypes.cast(ctypes.CDLL(None).printf, ctypes.c_void_p).value
ctypes.memmove(printf, b'x', 1)"
# node's process.abort(): abort() called under JavaScript frames.
crash node-abort /usr/bin/node -e "function f() { process.abort(); } f();"
# Killed once its event loop is idle in epoll_wait, epoll_pwait or epoll_pwait2.
WAIT_SYSCALL="232 281 441" kill_with node-kill-segv SEGV /usr/bin/node -e "setTimeout(() => {}, 1000000);"
kill_with perl-kill-abrt ABRT /usr/bin/perl -e 'sleep 1000'
kill_with sleep-kill-segv SEGV /bin/sleep 1000
kill_with cat-kill-abrt ABRT /bin/cat
kill_with sqlite3-kill-segv SEGV /usr/bin/sqlite3 :memory:
# nginx as one process (no master), serving a Unix socket, waiting in
# epoll_wait.
mkdir -p "$out/nginx/logs"
cat >"$out/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
pid $out/nginx/nginx.pid;
error_log /dev/null;
events {}
http {
  access_log off;
  server { listen unix:$out/nginx/nginx.sock; }
}
CONF
rm -f "$out/nginx/nginx.sock"
kill_with nginx-kill-segv SEGV /usr/sbin/nginx -p "$out/nginx" -c "$out/nginx/nginx.conf"

# ruby's fatal-signal handler prints its [BUG] report and calls abort(): the
# core is SIGABRT, the read of address 8 is in the signal frame.
HANDLED=abort crash ruby-fiddle-bug /usr/bin/ruby -e 'require "fiddle"; Fiddle::Pointer.new(8)[0]'

# The JVM: Unsafe.putLong(0) in libjvm under interpreted Java frames (the
# source launcher compiles UnsafeNull.java); the JVM's handler writes its
# error report (logs/NAME.log: the siginfo, the Java and native frames) and
# calls abort(). A small heap and code cache keep the core near 200 MB.
HANDLED=abort crash java-unsafe-null /usr/bin/java -Xms8m -Xmx16m -XX:+UseSerialGC -XX:ReservedCodeCacheSize=8m \
  -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Xshare:off -XX:ErrorFile="$out/logs/java-unsafe-null.log" \
  "$here/UnsafeNull.java"

# redis_segfault NAME: redis-server's `DEBUG SEGFAULT` writes to a PROT_READ
# page; redis's handler logs the fault (logs/NAME.log: "crashed by signal",
# "si_code", "Accessing address") and re-raises it with kill().
redis_segfault() {
  local name=$1 bin=/usr/bin/redis-server
  have "$name" "$bin" || return 0
  if [ ! -s "$out/oracle/$name.gdb" ]; then
    local work pid i
    work=$(mktemp -d)
    local cli=(redis-cli -s "$work/redis.sock")
    start_redis() {
      (cd "$work" && ulimit -c unlimited && exec "$bin" --port 0 --unixsocket "$work/redis.sock" --save '' \
        --appendonly no --enable-debug-command yes --logfile "$out/logs/$name.log" </dev/null >/dev/null 2>&1) &
      pid=$!
      for i in $(seq 6000); do
        [ "$("${cli[@]}" ping 2>/dev/null)" = PONG ] && return 0
        sleep 0.01
      done
      echo "real cores: $name did not answer ping" >&2
    }
    if [ $kernel_cores = yes ]; then
      start_redis
      "${cli[@]}" debug segfault >/dev/null 2>&1 || true
      wait $pid || true
    fi
    if ! take_core "$work" "$name"; then
      rm -f "$work/redis.sock"
      start_redis
      timeout 300 gdb -nx -batch -q -ex 'set pagination off' -p $pid \
        -ex "shell (${cli[*]} debug segfault >/dev/null 2>&1 &)" -ex continue -ex continue \
        -ex "generate-core-file $out/cores/$name.core" -ex kill </dev/null >"$work/gdb.log" 2>&1 || true
      echo gdb >"$out/cores/$name.writer"
      kill -KILL $pid 2>/dev/null || true
      wait $pid 2>/dev/null || true
    fi
    rm -rf "$work"
  fi
  record "$name" "$bin"
}
redis_segfault redis-debug-segfault

mv "$manifest" "$out/manifest.tsv"
