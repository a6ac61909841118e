#!/usr/bin/env bash
# make_python_cores.sh OUT
#
# Cores of real CPython interpreters running crash_scenario.py: Debian's
# python3.11 (no debug information) and every CPython 3.11+ that pyenv has
# installed on this machine (the machine image may carry some; none is
# required). Each run also writes the interpreter's own view of its threads
# just before the crash (OUT/expected/NAME.json), which the tests compare
# with what coroner reads from the core. Incremental: a core is made again
# only when its expectation is missing. Each core is also kept as .zst.
#
# The kernel's core is used when core_pattern leaves it in the working
# directory; otherwise gdb runs the script and writes the core at the fault.
set -euo pipefail
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/cores" "$out/expected"
manifest=$out/manifest.tsv.tmp
printf '#name\tinterpreter\tcore\texpected\twriter\n' >"$manifest"

. "$here/../fixtures/kernel_cores.sh"

interpreters=()
[ -x /usr/bin/python3.11 ] && interpreters+=(/usr/bin/python3.11)
for dir in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*; do
  [ -d "$dir" ] || continue
  minor=$(basename "$dir" | cut -d. -f2)
  [[ "$minor" =~ ^[0-9]+$ ]] && [ "$minor" -ge 11 ] || continue
  [ -x "$dir/bin/python3.$minor" ] && interpreters+=("$dir/bin/python3.$minor")
done

for py in "${interpreters[@]}"; do
  case $py in
    /usr/bin/*) name=debian-$(basename "$py") ;;
    *) name=pyenv-$(basename "$(dirname "$(dirname "$py")")") ;;
  esac
  expected=$out/expected/$name.json
  if [ ! -s "$expected" ]; then
    work=$(mktemp -d)
    writer=kernel
    if [ $kernel_cores = yes ]; then
      (cd "$work" && ulimit -c unlimited && timeout 120 "$py" "$here/crash_scenario.py" "$expected" \
        </dev/null >"$work/out.log" 2>&1) || true
    fi
    core=$(find "$work" -maxdepth 1 -name 'core*' -type f | head -n 1)
    if [ -z "$core" ] || [ ! -s "$core" ]; then
      writer=gdb
      core=$work/gdb.core
      timeout 300 gdb -nx -batch -q -ex 'set pagination off' -ex run -ex "generate-core-file $core" \
        --args "$py" "$here/crash_scenario.py" "$expected" </dev/null >"$work/gdb.log" 2>&1 || true
    fi
    if [ -s "$core" ] && [ -s "$expected" ]; then
      mv "$core" "$out/cores/$name.core"
      echo $writer >"$out/cores/$name.writer"
    else
      echo "python cores: $name made no core" >&2
      rm -f "$expected"
    fi
    rm -rf "$work"
  fi
  if [ -s "$expected" ]; then
    # As systemd-coredump stores them, for the compressed-core test.
    [ -s "$out/cores/$name.core.zst" ] || zstd -q -f "$out/cores/$name.core" -o "$out/cores/$name.core.zst"
    writer=$(cat "$out/cores/$name.writer" 2>/dev/null || echo unknown)
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$py" "$out/cores/$name.core" "$expected" "$writer" >>"$manifest"
  fi
done
mv "$manifest" "$out/manifest.tsv"
