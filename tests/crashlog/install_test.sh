#!/usr/bin/env bash
# install_test.sh BUILD_DIR: `make install PREFIX=DIR` gives the header, both
# libraries and coroner-crashlog.pc, and a program built from them with
# pkg-config alone logs its crash.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$prefix" > /dev/null
for f in include/coroner/crashlog.h lib/libcoroner_crashlog.a lib/libcoroner_crashlog.so lib/pkgconfig/coroner-crashlog.pc bin/coroner; do
  [ -e "$prefix/$f" ] || fail "make install did not install $f"
done
cat > "$prefix/prog.c" <<'C'
#include <coroner/crashlog.h>
int main(void) {
  coroner_crashlog_options o = {-1, "crash.log"};
  if (coroner_crashlog_install(&o) != 0) return 2;
  return *(volatile int*)0;
}
C
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cd "$prefix"
[ "$(realpath "$(pkg-config --variable=prefix coroner-crashlog)")" = "$(realpath "$prefix")" ] ||
  fail "pkg-config does not find the prefix: $(pkg-config --variable=prefix coroner-crashlog)"
# shellcheck disable=SC2046
cc -o prog-shared prog.c $(pkg-config --cflags --libs coroner-crashlog)
# shellcheck disable=SC2046
cc -o prog-static prog.c $(pkg-config --cflags coroner-crashlog) -L"$prefix/lib" -l:libcoroner_crashlog.a -lpthread -ldl
for p in prog-shared prog-static; do
  rm -f crash.log
  status=0
  (ulimit -c 0; LD_LIBRARY_PATH=$prefix/lib "./$p") 2> /dev/null || status=$?
  [ "$status" -eq 139 ] || fail "$p exited $status, not by SIGSEGV"
  [ "$(grep -c '^coroner-crash: v=1 .* sig=11 code=1 addr=0x0 ' crash.log)" -eq 1 ] || fail "$p wrote no crash line"
done
echo "PASS: installed files, pkg-config, and a crash line from both libraries"
