#!/usr/bin/env bash
# Rounds of the comparison's raid against one engine, with the workers at each scheduler slice
# in SLICES (`--worker-slice-us`, 0: the kernel's default), recording 8 s of the scheduler's
# events in the middle of each run (`perf sched record`, from 14 s in) and writing
# `perf sched timehist`'s table beside each run's `--json` report: OUT/<engine>-s<slice>-<round>.
# usage: docs/results/worker-slice/run.sh OUT ROUNDS "SLICES" rust|baseline (from the
# repository root, as root, after make build and cmake --build build/cpp-sysalloc --target
# mmo-server); then sched_delays.py OUT/*.timehist.
set -u
out=${1:?usage: run.sh OUT ROUNDS SLICES ENGINE}
rounds=${2:-2}
slices=${3:-0 100}
engine=${4:-rust}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for slice in $slices; do
    case $engine in
      rust) bin=build/cpp/mmo-server; extra="--economy-store memory" ;;
      baseline) bin=build/cpp-sysalloc/mmo-server; extra="" ;;
    esac
    f=$out/$engine-s$slice-$round
    MMO_SERVER_ARGS="--max-players 1064 --threads 2 --worker-slice-us $slice $extra" timeout 300 \
      loadtest/scripts/with-server.sh --engine "$engine" --server-bin $bin -- --scenario raid --players 1000 \
      --duration 30s --raid-every 4s --raid-objects 11000 --sched idle --json "$f.json" > "$f.txt" 2>&1 &
    sleep 14
    perf sched record -q -o "$f.perf" -- sleep 8 > /dev/null 2>&1
    wait
    perf sched timehist -i "$f.perf" > "$f.timehist" 2>/dev/null
    rm -f "$f.perf"
    echo "$(date -u +%H:%M:%S) $round s$slice $engine"
  done
done
