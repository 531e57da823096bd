#!/usr/bin/env bash
# Three interleaved rounds of the comparison's raid against three rows, printing the server's
# update latency and service time p99; each run's `--json` report goes to OUT.
# usage: docs/results/update-service/rounds.sh OUT   (from the repository root, after make build
# and cmake --build build/cpp-sysalloc --target mmo-server)
set -u
out=${1:?usage: rounds.sh OUT}
mkdir -p "$out"
for round in 1 2 3; do
  for row in rust-memory baseline null-engine; do
    case $row in
      rust-memory) e=rust; bin=build/cpp/mmo-server; extra="--economy-store memory" ;;
      baseline) e=baseline; bin=build/cpp-sysalloc/mmo-server; extra="" ;;
      null-engine) e=null; bin=build/cpp/mmo-server; extra="" ;;
    esac
    MMO_SERVER_ARGS="--max-players 1064 --threads 2 $extra" timeout 300 \
      loadtest/scripts/with-server.sh --engine $e --server-bin $bin -- --scenario raid --players 1000 \
      --duration 30s --raid-every 4s --raid-objects 11000 --json $out/$row-$round.json > $out/$row-$round.txt 2>&1
    rc=$?  # 1 for the null engine: it keeps no state, so the raid's checks fail by design
    echo "$(date -u +%H:%M:%S) $round $row rc=$rc $(grep -E 'server update_(latency|service)_us_p99 ' $out/$row-$round.txt | tr -s ' ' | tr '\n' ' ')"
  done
done
