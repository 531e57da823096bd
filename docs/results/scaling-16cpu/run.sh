#!/usr/bin/env bash
# The engines as the server's I/O workers grow (1, 2, 4, 8), the server on CPUs 0-7 and the
# load tester on 8-15, from the staged .devrun/ (docs/results/compare-pinned-16cpu/stage.sh).
# One mmo-compare per worker count: rust-memory and baseline, PLAYERS bots (default 2,000),
# one plain steady and one plain raid run each of PHASE_S seconds. OUT: where the reports go
# (threads-N/ per count) and the machine's description.
set -u
D=$PWD/.devrun
OUT=${OUT:-report/scaling}
PLAYERS=${PLAYERS:-2000}
PHASE_S=${PHASE_S:-12}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib
{ date -u; nproc; lscpu | head -25; uname -a; head -3 /etc/os-release; } > "$OUT/machine.txt" 2>&1
for threads in ${THREADS:-1 2 4 8}; do
  echo "== $threads I/O workers, $(date -u +%T)"
  "$D/mmo-compare" --rows rust-memory,baseline --players "$PLAYERS" --phase-s "$PHASE_S" --repeats 1 --pin \
    --server-threads "$threads" --no-heaptrack --no-perf --out "$OUT/threads-$threads" \
    --server "$D/mmo-server" --sysalloc-server "$D/mmo-server-sysalloc" --loadtest "$D/mmo-loadtest" 2>&1 | tail -3
done
date -u >> "$OUT/machine.txt"
