#!/usr/bin/env bash
# bench_big_core.sh CORONER DIR
#
# The big-core benchmark: a core shaped like a GPU training process's
# (make_big_core.sh: python3 with numpy, 200 threads, 4 GiB of heap, a
# 96 GiB mapping barely touched; made once in DIR and reused) and its .zst.
# coroner (full, --json, --registers-only, scan) against gdb (`thread apply
# all bt`) and eu-stack in the same run: wall and CPU seconds, max RSS,
# bytes read; for the .zst, coroner's CPU against one `zstd -d`. Prints the
# issue's targets beside the figures. Skipped (with a line saying so) where
# python3-numpy is absent.
set -euo pipefail
coroner=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! "$here/make_big_core.sh" "$dir" 2>"$dir.log"; then
  echo "big core: skipped ($(tail -1 "$dir.log"))"
  exit 0
fi
core=$dir/big.core zst=$dir/big.core.zst
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exe=/usr/bin/python3.11

# measure [-r N] NAME CMD...: the median wall time (nanosecond clock: the
# fast runs take some 50 ms, where time(1)'s 10 ms steps are too coarse for a
# ratio) of N runs (1 by default), and the user+sys CPU and max RSS of the
# last one.
measure() {
  local reps=1
  if [ "$1" = -r ]; then reps=$2; shift 2; fi
  local name=$1
  shift
  : >"$work/$name.walls"
  for _ in $(seq "$reps"); do
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" || true
    end=$(date +%s%N)
    echo "$(((end - start) / 1000))" >>"$work/$name.walls"
  done
  local wall
  wall=$(sort -n "$work/$name.walls" | awk '{v[NR] = $1} END {printf "%.6f", v[int((NR + 1) / 2)] / 1e6}')
  read -r _ user sys rss <"$work/$name.time"
  printf '%s %s %s %s\n' "$name" "$wall" "$(echo "$user + $sys" | bc)" "$rss" >>"$work/results"
}
# Page cache: the core's data, the modules and debug files.
cat "$core" >/dev/null
: >"$work/results"
# The first run with an empty cache decodes the compressed debug sections
# (libc6-dbg's) and writes their decoded copies; the runs after it map them.
# The modules' files are read once before (without a cache) so that the
# first run is charged for the debug cache, not for the page cache of the
# 300 shared objects that gdb's and eu-stack's runs below find warm.
# Five first runs, each with a new empty cache: a single run is as noisy as
# a shared machine.
CORONER_CACHE_DIR= "$coroner" analyze "$core" >/dev/null
measure -r 5 coroner_full_cold_cache sh -c 'rm -rf "$1" && CORONER_CACHE_DIR=$1 exec "$2" analyze "$3"' cold \
  "$work/cold" "$coroner" "$core"
export CORONER_CACHE_DIR=$work/cache
"$coroner" analyze --json "$core" >/dev/null
measure -r 5 coroner_full "$coroner" analyze "$core"
measure -r 5 coroner_json "$coroner" analyze --json "$core"
measure -r 5 coroner_registers "$coroner" analyze --registers-only --json "$core"
rm -f "$work/scan.db"
measure coroner_scan "$coroner" scan "$core" --db "$work/scan.db" --jobs 1
measure -r 5 gdb gdb -nx -batch -q -ex 'set pagination off' -ex 'thread apply all bt' "$exe" "$core"
measure -r 5 eu_stack eu-stack --core="$core" -e "$exe"
cat "$zst" >/dev/null
measure zst_registers "$coroner" analyze --registers-only --json "$zst"
measure zst_full "$coroner" analyze --json "$zst"
measure zst_full_no_python "$coroner" analyze --json --no-python "$zst"
measure zstd_d sh -c 'zstd -d -c "$1" >/dev/null' zstd_d "$zst"

bytes=$(grep -o '"bytes_read":[0-9]*' "$work/coroner_json.out" | head -1 | cut -d: -f2)
zst_reg_bytes=$(grep -o '"bytes_read":[0-9]*' "$work/coroner_registers.out" | head -1 | cut -d: -f2)
# The crashing thread's frames, gdb's against coroner's native ones (names).
# (gdb shows frame #0 once more, in its banner, before the backtrace.)
gdb -nx -batch -q -ex 'set pagination off' -ex bt "$exe" "$core" 2>/dev/null |
  awk '/^#0 /{buf = ""} /^#[0-9]/{buf = buf $0 "\n"} END {printf "%s", buf}' |
  sed -n 's/^#[0-9]* *\(0x[0-9a-f]* in \)\{0,1\}\([^ (]*\).*/\2/p' >"$work/gdb_frames"
python3 - "$work/coroner_json.out" >"$work/our_frames" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["threads"][j["crashing_thread"]]
for f in t["frames"]:
    if f["kind"] == "native":
        print(f["function"] or "??")
PY
if cmp -s "$work/gdb_frames" "$work/our_frames"; then same=yes; else same=no; fi

# Python frames of the .zst (one pass) against those of the plain core.
python_frames() {
  python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(sum(1 for t in j["threads"] for f in t["frames"] if f["kind"] == "python"))' "$1" 2>/dev/null || echo 0
}
py_plain=$(python_frames "$work/coroner_json.out") py_zst=$(python_frames "$work/zst_full.out")
nmodules=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["modules"]))' "$work/coroner_json.out")
nthreads=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["threads"]))' "$work/coroner_json.out")
awk -v bytes="$bytes" -v nmodules="$nmodules" -v nthreads="$nthreads" -v variant="$(cat "$dir/variant")" -v size="$(stat -c %s "$core")" -v disk="$(du -k "$core" | cut -f1)" \
  -v zsize="$(stat -c %s "$zst")" -v same="$same" -v py_plain="$py_plain" -v py_zst="$py_zst" -v nframes="$(wc -l <"$work/gdb_frames")" '
{ wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4 }
END {
  printf "big_core: python3 with %s, %d threads, %d modules; %.1f GiB apparent, %.1f GiB on disk, .zst %.2f GiB\n", variant, nthreads, nmodules, size / 2^30, disk / 2^20, zsize / 2^30;
  n = split("coroner_full_cold_cache coroner_full coroner_json coroner_registers coroner_scan gdb eu_stack zst_registers zst_full zst_full_no_python zstd_d", names, " ");
  for (i = 1; i <= n; i++) {
    k = names[i];
    printf "big_%s: wall %.3f s, cpu %.2f s, max_rss %.0f MiB\n", k, wall[k], cpu[k], rss[k] / 1024;
  }
  printf "big_bytes_read: %.2f MiB (target <= 4 MiB)\n", bytes / 2^20;
  printf "big_full_vs_gdb: %.1fx (target >= 15x); with an empty debug cache %.1fx\n", wall["gdb"] / wall["coroner_full"], wall["gdb"] / wall["coroner_full_cold_cache"];
  printf "big_full_vs_eu_stack: %.1fx (target >= 3x)\n", wall["eu_stack"] / wall["coroner_full"];
  printf "big_full_max_rss: %.0f MiB (target <= 256 MiB)\n", rss["coroner_full"] / 1024;
  printf "big_zst_registers_only: %.2f s (target < 2 s)\n", wall["zst_registers"];
  printf "big_zst_full_cpu_vs_zstd_d: %.2fx (target <= 1.2x); without Python stacks %.2fx\n", cpu["zst_full"] / cpu["zstd_d"], cpu["zst_full_no_python"] / cpu["zstd_d"];
  printf "big_crashing_thread_frames_equal_gdb: %s (%d frames)\n", same, nframes;
  printf "big_zst_python_frames: %d (target: the plain core'"'"'s %d, in the same one pass)\n", py_zst, py_plain;
}' "$work/results"
