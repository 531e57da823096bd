#!/usr/bin/env bash
# Prints the scaling table (summary.md) from the runs' compare.json files: per I/O worker
# count, each figure as run 1 / run 2, the Rust core (rust-memory) then the baseline.
set -euo pipefail
cd "$(dirname "$0")"
fig() { # run threads row jq-path
  jq -r --arg r "$3" ".engines[\$r] | $4" "$1/threads-$2/compare.json"
}
pair() { echo "$(fig run1 "$1" "$2" "$3") / $(fig run2 "$1" "$2" "$3")"; }
echo "| I/O workers | engine | update p99 steady, µs | update p99 raid, µs | update p99.9 raid, µs | move round trip p99 during raids, µs | CPU per update steady / raid, µs | moves that waited on a grid lock, raid | grid-lock wait per update, raid, ns |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in 1 2 4 8; do
  for row in rust-memory baseline; do
    echo "| $t | $row | $(pair $t $row .update_latency_us.p99) | $(pair $t $row .update_latency_us_raid.p99) | $(pair $t $row .update_latency_us_raid.p999) | $(pair $t $row .rtt_us_during_raid.p99) | $(pair $t $row '(.cpu_ns_per_update/1000*10|round/10)') ; $(pair $t $row '(.cpu_ns_per_update_raid/1000*10|round/10)') | $(pair $t $row '(.lock_waits.raid.grid.moves_waited_fraction*10000|round/10000)') | $(pair $t $row '(.lock_waits.raid.grid.wait_ns_per_update*10|round/10)') |"
  done
done
