#!/usr/bin/env bash
# Saves what a build prints and writes for every shipped scenario, so that a
# speed change can be shown to change no result: run it before and after,
# then `diff -r BEFORE AFTER` must print nothing.
#
#   bash benches/outputs.sh /tmp/before            # this build
#   BOUNCE=/path/to/bounce bash benches/outputs.sh /tmp/after
#
# For each scenario it keeps `bounce run --out` (every file), the printed
# report, and `bounce trace` of the base variant (first 400 entries), with
# the host-dependent lines (timings) left out.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: bash benches/outputs.sh OUTPUT_DIR}"
if [[ -z "${BOUNCE:-}" ]]; then
  cargo build --release --quiet -p bounce
  BOUNCE=./target/release/bounce
fi
rm -rf "$out"
mkdir -p "$out"
# The spinlock512 benches simulate every poll of 512 waiters (minutes
# each until spin-waits are fast-forwarded): included with SLOW=1.
scenarios=(scenarios/shipped/*.toml scenarios/shipped/cases/*.toml benches/*.toml book/scenarios/*.toml)
if [[ -z "${SLOW:-}" ]]; then
  scenarios=("${scenarios[@]/benches\/spinlock512*/}")
fi
for scenario in "${scenarios[@]}"; do
  [[ -n "$scenario" ]] || continue
  name="$(echo "$scenario" | tr '/' '_')"
  # A scenario that fails must fail the same way after the change.
  "$BOUNCE" run --quiet --out "$out/$name.out" "$scenario" > "$out/$name.run" 2> "$out/$name.err" \
    || echo "exit $?" >> "$out/$name.err"
  "$BOUNCE" trace --limit 400 "$scenario" > "$out/$name.trace" 2>> "$out/$name.err" \
    || echo "trace exit $?" >> "$out/$name.err"
done
echo "saved $(ls "$out" | wc -l) files in $out"
