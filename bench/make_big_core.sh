#!/usr/bin/env bash
# make_big_core.sh DIR [THREADS HEAP_GIB MAP_GIB]
#
# The big-core benchmark's input, made once and reused: DIR/big.core, the
# core of big_core_process.py under Debian's python3 with numpy (and
# PyTorch where python3-torch is installed: `scripts/deps.sh --bench`) (200
# threads, 4 GiB of touched heap, a 96 GiB mapping barely touched: some 100
# GiB apparent, a few GiB on disk) and DIR/big.core.zst as systemd-coredump
# would store it. The kernel writes the core where core_pattern leaves it in
# the working directory; otherwise gdb does.
set -euo pipefail
dir=$(realpath -m "$1")
threads=${2:-200} heap=${3:-4} map=${4:-96}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
# The core is made again when PyTorch came or went since it was made.
variant=numpy
/usr/bin/python3 -c "import torch" 2>/dev/null && variant=numpy+torch
if [ "$(cat "$dir/variant" 2>/dev/null)" != "$variant" ]; then
  rm -f "$dir/big.core" "$dir/big.core.zst" "$dir/variant"
fi
if [ ! -s "$dir/big.core" ]; then
  /usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "make_big_core: python3-numpy is not installed" >&2; exit 1; }
  work=$(mktemp -d -p "$dir")
  trap 'rm -rf "$work"' EXIT
  . "$here/../tests/fixtures/kernel_cores.sh"
  if [ $kernel_cores = yes ]; then
    (cd "$work" && ulimit -c unlimited && timeout 600 /usr/bin/python3 "$here/big_core_process.py" "$threads" "$heap" "$map" \
      </dev/null >/dev/null 2>&1) || true
  fi
  core=$(find "$work" -maxdepth 1 -name 'core*' -type f | head -n 1)
  if [ -z "$core" ]; then
    core=$work/gdb.core
    timeout 1200 gdb -nx -batch -q -ex 'set pagination off' -ex 'handle SIGSEGV stop' -ex run \
      -ex "generate-core-file $core" --args /usr/bin/python3 "$here/big_core_process.py" "$threads" "$heap" "$map" \
      </dev/null >/dev/null 2>&1 || true
  fi
  [ -s "$core" ] || { echo "make_big_core: no core was written" >&2; exit 1; }
  mv "$core" "$dir/big.core"
  echo "$variant" >"$dir/variant"
fi
[ -s "$dir/big.core.zst" ] || zstd -q -T2 -f "$dir/big.core" -o "$dir/big.core.zst"
