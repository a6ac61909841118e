#!/usr/bin/env bash
# demo.sh CORONER ZOO: analyze the crash zoo's real cores.
set -euo pipefail
coroner=$1 zoo=$2
out=out/demo
mkdir -p "$out"
echo "== coroner analyze on a NULL dereference (text summary)"
"$coroner" analyze "$zoo/cores/null_deref-O0.core"
echo "== a handler that re-raised SIGSEGV: the core's signal is the re-raise (SI_TKILL)"
"$coroner" analyze "$zoo/cores/reraise-O0.core" | sed -n '1,8p'
echo "== a zstd-compressed core, decoded as a stream"
"$coroner" analyze "$zoo/cores/null_deref-O0.core.zst" | sed -n '1,6p'
echo "== the whole zoo as NDJSON, one object per core"
"$coroner" analyze --json "$zoo"/cores/*.core > "$out/zoo.ndjson"
printf '%-28s %-8s %-12s %-14s %s\n' core signal code fault_address threads
while IFS= read -r line; do
  name=$(grep -o '"path":"[^"]*"' <<<"$line" | head -1 | sed 's/.*\///; s/\.core"//')
  sig=$(grep -o '"name":"SIG[A-Z0-9]*"' <<<"$line" | head -1 | cut -d'"' -f4)
  code=$(grep -o '"code_name":"[A-Z_]*"' <<<"$line" | head -1 | cut -d'"' -f4)
  addr=$(grep -o '"fault_address":[^,]*' <<<"$line" | head -1 | cut -d: -f2 | tr -d '"')
  threads=$(grep -o '"tid":' <<<"$line" | wc -l)
  printf '%-28s %-8s %-12s %-14s %s\n' "$name" "$sig" "$code" "$addr" "$threads"
done < "$out/zoo.ndjson"
echo
echo "demo: $(wc -l < "$out/zoo.ndjson") cores analyzed; the JSON is in $out/zoo.ndjson"
echo
echo "== the epidemiology of a seeded fleet of real zoo cores with planted causes"
CORONER_ZOO=$zoo "$coroner" demo --out "$out/epi"
echo
echo "== a training fleet: multi-node jobs whose ranks crash together, one incident each"
CORONER_ZOO=$zoo "$coroner" demo --out "$out/training" --scenario training | sed -n '/^incidents/,/^hardware verdicts/p'
