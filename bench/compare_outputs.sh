#!/usr/bin/env bash
# compare_outputs.sh BEFORE AFTER ZOO
# Runs two coroner binaries on the same inputs and lists every output that
# differs, byte for byte: `analyze` (text, JSON, Markdown) on each of the
# zoo's cores (both machines'), and `demo` (its text, report.json, .md and
# .html) for every scenario. A refactoring that changes no behaviour shows
# nothing. What varies from run to run (timings) is taken out first.
# Exits 1 when an output differs.
set -euo pipefail
before=$1 after=$2 zoo=$3
# Both binaries' demos take their cores from this zoo (a binary built
# elsewhere has none beside it).
export CORONER_ZOO=$zoo
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What varies from run to run: timings, and a cluster's example core (the
# first of it in the dataset's id order, which a parallel scan gives in the
# order its workers finish).
steady() {
  sed -E 's/"(analysis_ms|elapsed_ms|seconds)": ?[0-9.e+-]+/"\1": T/g; s/[0-9.]+ ?(ms|s) \(wall\)/T/g; s/scanned in [0-9.]+ s/scanned in T s/g;
          s#(Example: <code>|Example: `|"example": ")[^`"<]*#\1E#g'
}

run() {
  local bin=$1 out=$2
  mkdir -p "$out"
  for core in "$zoo"/cores/*.core "$zoo"/a64/cores/*.core; do
    local name
    name=$(echo "${core#"$zoo"/}" | tr / -)
    "$bin" analyze "$core" 2>&1 | steady > "$out/$name.txt" || true
    "$bin" analyze --json "$core" 2>&1 | steady > "$out/$name.json" || true
    "$bin" analyze --format md "$core" 2>&1 | steady > "$out/$name.md" || true
  done
  for scenario in demo gpu region exposure hardware amd training; do
    rm -rf "$work/demo"
    "$bin" demo --out "$work/demo" --scenario "$scenario" 2>&1 | steady > "$out/demo-$scenario.txt" || true
    for f in report.json report.md report.html; do
      steady < "$work/demo/$f" > "$out/demo-$scenario-$f" 2>/dev/null || echo "no $f" > "$out/demo-$scenario-$f"
    done
  done
}

run "$before" "$work/before"
run "$after" "$work/after"
n=$(ls "$work/before" | wc -l)
if diff -rq "$work/before" "$work/after" > "$work/differ"; then
  echo "compare_outputs: $n outputs, all identical"
else
  echo "compare_outputs: $(wc -l < "$work/differ") of $n outputs differ:"
  cat "$work/differ"
  diff -r "$work/before" "$work/after" | head -40
  exit 1
fi
