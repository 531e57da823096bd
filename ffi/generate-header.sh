#!/usr/bin/env bash
# Generates the C header from the Rust ABI: cbindgen 0.29.4, then rustdoc's intra-doc link
# syntax rendered as plain code spans ("[`MmoStatus`]" -> "`MmoStatus`",
# "[`Counter`](crate::stats::Counter)" -> "`Counter`"), which C readers cannot follow.
# Usage: ffi/generate-header.sh OUTPUT (run from the repository root).
set -euo pipefail
out=${1:?usage: ffi/generate-header.sh OUTPUT}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cbindgen --quiet --config ffi/cbindgen.toml --crate mmo-ffi --output "$tmp"
sed -E 's/\[(`[^]`]+`)\](\([^)]*\))?/\1/g' "$tmp" > "$out"
