#!/usr/bin/env bash
# Interleaved rounds (output: runs.txt when redirected there) of the 1,000-bot raid for four server builds; the memory report of each.
cd "$(git rev-parse --show-toplevel)"
for round in 1 2 3; do
  for row in rust-mimalloc rust-glibc baseline-glibc baseline-mimalloc; do
    case $row in
      rust-mimalloc) a=(--engine rust --server-bin build/cpp/mmo-server); extra="--economy-store memory" ;;
      rust-glibc) a=(--engine rust --server-bin build/cpp-sysalloc/mmo-server); extra="--economy-store memory" ;;
      baseline-glibc) a=(--engine baseline --server-bin build/cpp-sysalloc/mmo-server); extra="" ;;
      baseline-mimalloc) a=(--engine baseline --server-bin build/cpp-sysalloc/mmo-server --preload /usr/lib/x86_64-linux-gnu/libmimalloc.so.2); extra="" ;;
    esac
    echo "== $row round $round $(date -u +%H:%M:%S)"
    MMO_SERVER_ARGS="--max-players 1064 $extra" loadtest/scripts/with-server.sh "${a[@]}" --memory-report -- --scenario raid --players 1000 --duration 20s --raid-every 4s --raid-objects 11000 --quiet 2>&1 | grep "with-server.sh: memory"
  done
done
