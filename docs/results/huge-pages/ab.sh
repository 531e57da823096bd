#!/usr/bin/env bash
# The Rust server (the comparison's rust-memory row) without and with mimalloc's large OS pages
# (MIMALLOC_LARGE_OS_PAGES=1: mimalloc madvises its segments MADV_HUGEPAGE, and this kernel's
# transparent huge pages are in `madvise` mode), alternated, one plain and two perf runs each.
# Usage: docs/results/huge-pages/ab.sh OUT "1 2" "off on"   (from the repository root, after make build)
set -u
out_dir=${1:?out dir}
rounds=${2:-1 2}
modes=${3:-off on}
mkdir -p "$out_dir"
for round in $rounds; do
  for mode in $modes; do
    out=$out_dir/r$round-$mode
    rm -rf "$out"
    if [ "$mode" = on ]; then export MIMALLOC_LARGE_OS_PAGES=1; else unset MIMALLOC_LARGE_OS_PAGES; fi
    echo "== round $round $mode $(date +%T)"
    target/release/mmo-compare --rows rust-memory --repeats 1 --perf-repeats 2 --no-heaptrack --out "$out" > "$out.log" 2>&1
  done
done
echo "== done $(date +%T)"
