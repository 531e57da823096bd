#!/usr/bin/env bash
# The comparison with the server and the load tester on CPUs of their own, from the staged
# .devrun/ (stage.sh). Run 1 of docs/results/compare-pinned-16cpu is the defaults; run 2 was
# ROWS=rust-memory,baseline,null-engine REPEATS=2. OUT: where the report and the machine's
# description go.
set -u
D=$PWD/.devrun
OUT=${OUT:-report/compare-pinned}
ROWS=${ROWS:-rust,rust-memory,baseline}
REPEATS=${REPEATS:-3}
PHASE_S=${PHASE_S:-20}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib
{ date -u; nproc; lscpu | head -25; uname -a; head -3 /etc/os-release; ldd "$D/mmo-server"; } > "$OUT/machine.txt" 2>&1
"$D/mmo-compare" --rows "$ROWS" --phase-s "$PHASE_S" --repeats "$REPEATS" --pin --no-heaptrack --no-perf \
  --out "$OUT" --server "$D/mmo-server" --sysalloc-server "$D/mmo-server-sysalloc" --loadtest "$D/mmo-loadtest"
