#!/usr/bin/env bash
# Repeatable speed figures: instructions per simulated memory operation,
# counted by callgrind (the same on a loaded or an idle machine), for the
# benchmark scenarios with their iterations cut so that each takes well
# under a minute under valgrind. Record the output in benches/FIGURES.md
# with each change that affects speed.
#
#   bash benches/callgrind.sh                 # all scenarios, this build
#   bash benches/callgrind.sh hits512         # some of them
#   BOUNCE=/path/to/bounce bash benches/callgrind.sh   # another build, no cargo
#
# The count includes loading and building the scenario, setting up the
# CPUs, and the results and report (a few million instructions), so the
# per-op figure of a short run is high. The last column leaves that out:
# each scenario runs a second time with 1 iteration, and the difference of
# the two counts is divided by the difference of their memory operations
# (what each op beyond the first iteration costs, as in a long run).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BOUNCE:-}" ]]; then
  cargo build --release --quiet
  BOUNCE=./target/release/bounce
fi
# name and measured iterations per CPU under callgrind
declare -A iterations=(
  [hits]=100 [contended]=100
  [hits512]=20 [contended512]=40 [false-sharing512]=40 [sctp36-standin]=200
)
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  names=(hits contended hits512 contended512 false-sharing512 sctp36-standin)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '%-18s %14s %12s %10s %16s %18s %22s\n' scenario instructions memory_ops events \
  instructions/op instructions/event after-1st-iteration/op
# Runs scenario "$1" under callgrind with "$2" iterations; sets
# `instructions`, `ops` and `events`.
measure() {
  sed "s/^iterations = .*/iterations = $2/" "benches/$1.toml" > "$tmp/$1.toml"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" \
    "$BOUNCE" run "$tmp/$1.toml" --host-stats > /dev/null 2> "$tmp/$1.err"
  instructions=$(grep -Eo 'Collected : [0-9]+' "$tmp/$1.err" | grep -Eo '[0-9]+')
  ops=$(grep -Eo '[0-9]+ memory ops' "$tmp/$1.err" | grep -Eo '[0-9]+' | head -1)
  events=$(grep -Eo '[0-9]+ events' "$tmp/$1.err" | grep -Eo '[0-9]+' | head -1)
  rm -f "$tmp/cg.$1"
}
for name in "${names[@]}"; do
  measure "$name" 1
  read -r first_instructions first_ops <<< "$instructions $ops"
  measure "$name" "${iterations[$name]}"
  printf '%-18s %14s %12s %10s %16s %18s %22s\n' "$name" "$instructions" "$ops" "$events" \
    "$((instructions / ops))" "$((instructions / (events > 0 ? events : 1)))" \
    "$(((instructions - first_instructions) / (ops > first_ops ? ops - first_ops : 1)))"
done
