#!/usr/bin/env bash
# Stages what the pinned comparison needs on a machine with no toolchain and none of the
# server's Debian libraries: the release binaries (stripped) and the shared libraries they
# load, in .devrun/ (ignored by git). Needs both server builds, build/cpp and build/cpp-sysalloc:
# run it after `make compare` or `make capacity` (each builds both; `make build` only the first).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf .devrun && mkdir -p .devrun/lib
strip -o .devrun/mmo-server build/cpp/mmo-server
strip -o .devrun/mmo-server-sysalloc build/cpp-sysalloc/mmo-server
strip -o .devrun/mmo-loadtest target/release/mmo-loadtest
strip -o .devrun/mmo-compare target/release/mmo-compare
for lib in libmimalloc.so.2 libcivetweb.so.1 libsodium.so.23 libtomlplusplus.so.3 libstdc++.so.6 libgcc_s.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" .devrun/lib/
done
cp docs/results/compare-pinned-16cpu/run.sh .devrun/
du -sh .devrun
