#!/usr/bin/env bash
# Rounds of the comparison's raid against three rows with the load tester in the normal class
# and in SCHED_IDLE (`mmo-loadtest --sched idle`), printing the server's update latency and
# service time p99; each run's `--json` report goes to OUT/<row>-<sched>-<round>.json.
# usage: docs/results/tester-sched-idle/ab.sh OUT [ROUNDS] (from the repository root, after
# make build and cmake --build build/cpp-sysalloc --target mmo-server); SCHEDS="idle" runs one.
set -u
out=${1:?usage: ab.sh OUT [ROUNDS]}
rounds=${2:-2}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for sched in ${SCHEDS:-normal idle}; do
    for row in rust-memory baseline null-engine; do
      case $row in
        rust-memory) e=rust; bin=build/cpp/mmo-server; extra="--economy-store memory" ;;
        baseline) e=baseline; bin=build/cpp-sysalloc/mmo-server; extra="" ;;
        null-engine) e=null; bin=build/cpp/mmo-server; extra="" ;;
      esac
      f=$out/$row-$sched-$round
      MMO_SERVER_ARGS="--max-players 1064 --threads 2 $extra" timeout 300 \
        loadtest/scripts/with-server.sh --engine $e --server-bin $bin -- --scenario raid --players 1000 \
        --duration 30s --raid-every 4s --raid-objects 11000 --sched "$sched" --json "$f.json" > "$f.txt" 2>&1
      rc=$?  # 1 for the null engine: it keeps no state, so the raid's checks fail by design
      echo "$(date -u +%H:%M:%S) $round $sched $row rc=$rc $(grep -E 'server update_(latency|service)_us_p99 ' "$f.txt" | tr -s ' ' | tr '\n' ' ')"
    done
  done
done
