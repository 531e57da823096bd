#!/usr/bin/env bash
# Rounds of the comparison's raid against three rows (tester-sched-idle/ab.sh, tester in
# SCHED_IDLE), alternately with the idle vCPUs halting (off) and polling (on: hold.py 0 holds
# /dev/cpu_dma_latency for the round). Reports in OUT/<off|on>-<round>/<row>-idle-1.json (kept
# here as <off|on>-<round>-<row>.json).
# usage: docs/results/worker-slice/cpu-dma-latency/ab.sh OUT ROUNDS (from the repository root, as root)
set -u
out=${1:?usage: ab.sh OUT ROUNDS}
here=$(dirname "$0")
for round in $(seq 1 "${2:-2}"); do
  for mode in off on; do
    if [ $mode = on ]; then python3 "$here/hold.py" 0 & holder=$!; sleep 0.5; fi
    SCHEDS=idle docs/results/tester-sched-idle/ab.sh "$out/$mode-$round" 1 | sed "s/^/$mode /"
    if [ $mode = on ]; then kill $holder; wait $holder 2>/dev/null; fi
  done
done
