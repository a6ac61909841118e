#!/usr/bin/env bash
# The epi HTML report in a real headless Chromium (Debian's chromium): it
# renders with no console output at all (no errors, no CSP violations, no
# blocked loads), its one script runs to the end, the charts are in the DOM,
# a host named <script> shows as text, and a screenshot is saved.
# A control page that does log an error must be caught, or the check proves
# nothing. Exit 77 (skipped) only when chromium is not installed.
set -euo pipefail
coroner=${CORONER_BIN:?} zoo=${CORONER_ZOO:?}
out_dir=${EPI_SCREENSHOT_DIR:-$(dirname "$coroner")/epi-screenshots}
command -v chromium > /dev/null || { echo "SKIP: chromium is not installed (make deps installs it)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

browse() {  # browse PAGE DOM_OUT LOG_OUT [SCREENSHOT]
  local extra=()
  [ -n "${4:-}" ] && extra=(--screenshot="$4" --window-size=1280,2400)
  timeout 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "${extra[@]}" --dump-dom "file://$1" \
    > "$2" 2> "$3" || fail "chromium exited $? on $1"
}

# The control: console output must show up in the log.
printf '<!DOCTYPE html><html><body><script>console.error("control-error");</script></body></html>' > "$work/control.html"
browse "$work/control.html" "$work/control.dom" "$work/control.log"
grep -q 'CONSOLE.*control-error' "$work/control.log" || fail "chromium's console log is not where this test looks"

# A fleet with a hostile host name, and the demo's planted fleet.
mkdir -p "$work/fleet"
i=0
for v in null_deref-O0 abort_assert-O0 misaligned_stack-O0; do
  for n in 1 2 3 4 5; do
    i=$((i + 1))
    ln "$zoo/cores/$v.core" "$work/fleet/$v-$n.core" 2> /dev/null || cp "$zoo/cores/$v.core" "$work/fleet/$v-$n.core"
    host='<script>document.title="owned"</script>'
    [ "$n" -gt 3 ] && host="node-$n"
    printf '{"host": "%s", "time": "2026-10-%02dT08:00:00Z", "boot_time": "2026-10-01T00:00:00Z"}' \
      "${host//\"/\\\"}" "$((1 + i % 9))" > "$work/fleet/$v-$n.core.json"
  done
done
"$coroner" scan "$work/fleet" --db "$work/hostile.db" > /dev/null
"$coroner" epi --db "$work/hostile.db" --html "$work/hostile.html" > /dev/null
"$coroner" demo --out "$work/demo" > /dev/null

mkdir -p "$out_dir"
for page in hostile demo; do
  html=$work/$page.html
  [ "$page" = demo ] && html=$work/demo/report.html
  browse "$html" "$work/$page.dom" "$work/$page.log" "$out_dir/epi-$page.png"
  if grep 'CONSOLE' "$work/$page.log"; then fail "$page: the page wrote to the console"; fi
  grep -q 'data-ready="yes"' "$work/$page.dom" || fail "$page: the report's script did not run to the end"
  grep -q '<svg class="heatmap"' "$work/$page.dom" || fail "$page: no heatmap"
  [ "$(grep -c '<svg class="daily"' "$work/$page.dom")" -ge 3 ] || fail "$page: fewer than 3 daily charts"
  grep -q '<svg class="uptime"' "$work/$page.dom" || fail "$page: no uptime histogram"
  [ "$(stat -c %s "$out_dir/epi-$page.png")" -gt 20000 ] || fail "$page: the screenshot is (nearly) empty"
done
# The hostile host name is text in the rendered DOM, and did not run.
grep -q '&lt;script&gt;document.title=' "$work/hostile.dom" || fail "the hostile host name is not shown as text"
grep -q '<title>owned' "$work/hostile.dom" && fail "the hostile host name ran as a script"
grep -q 'phys-we-03' "$work/demo.dom" || fail "the demo report does not name the bad machine"
# Findings the bad machine explains are folded under it; with the inventory,
# each cluster lists its hosts by crashes per host-day.
grep -q '<details class="explained"><summary>[0-9]* more explained by machine = phys-we-03' "$work/demo.dom" ||
  fail "the demo report does not fold what the bad machine explains"
grep -q '<table class="sortable rates">' "$work/demo.dom" || fail "the demo report has no crashes per host-day"
echo "PASS: both reports render with no console output; screenshots in $out_dir"
