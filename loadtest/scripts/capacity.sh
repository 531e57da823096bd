#!/usr/bin/env bash
# The capacity of each engine: `mmo-loadtest --find-capacity` for the steady and the raid
# scenario against a fresh server per search: the Rust engine (the production build,
# mimalloc) and the C++ baseline (the system-allocator build, glibc malloc, as the
# comparison's `baseline` row). Each search writes OUT/<engine>-<scenario>.json, its table
# (.txt) and capacity.svg under OUT/<engine>-<scenario>/.
#
#   loadtest/scripts/capacity.sh [OUT=report/capacity]
#
# Search settings come from CAPACITY_FLAGS (default: 10 s steps of 250 bots from 250, two
# bisections, round trip p99 within 2 ms, loss within 1%).
set -euo pipefail
out=${1:-report/capacity}
flags=${CAPACITY_FLAGS:---duration 10s --capacity-start 250 --capacity-step 250 --capacity-refine 2 --rtt-p99-max 2ms}
mkdir -p "$out"
status=0
for spec in "rust build/cpp/mmo-server" "baseline build/cpp-sysalloc/mmo-server"; do
  read -r engine server_bin <<<"$spec"
  for scenario in steady raid; do
    name="$engine-$scenario"
    echo "capacity: $name"
    # shellcheck disable=SC2086 # CAPACITY_FLAGS is a list of flags
    if ! loadtest/scripts/with-server.sh --engine "$engine" --server-bin "$server_bin" -- \
      --find-capacity --scenario "$scenario" $flags --json "$out/$name.json" --out-dir "$out/$name" >"$out/$name.txt" 2>&1; then
      status=1
    fi
    sed -n '/^capacity:/p' "$out/$name.txt"
  done
done
exit "$status"
