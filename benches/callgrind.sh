#!/usr/bin/env bash
# Repeatable speed figures: instructions per simulated memory operation,
# counted by callgrind (the same on a loaded or an idle machine), for the
# benchmark scenarios at 100 iterations. Record the output in
# benches/FIGURES.md with each change that affects speed.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '%-12s %14s %12s %18s\n' scenario instructions memory_ops instructions/op
for name in hits contended; do
  sed 's/^iterations = .*/iterations = 100/' "benches/$name.toml" > "$tmp/$name.toml"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$name" \
    ./target/release/bounce run "$tmp/$name.toml" --host-stats > /dev/null 2> "$tmp/$name.err"
  instructions=$(grep -Eo 'Collected : [0-9]+' "$tmp/$name.err" | grep -Eo '[0-9]+')
  ops=$(grep -Eo '[0-9]+ memory ops' "$tmp/$name.err" | grep -Eo '[0-9]+' | head -1)
  printf '%-12s %14s %12s %18s\n' "$name" "$instructions" "$ops" "$((instructions / ops))"
done
