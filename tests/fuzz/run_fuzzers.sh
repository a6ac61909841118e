#!/usr/bin/env bash
# run_fuzzers.sh FUZZ_BUILD ZOO SECONDS
# Runs each fuzzer for SECONDS, seeded with the first 64 KiB of the zoo's
# kernel cores (and the compressed ones for the stream fuzzer); the two
# whole-analysis fuzzers patch one zoo core and one zoo executable. Fails on any
# crash, leak, sanitizer report or timeout the fuzzer finds.
set -euo pipefail
build=$1 zoo=$2 seconds=$3
corpus=$build/corpus
mkdir -p "$corpus/core" "$corpus/source" "$corpus/metadata" "$corpus/epi" "$corpus/disassembler" "$build/artifacts"
for c in "$zoo"/cores/*-O0.core "$zoo"/cores/*-static.core; do
  head -c 65536 "$c" > "$corpus/core/$(basename "$c")"
done
# aarch64 cores: qemu-user's (no NT_FILE: the linker's list is read).
for c in "$zoo"/a64/cores/*-O0.core; do
  head -c 65536 "$c" > "$corpus/core/a64-$(basename "$c")"
done
i=0
for c in "$zoo"/cores/*.zst "$zoo"/cores/*.lz4 "$zoo"/cores/*.xz; do
  case "$c" in *.zst) p='\x00';; *.lz4) p='\x01';; *.xz) p='\x02';; esac
  { printf "$p"; head -c 32768 "$c"; } > "$corpus/source/seed$i"
  i=$((i + 1))
done
# Decoder seeds: compiled code, and libc's (AVX-512 string functions among it).
objcopy -O binary --only-section=.text "$zoo/bin/null_deref-O2" "$corpus/disassembler/zoo-text"
aarch64-linux-gnu-objcopy -O binary --only-section=.text "$zoo/a64/bin/null_deref-pac" "$corpus/disassembler/a64-text"
objcopy -O binary --only-section=.text /lib/x86_64-linux-gnu/libc.so.6 "$build/libc-text"
split -b 2048 -a 4 "$build/libc-text" "$corpus/disassembler/libc-"
rm -f "$build/libc-text"
# Debug file seeds: a zoo debug file with its sections compressed, both ways.
mkdir -p "$corpus/debug_file"
zoo_debug=$(find "$zoo/debug/.build-id" -name '*.debug' | head -n 1)
objcopy --compress-debug-sections=zlib "$zoo_debug" "$corpus/debug_file/zlib"
objcopy --compress-debug-sections=zstd "$zoo_debug" "$corpus/debug_file/zstd" 2>/dev/null || true
# Metadata seeds: an inventory, times, a systemd-coredump name, a record.
printf '\x00host,valid_from,valid_to,pm\nnode-1,2026-10-01T00:00:00Z,,"pm, 1"\n' > "$corpus/metadata/inventory"
printf '\x012026-10-14T03:12:00.5+02:00' > "$corpus/metadata/time"
printf '\x02core.prog.1000.0123456789abcdef0123456789abcdef.4242.1760411520000000.zst' > "$corpus/metadata/name"
printf '\x03{"path":"a","source":"core","size":10,"mtime_ns":null,"bytes_read":1,"status":"ok","error":"","warnings":[],"time":1,"time_source":"sidecar","uptime":null,"pid":7,"comm":"c","signal":11,"si_code":1,"fault_address":0,"real_signal":null,"real_si_code":null,"real_fault_address":null,"syndrome":"null-deref","context":"runtime","signature":"s","crashing_tid":7,"exe":"/x","build_id":"ab","truncated":false,"cpu_time":0.5,"analysis_ms":1,"attributes":[{"key":"k","value":"v"}],"threads":[{"thread":0,"tid":1,"crashing":true,"pc":1,"sp":2,"cpu_time":0,"registers":"{}"}],"frames":[{"thread":0,"index":0,"pc":1,"module":"m","build_id":"b","offset":null,"function":"f","file":"x","line":1,"trust":"cfi","inlined":false}],"modules":[{"path":"m","base":1,"size":1,"build_id":"b","status":"ok"}]}' > "$corpus/metadata/record"
printf '\x04pod-1 coroner-crash: v=1 pid=7 tid=7 time=1.000000000 host=h comm=c sig=11 code=1 addr=0x0 regs=rax:0x0,rbx:0x0,rcx:0x0,rdx:0x0,rsi:0x0,rdi:0x0,rbp:0x1000,rsp:0x2000,r8:0x0,r9:0x0,r10:0x0,r11:0x0,r12:0x0,r13:0x0,r14:0x0,r15:0x0,rip:0x0,eflags:0x0,csgsfs:0x0,err:0x0,trapno:0x0,oldmask:0x0,cr2:0x0 stack=0x1f80:0x0,-,0x1 bt=0x0,ab+0x10 fps=0x1000 stackmap=0x1000-0x3000 mods=ab@0x0@/bin/x segs=0:0x400000-0x401000:0x0:rx\n' > "$corpus/metadata/crash_line"
printf '\x04coroner-crash: v=1 arch=aarch64 pid=7 tid=7 time=1.000000000 sig=11 code=1 addr=0x8 regs=x0:0x0,x1:0x0,x2:0x0,x3:0x0,x4:0x0,x5:0x0,x6:0x0,x7:0x0,x8:0x0,x9:0x0,x10:0x0,x11:0x0,x12:0x0,x13:0x0,x14:0x0,x15:0x0,x16:0x0,x17:0x0,x18:0x0,x19:0x0,x20:0x0,x21:0x0,x22:0x0,x23:0x0,x24:0x0,x25:0x0,x26:0x0,x27:0x0,x28:0x0,x29:0x1000,x30:0x400010,sp:0x2000,pc:0x400000,pstate:0x0 stack=0x1f80:0x0,-,0x1 bt=ab+0x0,ab+0x10 fps=0x1000 stackmap=0x1000-0x3000 mods=ab@0x0@/bin/x segs=0:0x400000-0x401000:0x0:rx\n' > "$corpus/metadata/crash_line_aarch64"
printf '\x002026-10-14T03:12:00+0000 h kernel: mce: x\nOct 14 03:12:00 h kernel: EDAC\n[Wed Oct 14 03:12:00 2026] NVRM: Xid\n[1.5] amdgpu fault\n' > "$corpus/epi/kernel_log"
printf '\x01[[exclude]]\nname = "a"\nwhere = "1"\n[[label]]\nname = "b"\nwhere = "syndrome = '"'"'x'"'"'"\n' > "$corpus/epi/rules"
printf '\x02host,machine,region,valid_from,valid_to\nh1,m1,r1,2026-09-20T00:00:00Z,2026-10-10T00:00:00Z\nh1,m2,r1,2026-10-01T00:00:00Z,\nh2,m1,r2,,\nh3,"m,3",r1,2026-11-01T00:00:00Z,2026-10-01T00:00:00Z\n' > "$corpus/epi/inventory"
# The whole-analysis fuzzers patch a real core (its notes and stack) and a
# real executable with DWARF (through --sysroot); a seed patches one byte.
mkdir -p "$corpus/analysis" "$corpus/analysis_a64" "$corpus/module" "$corpus/python" "$corpus/location_table"
# Location table seeds: first line 10, unit 6, the five entry forms (the
# unit test's table); and an inventory of many columns and empty cells.
printf '\x0a\x00\x00\x00\x06\x00\x00\x00\x81\x05\xd8\x04\x08\xea\x03\xf0\x58\x09\x00\x01\x02\xf9' > "$corpus/location_table/forms"
{ printf '\x00host'; for i in $(seq 200); do printf ',column_%s' "$i"; done; printf '\n'
  for r in $(seq 20); do printf 'h%s' "$r"; for i in $(seq 200); do printf ','; done; printf '\n'; done; } > "$corpus/metadata/wide_inventory"
printf '\x00\x10\x00\x00\x00\x01\x00' > "$corpus/analysis/seed"
cp "$corpus/analysis/seed" "$corpus/analysis_a64/seed"
# The environment's region (the third: notes, stack, the main stack's top):
# eight NULs where the arrays are (a second NULL after envp, as unsetenv
# leaves it), and 64 bytes of 'A' over the strings (one without an end).
for a in analysis analysis_a64; do
  printf '\x02\x00\x3a\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x00' > "$corpus/$a/envp_nulls"
  { printf '\x02\xc0\x3f\x00\x00\x40'; printf 'A%.0s' $(seq 64); } > "$corpus/$a/env_unterminated"
done
# aarch64 addressing forms: ldr x0, [x0, x1, lsl #3]; ldr w0, [x0, w1, sxtw #2];
# ldr x0, [x0, w1, uxtw #3]; str x0, [sp, #8].
printf '\x00\x78\x61\xf8\x00\xd8\x61\xb8\x00\x58\x61\xf8\xe0\x07\x00\xf9' > "$corpus/disassembler/a64-index-forms"
# The Python reader's seed: a frame's `previous` pointer (offset 48 of the
# second object, 3.11's layout) set to all ones.
printf '\x02\x30\x00\x00\x00\x08\xff\xff\xff\xff\xff\xff\xff\xff' > "$corpus/python/seed"
# A core of Debian's python3.11 (tests/python), made here when the suite has not.
python_cores=$build/python
[ -s "$python_cores/manifest.tsv" ] || "$(dirname "$0")/../python/make_python_cores.sh" "$python_cores" >/dev/null 2>&1 || true
python_core=$(awk -F'\t' '!/^#/ {print $3; exit}' "$python_cores/manifest.tsv" 2>/dev/null || true)
printf '\x02\x20\x00\x00\x00\x01\xff' > "$corpus/module/seed"
export CORONER_FUZZ_SYSROOT="$build/module-sysroot"
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp"
rm -rf "$CORONER_FUZZ_SYSROOT"
# Sanitizer reports and crashes make libFuzzer exit non-zero.
# The fuzzers the build made (tests/fuzz/CMakeLists.txt's one list); the
# whole analysis runs twice, on each machine's core.
fuzzers=""
for f in $(cat "$build/fuzzers.txt"); do
  case $f in
    analysis) fuzzers="$fuzzers analysis analysis_a64" ;;
    python)
      if [ -n "$python_core" ]; then fuzzers="$fuzzers python"
      else echo "fuzz: python_fuzzer skipped: no CPython 3.11+ core could be made here"; fi ;;
    *) fuzzers="$fuzzers $f" ;;
  esac
done
for f in $fuzzers; do
  case $f in
    python) export CORONER_FUZZ_CORE="$python_core" ;;
    analysis) export CORONER_FUZZ_CORE="$zoo/cores/locals-O0.core" ;;
    # An aarch64 core of qemu-user's: its frame records, the signal return
    # check at every frame, the linker's list, Capstone on its code.
    analysis_a64) export CORONER_FUZZ_CORE="$zoo/a64/cores/locals-O0.core" ;;
    # Full stacks for allocations, so that the suppression of libdw's own
    # leak (lsan.supp) matches by function.
    module) export CORONER_FUZZ_CORE="$zoo/cores/inlined-O2g.core" CORONER_FUZZ_MODULE="$zoo/bin/inlined-O2g" \
              ASAN_OPTIONS="fast_unwind_on_malloc=0" ;;
  esac
  # The location table is one small function: a quarter of the time finds
  # what the whole time would.
  time=$seconds
  [ "$f" = location_table ] && time=$((seconds / 4 + 1))
  # The whole analysis takes both machines' cores in its time.
  [ "$f" = analysis ] && time=$((seconds * 2 / 3 + 1))
  [ "$f" = analysis_a64 ] && time=$((seconds / 3 + 1))
  binary=${f%_a64}
  echo "fuzz: ${binary}_fuzzer (${f}) for ${time}s"
  "$build/tests/fuzz/${binary}_fuzzer" -max_total_time="$time" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
    "$corpus/$f" 2>"$build/${f}_fuzzer.log" || { tail -50 "$build/${f}_fuzzer.log"; exit 1; }
  grep -E '^stat::number_of_executed_units' "$build/${f}_fuzzer.log" || true
done
rm -rf "$CORONER_FUZZ_SYSROOT"
