#!/usr/bin/env bash
# What the durable store's commit linger buys and costs, measured: 1,000 bots against mmo-server
# (Rust engine, economy durable) playing the economy scenario at two rates, a trickle (one
# operation per bot every 3.4 s: about 500 a second, like a raid's loot claims and trades) and
# the 5,000 a second of `make economy-latency`, each with every linger in LINGERS_US (default
# "0 1000 3000"), ROUNDS interleaved rounds (default 3).
# Prints, per (rate, linger), the medians over the rounds of: economy round trip p50/p99/p99.9,
# operations per second, entries per commit (one fsync each), and the committer thread's CPU
# per entry (user + system, read from /proc while the server runs: the whole run's, joins and
# warm-up included, over the measured phase's entries, so compare rows rather than read it as
# an absolute cost). Reports in OUT_DIR
# (default report/commit-linger).
# Usage: loadtest/scripts/commit-linger.sh [ROUNDS] [OUT_DIR]
set -euo pipefail
rounds=${1:-3}
out=${2:-report/commit-linger}
players=${PLAYERS:-1000}
duration=${DURATION:-15s}
lingers=${LINGERS_US:-0 1000 3000}
declare -A interval_ms=([trickle]=3400 [5000-per-s]=340)
ticks_per_s=$(getconf CLK_TCK)
mkdir -p "$out"

# Follows the newest mmo-server's committer thread and keeps its CPU ticks (user + system) in
# $1 until the server exits (the last reading is the whole run's).
sample_committer() {
  local file=$1 pid="" ticks
  for _ in $(seq 1 100); do
    pid=$(pgrep -n -x mmo-server || true)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] || return 0
  while kill -0 "$pid" 2>/dev/null; do
    for task in /proc/"$pid"/task/*; do
      if [ "$(cat "$task/comm" 2>/dev/null)" = mmo-economy-com ]; then
        ticks=$(awk '{print $14 + $15}' "$task/stat" 2>/dev/null) && echo "$ticks" >"$file"
      fi
    done
    sleep 0.2
  done
}

run() { # rate linger round
  local rate=$1 linger=$2 round=$3 name="$1-linger$2-$3"
  rm -f "$out/$name.ticks"
  sample_committer "$out/$name.ticks" &
  local sampler=$!
  MMO_SERVER_ARGS="--economy-store durable --economy-commit-linger-us $linger" loadtest/scripts/with-server.sh -- \
    --scenario economy --economy-interval-ms "${interval_ms[$rate]}" --players "$players" --duration "$duration" --quiet \
    --json "$out/$name.json" >"$out/$name.log" 2>&1 ||
    { echo "commit-linger.sh: $name failed (see $out/$name.log)" >&2; exit 1; }
  wait "$sampler" || true
}
for round in $(seq 1 "$rounds"); do
  for rate in trickle 5000-per-s; do
    for linger in $lingers; do
      echo "commit-linger.sh: round $round/$rounds: $rate, linger $linger us" >&2
      run "$rate" "$linger" "$round"
    done
  done
done
median() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print "-"; else print v[int((NR + 1) / 2)]}'; }
field() { # rate linger jq-expression
  for f in "$out/$1-linger$2"-*.json; do jq -r "$3" "$f"; done | median
}
committer_us_per_entry() { # rate linger
  for f in "$out/$1-linger$2"-*.json; do
    local ticks entries
    ticks=$(cat "${f%.json}.ticks" 2>/dev/null || echo 0)
    entries=$(jq -r '.server_delta.engine_ledger_entries // 0' "$f")
    [ "$entries" -gt 0 ] && echo "$ticks $entries $ticks_per_s" | awk '{printf "%.1f\n", $1 / $3 * 1e6 / $2}'
  done | median
}
printf '%-11s %9s %14s %14s %15s %9s %17s %22s\n' rate linger_us economy_p50_us economy_p99_us economy_p999_us ops_per_s entries_per_commit committer_cpu_us_per_entry
for rate in trickle 5000-per-s; do
  for linger in $lingers; do
    printf '%-11s %9s %14s %14s %15s %9s %17s %22s\n' "$rate" "$linger" \
      "$(field "$rate" "$linger" '.economy.rtt_us.p50')" "$(field "$rate" "$linger" '.economy.rtt_us.p99')" \
      "$(field "$rate" "$linger" '.economy.rtt_us.p999')" "$(field "$rate" "$linger" '(.economy.ledger.started / .measured_s) | floor')" \
      "$(field "$rate" "$linger" 'if (.server_delta.engine_ledger_groups // 0) > 0 then ((.server_delta.engine_ledger_entries / .server_delta.engine_ledger_groups) * 10 | floor) / 10 else "-" end')" \
      "$(committer_us_per_entry "$rate" "$linger")"
  done
done | tee "$out/summary.txt"
