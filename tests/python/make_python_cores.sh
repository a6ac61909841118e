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
printf '#name\tinterpreter\tcore\texpected\twriter\tsysroot\n' >"$manifest"

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
    printf '%s\t%s\t%s\t%s\t%s\t-\n' "$name" "$py" "$out/cores/$name.core" "$expected" "$writer" >>"$manifest"
  fi
done

# An aarch64 CPython: Debian's python3.11 for arm64. Its packages are
# fetched from the Debian archive into OUT/aarch64 with an apt
# configuration of their own (this machine gets no foreign dpkg
# architecture), unpacked into a tree, and run under qemu-user with that
# tree as its root: the guest sees /usr/bin/python3.11 and its own
# /usr/lib/python3.11. qemu writes the guest's core. Where qemu-user or the
# archive is missing, OUT/aarch64.skipped says why and the tests skip it.
a64=$out/aarch64
root=$a64/root
name=debian-python3.11-aarch64
expected=$out/expected/$name.json
rm -f "$out/aarch64.skipped"
fetch_aarch64_python() {
  [ -x "$root/usr/bin/python3.11" ] && return 0
  command -v qemu-aarch64 >/dev/null || { echo "qemu-user is not installed" >"$out/aarch64.skipped"; return 1; }
  rm -rf "$a64"
  mkdir -p "$a64/lists/partial" "$a64/cache/archives/partial" "$a64/debs" "$root"
  echo "deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
    >"$a64/sources.list"
  local apt=(-o Dir::Etc::SourceList="$a64/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$a64/lists" -o Dir::Cache="$a64/cache" -o APT::Architecture=arm64
    -o APT::Architectures::=arm64 -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
  if ! apt-get "${apt[@]}" -qq update >"$a64/apt.log" 2>&1 ||
    ! (cd "$a64/debs" && apt-get "${apt[@]}" -qq download python3.11-minimal libpython3.11-minimal \
      libpython3.11-stdlib libc6 libffi8 libssl3 zlib1g libexpat1 >>"$a64/apt.log" 2>&1); then
    echo "the Debian archive's arm64 packages could not be fetched: $(tail -n 1 "$a64/apt.log")" >"$out/aarch64.skipped"
    return 1
  fi
  for deb in "$a64"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
}
if [ ! -s "$expected" ] && fetch_aarch64_python; then
  work=$(mktemp -d)
  (cd "$work" && ulimit -c unlimited && timeout 300 qemu-aarch64 -L "$root" -E PYTHONHOME=/usr -0 /usr/bin/python3.11 \
    "$root/usr/bin/python3.11" "$here/crash_scenario.py" "$expected" </dev/null >"$work/out.log" 2>&1) || true
  core=$(find "$work" -maxdepth 1 -name 'qemu_*.core' -type f | head -n 1)
  if [ -n "$core" ] && [ -s "$core" ] && [ -s "$expected" ]; then
    mv "$core" "$out/cores/$name.core"
    echo qemu >"$out/cores/$name.writer"
  else
    echo "python cores: $name made no core" >&2
    echo "qemu-user made no core of the aarch64 python3.11" >"$out/aarch64.skipped"
    rm -f "$expected"
  fi
  rm -rf "$work"
fi
if [ -s "$expected" ]; then
  [ -s "$out/cores/$name.core.zst" ] || zstd -q -f "$out/cores/$name.core" -o "$out/cores/$name.core.zst"
  printf '%s\t%s\t%s\t%s\tqemu\t%s\n' "$name" "$root/usr/bin/python3.11" "$out/cores/$name.core" "$expected" "$root" \
    >>"$manifest"
fi
mv "$manifest" "$out/manifest.tsv"
