#!/usr/bin/env bash
# Regenerates what mmo-server's settings table writes into the repository: the example file
# (mmo.example.toml, from `mmo-server --print-config`) and the README's flags table (between
# its flags-table markers, from `mmo-server --print-flags-table`). server_operations_test
# fails when either is stale. Usage: cpp-net/app/settings-docs.sh BUILT_SERVER (from the root).
set -euo pipefail
server=${1:?usage: cpp-net/app/settings-docs.sh path/to/mmo-server}
"$server" --print-config > mmo.example.toml
table=$(mktemp)
trap 'rm -f "$table"' EXIT
"$server" --print-flags-table > "$table"
awk -v table="$table" '
  /<!-- flags-table start/ { print; while ((getline line < table) > 0) print line; skipping = 1; next }
  /<!-- flags-table end/ { skipping = 0 }
  !skipping { print }
' README.md > README.md.new
mv README.md.new README.md
