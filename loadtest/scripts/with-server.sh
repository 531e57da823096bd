#!/usr/bin/env bash
# Starts mmo-server on a free loopback port, runs mmo-loadtest against it, then stops the
# server with SIGTERM and shows its final line. Exit status: the load tester's (non-zero when
# its checks fail), or non-zero if the server fails to start or to stop cleanly.
#
# Connect tokens: a fresh key pair per run (mmo-token keygen into a temporary directory): the
# server gets the public key, the load tester (the bots' backend) the private one. The server
# gets the load test's starting zones (mmo-loadtest --print-spawn-points): the world for
# steady play, the raid area for the raid's bots.
#
#   loadtest/scripts/with-server.sh [--engine rust|baseline] [--server-bin PATH] [--loadtest-bin PATH]
#                                   [--preload LIB] [--memory-report] -- <mmo-loadtest args>
#
# --preload LIB: the server (only) runs with LD_PRELOAD=LIB, e.g. another allocator in the
# system-allocator build (build/cpp-sysalloc/mmo-server).
# --memory-report: once the load test ends, before the server stops, prints the server's peak
# RSS (VmHWM) and where its resident memory lies now (/proc/PID/smaps): the server binary's
# code, its other mapped pages, shared libraries, and anonymous memory (heap, allocator
# arenas, thread stacks, the core's reserved tables).
#
# Used by `make run` (a short raid scenario) and `make loadtest-smoke` (every scenario, short).
set -euo pipefail

engine=rust
server_bin=build/cpp/mmo-server
loadtest_bin=target/release/mmo-loadtest
admin_key=0x5eed5eed
preload=""
memory_report=0
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --server-bin) server_bin=$2; shift 2 ;;
    --loadtest-bin) loadtest_bin=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    --memory-report) memory_report=1; shift ;;
    --) shift; break ;;
    *) echo "with-server.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

log=$(mktemp -t mmo-server.XXXXXX.log)
keys=$(mktemp -d -t mmo-token-keys.XXXXXX)
target/release/mmo-token keygen --out-dir "$keys" --name token >/dev/null
spawn_points=$("$loadtest_bin" --print-spawn-points)
# shellcheck disable=SC2086 # MMO_SERVER_ARGS is a list of flags
env ${preload:+LD_PRELOAD=$preload} "$server_bin" --port 0 --engine "$engine" --admin-key "$admin_key" --stats-interval-s 0 --token-public-key "$keys/token.pub" \
  --data-dir "$keys/data" \
  --spawn-points "$spawn_points" ${MMO_SERVER_ARGS:-} >"$log" 2>&1 &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$keys"
}
trap stop_server EXIT

port=""
for _ in $(seq 1 100); do  # up to 10 s for the listening line
  port=$(sed -n 's/^mmo-server: listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "with-server.sh: mmo-server did not start:" >&2
  cat "$log" >&2
  exit 1
fi
echo "with-server.sh: $(head -1 "$log")"

status=0
"$loadtest_bin" --server "127.0.0.1:$port" --admin-key "$admin_key" --token-secret-key "$keys/token.secret" "$@" || status=$?

if [ "$memory_report" = 1 ]; then
  # Resident KiB per kind of mapping; the server binary's code is its executable mapping.
  awk -v bin="$(readlink -f "$server_bin")" '
    /^[0-9a-f]+-[0-9a-f]+ / { perm = $2; path = (NF >= 6) ? $6 : ""
      kind = (path == bin) ? ((perm ~ /x/) ? "server_code" : "server_data") : (path ~ /^\// ? "libraries" : "anonymous") }
    /^Rss:/ { kb[kind] += $2; total += $2 }
    END { printf "with-server.sh: memory: resident %d KiB now: server code %d, server data %d, libraries %d, anonymous %d\n",
          total, kb["server_code"], kb["server_data"], kb["libraries"], kb["anonymous"] }' "/proc/$server_pid/smaps"
  echo "with-server.sh: memory: peak RSS $(awk '/^VmHWM:/ { print $2, $3 }' "/proc/$server_pid/status")"
fi

kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
trap - EXIT
grep '^mmo-server: final uptime' "$log" || true
rm -f "$log"
rm -rf "$keys"
if [ "$server_status" -ne 0 ]; then
  echo "with-server.sh: mmo-server exited with status $server_status" >&2
  exit 1
fi
exit "$status"
