#!/usr/bin/env bash
# The comparison with the server and the load tester on CPUs of their own, from the staged
# .devrun/ (stage.sh). Run 1 of docs/results/compare-pinned-16cpu; run 2 was the same
# command with `--rows rust-memory,baseline,null-engine --repeats 2`. OUT: where the report
# and the machine's description go.
set -u
D=$PWD/.devrun
OUT=${OUT:-report/compare-pinned}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/lib
{ date -u; nproc; lscpu | head -25; uname -a; head -3 /etc/os-release; ldd "$D/mmo-server"; } > "$OUT/machine.txt" 2>&1
"$D/mmo-compare" --rows rust,rust-memory,baseline --phase-s 20 --repeats 3 --pin --no-heaptrack --no-perf \
  --out "$OUT" --server "$D/mmo-server" --sysalloc-server "$D/mmo-server-sysalloc" --loadtest "$D/mmo-loadtest"
