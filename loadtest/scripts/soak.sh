#!/usr/bin/env bash
# The soak: mmo-server (Rust engine, system-allocator build, under heaptrack) under steady play,
# raid bursts and an economy storm at once for DURATION, its resident memory sampled every
# SAMPLE_S seconds. At the end: RSS after warm-up and at the end, growth per hour, the server's
# final counters, and the bytes heaptrack found still allocated at exit.
#
#   loadtest/scripts/soak.sh [DURATION_S=3600] [OUT_DIR=report/soak]
#
# Writes OUT_DIR/rss.csv (seconds, rss_kb), OUT_DIR/summary.txt, the load testers' JSON
# reports, the server's log and its heaptrack trace. Exit status: non-zero if a load tester's
# checks fail, the server does not stop cleanly, RSS grows by 1% or more after warm-up, or any
# byte outside soak-leaks.supp is still allocated at exit.
set -euo pipefail
duration_s=${1:-3600}
out=${2:-report/soak}
sample_s=${SOAK_SAMPLE_S:-10}
# Warm-up: the first raid allocates the raid arena, the economy's wallets fill, the allocators
# reach their working set. A sixth of the run, at most 10 minutes.
warmup_s=${SOAK_WARMUP_S:-$(( duration_s / 6 > 600 ? 600 : duration_s / 6 ))}
suppressions="$(dirname "$0")/soak-leaks.supp"
server_bin=${SOAK_SERVER:-build/cpp-sysalloc/mmo-server}
admin_key=0x50a650a6
mkdir -p "$out"
rm -f "$out"/heaptrack.*
# A copy of the load tester, so rebuilding the workspace during an hour-long soak cannot
# swap the binary under it.
loadtest_bin="$out/mmo-loadtest"
cp target/release/mmo-loadtest "$loadtest_bin"

# Connect tokens: a key pair for this soak (the load tester mints with the private half).
rm -rf "$out/keys"
target/release/mmo-token keygen --out-dir "$out/keys" --name token >/dev/null
log="$out/server.log"
heaptrack -o "$out/heaptrack" "$server_bin" --port 0 --engine rust --admin-key "$admin_key" --stats-interval-s 60 \
  --max-players 2048 --token-public-key "$out/keys/token.pub" --data-dir "$out/data" --spawn-points "$("$loadtest_bin" --print-spawn-points)" >"$log" 2>&1 &
wrapper_pid=$!
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/^mmo-server: listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "soak: mmo-server did not start" >&2; cat "$log" >&2; exit 1; }
server_pid=$(pgrep -n -f "^$server_bin --port 0 --engine rust --admin-key $admin_key")
echo "soak: mmo-server pid $server_pid on port $port for ${duration_s} s (RSS every ${sample_s} s, warm-up ${warmup_s} s)"

# The load: 600 players in raids (11,000-object bursts every 10 s), 400 players trading.
common=(--server "127.0.0.1:$port" --admin-key "$admin_key" --token-secret-key "$out/keys/token.secret" --quiet --warmup 5s)
"$loadtest_bin" "${common[@]}" --scenario raid --players 600 --duration "${duration_s}s" --raid-every 10s --raid-objects 11000 \
  --json "$out/raid.json" >"$out/raid.log" 2>&1 &
raid_pid=$!
"$loadtest_bin" "${common[@]}" --scenario economy --players 400 --duration "${duration_s}s" --seed 7 \
  --json "$out/economy.json" >"$out/economy.log" 2>&1 &
economy_pid=$!

echo "seconds,rss_kb" >"$out/rss.csv"
start=$(date +%s)
while kill -0 "$raid_pid" 2>/dev/null || kill -0 "$economy_pid" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo "")
  [ -n "$rss" ] && echo "$now,$rss" >>"$out/rss.csv"
  sleep "$sample_s"
done
status=0
wait "$raid_pid" || { echo "soak: the raid load's checks failed (see $out/raid.log)" >&2; status=1; }
wait "$economy_pid" || { echo "soak: the economy load's checks failed (see $out/economy.log)" >&2; status=1; }

kill -TERM "$server_pid"
wait "$wrapper_pid" || true
grep -q "^mmo-server: final uptime" "$log" || { echo "soak: the server did not stop cleanly" >&2; status=1; }
trace=$(ls "$out"/heaptrack.* 2>/dev/null | head -1)
heaptrack_print -f "$trace" --suppressions "$suppressions" --print-suppressions 1 --print-leaks 1 --print-peaks 0 \
  --print-allocators 0 --print-temporary 0 >"$out/leaks.txt" 2>&1 || true
leaked=$(sed -n 's/^total memory leaked: \(.*\)$/\1/p' "$out/leaks.txt")
suppressed=$(sed -n 's/^suppressed leaks: \(.*\)$/\1/p' "$out/leaks.txt")

# RSS after warm-up (the first sample at or past it) and at the end; growth per hour.
awk -F, -v warm="$warmup_s" -v leaked="${leaked:-unknown}" -v suppressed="${suppressed:-none}" -v dur="$duration_s" '
  NR == 1 { next }
  $1 >= warm && first == "" { first = $2; first_t = $1 }
  { last = $2; last_t = $1; if ($2 > peak) peak = $2 }
  END {
    growth = (last - first) / first * 100;
    hours = (last_t - first_t) / 3600;
    printf "duration_s %d\nrss_kb_after_warmup %d\nrss_kb_at_end %d\nrss_kb_peak %d\nrss_growth_percent %.3f\n", dur, first, last, peak, growth;
    printf "rss_growth_percent_per_hour %.3f\nheaptrack_leaked %s\n", (hours > 0 ? growth / hours : 0), leaked;
    printf "heaptrack_suppressed %s (soak-leaks.supp; process-lifetime tables)\n", suppressed;
  }' "$out/rss.csv" | tee "$out/summary.txt"
grep "^mmo-server: final " "$log" | tee -a "$out/summary.txt"
growth=$(awk '/^rss_growth_percent / {print $2}' "$out/summary.txt")
if awk -v g="$growth" 'BEGIN { exit !(g >= 1.0) }'; then
  echo "soak: RSS grew ${growth}% after warm-up (bound 1%)" >&2
  status=1
fi
# heaptrack writes "total memory leaked: 0B" when nothing outside the suppressions is left.
if [ "${leaked:-unknown}" != "0B" ]; then
  echo "soak: heaptrack found ${leaked:-an unknown amount} still allocated at exit (see $out/leaks.txt)" >&2
  status=1
fi
exit "$status"
