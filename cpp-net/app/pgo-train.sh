#!/usr/bin/env bash
# pgo-train.sh: runs the training load of a profile-guided build (`make pgo`) against an
# instrumented mmo-server (cmake -DMMO_PGO=GENERATE), then merges the Rust core's counts into
# PROFILE_DIR/rust.profdata for the optimised builds (cmake -DMMO_PGO=USE).
#
# Why: the compiler lays out and inlines by guesses; with counts of what the server really runs
# it keeps the hot paths (the move, the area-of-interest query, the receive loop) straight and
# together and moves the rest out of the way. What it measured on the development VM (no gain
# for either engine beyond the spread of alternated runs, so it is not make compare's default):
# benches/README.md, "Profile-guided builds".
#
# What it trains on: each engine (the Rust core with its economy durable and in memory, the
# baseline) through short runs of the load tester's scenarios: steady play, raids, trade storms
# and hostile traffic. Deliberately not the comparison's own load (1,000 bots, 30 s phases,
# 11,000-object raids every 4 s): fewer bots, other raid spacing, every scenario, so the build
# is tuned to the server's work and not to the benchmark's.
#
#   cpp-net/app/pgo-train.sh INSTRUMENTED_SERVER PROFILE_DIR
#
# PROFILE_DIR must be the MMO_PGO_DIR the instrumented server was built with; its counts from
# an earlier training are removed first (counts of other code would not match). Needs
# llvm-profdata for the toolchain's LLVM (`rustup component add llvm-tools`; make deps adds it)
# and a release build of the load tester (make build).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: cpp-net/app/pgo-train.sh INSTRUMENTED_SERVER PROFILE_DIR" >&2
  exit 2
fi
server=$(readlink -f "$1")
profiles=$(readlink -f "$2")
cd "$(git rev-parse --show-toplevel)"

[ -x "$server" ] || { echo "pgo-train.sh: $server is not an executable" >&2; exit 2; }
if ! nm "$server" | grep __llvm_profile_write_file >/dev/null; then
  echo "pgo-train.sh: $server is not an instrumented build (cmake -DMMO_PGO=GENERATE)" >&2
  exit 2
fi
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "pgo-train.sh: $profdata is missing: rustup component add llvm-tools" >&2; exit 2; }

rm -rf "$profiles/cxx" "$profiles/rust" "$profiles/rust.profdata"
mkdir -p "$profiles"

# Each run is a scenario's own checks too: a training run that fails them trains nothing
# worth having, so it stops the build.
train() {
  local engine=$1 server_args=$2
  shift 2
  echo "pgo-train.sh: $engine ${server_args:+($server_args) }$*"
  MMO_SERVER_ARGS="--max-players 1024 $server_args" \
    loadtest/scripts/with-server.sh --engine "$engine" --server-bin "$server" -- --quiet "$@"
}
# The baseline keeps its economy in memory only and takes no --economy-store.
for engine in rust baseline; do
  stores=("")
  [ "$engine" = rust ] && stores=("--economy-store memory" "--economy-store durable")
  for store in "${stores[@]}"; do
    train "$engine" "$store" --scenario steady --players 400 --duration 6s
    train "$engine" "$store" --scenario raid --players 600 --duration 12s --raid-every 3s --raid-objects 11000
    train "$engine" "$store" --scenario economy --players 200 --duration 5s
    train "$engine" "$store" --scenario hostile --players 200 --duration 5s
  done
done

shopt -s nullglob
raw=("$profiles"/rust/*.profraw)
[ ${#raw[@]} -gt 0 ] || { echo "pgo-train.sh: the server left no Rust counts in $profiles/rust" >&2; exit 1; }
gcda=0
[ -d "$profiles/cxx" ] && gcda=$(find "$profiles/cxx" -name '*.gcda' | wc -l)
[ "$gcda" -gt 0 ] || { echo "pgo-train.sh: the server left no C++ counts in $profiles/cxx" >&2; exit 1; }
"$profdata" merge -o "$profiles/rust.profdata" "${raw[@]}"
echo "pgo-train.sh: ${#raw[@]} Rust count files merged into $profiles/rust.profdata; $gcda C and C++ count files"
