#!/usr/bin/env bash
# What durability costs, measured: the same 1,000 bots against mmo-server (Rust engine) in
# three setups, ROUNDS interleaved rounds each (default 3), on the same machine in one run:
#   steady         moves only (no economy traffic): the move round trip without economy load;
#   economy-memory moves plus about 5,000 economy operations a second (gifts, trade offers, accepts,
#                  declines), --economy-store memory: results told at once;
#   economy-durable the same with the economy durable (the default): every result told only
#                  once its change is in economy.redb (group commit, one fsync per group).
# Prints, per setup, the medians over the rounds of: move round trip p50/p99, economy round
# trip p50/p99/p99.9, economy operations per second, and the server's store groups and
# entries (how many operations shared an fsync). Reports in OUT_DIR (default report/economy).
# Usage: loadtest/scripts/economy-latency.sh [ROUNDS] [OUT_DIR]
set -euo pipefail
rounds=${1:-3}
out=${2:-report/economy}
players=${PLAYERS:-1000}
duration=${DURATION:-15s}
# A bot starts a gift or an offer every 340 ms and answers the offers it receives: 1,000 bots
# make about 5,000 economy operations a second (the figure is measured and printed).
interval_ms=${ECONOMY_INTERVAL_MS:-340}
mkdir -p "$out"
run() { # setup round
  local setup=$1 round=$2 args=()
  case $setup in
    steady) args=(--scenario steady) ;;
    economy-memory) args=(--scenario economy --economy-interval-ms "$interval_ms") ;;
    economy-durable) args=(--scenario economy --economy-interval-ms "$interval_ms") ;;
  esac
  local store=durable
  [ "$setup" = economy-memory ] && store=memory
  MMO_SERVER_ARGS="--economy-store $store" loadtest/scripts/with-server.sh -- "${args[@]}" --players "$players" \
    --duration "$duration" --quiet --json "$out/$setup-$round.json" >"$out/$setup-$round.log" 2>&1 ||
    { echo "economy-latency.sh: $setup round $round failed (see $out/$setup-$round.log)" >&2; exit 1; }
}
for round in $(seq 1 "$rounds"); do
  for setup in steady economy-memory economy-durable; do
    echo "economy-latency.sh: round $round/$rounds: $setup" >&2
    run "$setup" "$round"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print "-"; else print v[int((NR + 1) / 2)]}'; }
field() { # setup jq-expression
  for f in "$out/$1"-*.json; do jq -r "$2" "$f"; done | median
}
printf '%-16s %10s %10s %12s %12s %13s %8s %14s\n' setup move_p50_us move_p99_us economy_p50_us economy_p99_us economy_p999_us ops_per_s entries_per_fsync
for setup in steady economy-memory economy-durable; do
  if [ "$setup" = steady ]; then
    eco=("-" "-" "-" "-")
  else
    eco=("$(field "$setup" '.economy.rtt_us.p50')" "$(field "$setup" '.economy.rtt_us.p99')" "$(field "$setup" '.economy.rtt_us.p999')"
      "$(field "$setup" '(.economy.ledger.started / .measured_s) | floor')")
  fi
  per_fsync=$(field "$setup" 'if (.server_delta.engine_ledger_groups // 0) > 0 then ((.server_delta.engine_ledger_entries / .server_delta.engine_ledger_groups) * 10 | floor) / 10 else "-" end')
  printf '%-16s %10s %10s %12s %12s %13s %8s %14s\n' "$setup" "$(field "$setup" '.rtt_us.p50')" "$(field "$setup" '.rtt_us.p99')" \
    "${eco[0]}" "${eco[1]}" "${eco[2]}" "${eco[3]}" "$per_fsync"
done | tee "$out/summary.txt"
