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
#   loadtest/scripts/with-server.sh [--engine rust|baseline] [--server-bin PATH] [--loadtest-bin PATH] -- <mmo-loadtest args>
#
# Used by `make run` (a short raid scenario) and `make loadtest-smoke` (every scenario, short).
set -euo pipefail

engine=rust
server_bin=build/cpp/mmo-server
loadtest_bin=target/release/mmo-loadtest
admin_key=0x5eed5eed
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --server-bin) server_bin=$2; shift 2 ;;
    --loadtest-bin) loadtest_bin=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "with-server.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

log=$(mktemp -t mmo-server.XXXXXX.log)
keys=$(mktemp -d -t mmo-token-keys.XXXXXX)
target/release/mmo-token keygen --out-dir "$keys" --name token >/dev/null
spawn_points=$("$loadtest_bin" --print-spawn-points)
# shellcheck disable=SC2086 # MMO_SERVER_ARGS is a list of flags
"$server_bin" --port 0 --engine "$engine" --admin-key "$admin_key" --stats-interval-s 0 --token-public-key "$keys/token.pub" \
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
