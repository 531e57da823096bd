#!/usr/bin/env bash
# Two server builds against each other on the same machine, pinned (server CPUs 0-7, tester
# 8-15), alternating old, new, old, new (ROUNDS pairs, default 2; about 155 s a pair):
# `mmo-compare --rows rust-memory,baseline` with one plain run of PHASE_S seconds per phase,
# the same load tester and mmo-compare for both. From the staged .devrun/ (stage.sh) plus the
# older build's two servers, stripped, as mmo-server-old and mmo-server-sysalloc-old. Each report's main table goes to $OUT/ab-<build>-<round>.md.
set -u
D=$PWD/.devrun
OUT=${OUT:-report/compare-ab}
PHASE_S=${PHASE_S:-15}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib
{ date -u; nproc; lscpu | head -25; uname -a; head -3 /etc/os-release; } > "$OUT/machine.txt" 2>&1
for round in $(seq 1 "$ROUNDS"); do
  for build in old new; do
    suffix=$([ "$build" = old ] && echo -old || true)
    echo "== round $round, $build build, $(date -u +%T)"
    "$D/mmo-compare" --rows rust-memory,baseline --phase-s "$PHASE_S" --repeats 1 --pin --no-heaptrack --no-perf \
      --out "/tmp/ab-$build-$round" --server "$D/mmo-server$suffix" --sysalloc-server "$D/mmo-server-sysalloc$suffix" \
      --loadtest "$D/mmo-loadtest" > "/tmp/ab-$build-$round.log" 2>&1 || echo "mmo-compare failed: see /tmp/ab-$build-$round.log"
    sed -n '/^| figure/,/^$/p' "/tmp/ab-$build-$round/compare.md" > "$OUT/ab-$build-$round.md"
  done
done
date -u >> "$OUT/machine.txt"
