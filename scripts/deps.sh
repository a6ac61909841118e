#!/usr/bin/env bash
# Installs the Debian packages coroner needs to build and test; with
# --bench, also what only `make bench` uses (PyTorch, for the big core).
# Idempotent: when every package is already installed it returns at once
# without touching the network.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libdw-dev libelf-dev libdebuginfod-dev libzydis-dev
  libsqlite3-dev libsystemd-dev libzstd-dev libdeflate-dev liblz4-dev liblzma-dev libcurl4-openssl-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libunwind-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  gdb elfutils debuginfod libc6-dbg clang zstd lz4 xz-utils file binutils strace
  nginx-light slurm-wlm munge sqlite3 libtomlplusplus-dev chromium fonts-dejavu-core time libjemalloc-dev
  ruby redis-server openjdk-17-jdk-headless
  python3-numpy
  qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross gdb-multiarch libcapstone-dev
)
[ "${1:-}" = --bench ] && packages+=(python3-torch)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
