#!/usr/bin/env bash
# Fan-out measurement: a release pathd on loopback, N subscriptions on one bundled map whose
# paths cross one column, every SSE stream open, one wall patch across that column; prints
# the time from sending the patch until every affected client (its path is no longer legal)
# has its event: p50 / p99 / max. Bounded: the client gives up after TIMEOUT seconds.
#
#   scripts/fanout.sh                 # N=1000 on den520d
#   N=10000 scripts/fanout.sh
#   N=2000 MAP=maze512-1-0 scripts/fanout.sh
#   N=10000 GOALS=100 SPREAD=200 MAP_FILE=../shared/benchmarks/movingai/maps/Berlin_1_1024.map \
#       scripts/fanout.sh            # 100 goals on a 1024x1024 map served beside the bundled ones
# Also prints the server's RSS and its subscription memory (`pathd_subscription_memory_bytes`).
set -euo pipefail

cd "$(dirname "$0")/.."
N="${N:-1000}"
MAP_FILE="${MAP_FILE:-}"
if [ -n "$MAP_FILE" ]; then
    MAP="$(basename "$MAP_FILE" .map)"
fi
MAP="${MAP:-den520d}"
TIMEOUT="${TIMEOUT:-120}"
GOALS="${GOALS:-0}"
SPREAD="${SPREAD:-25}"

# Each open stream is a socket on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo build --release --bin pathd --example fanout

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
DATA="$(mktemp -d)"
PID=""
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$DATA"
}
trap cleanup EXIT
mkdir -p "$DATA/maps"
for m in maps/*.map ${MAP_FILE:+"$MAP_FILE"}; do ln -s "$(realpath "$m")" "$DATA/maps/"; done

PATHD_ADDR="127.0.0.1:$PORT" PATHD_MAPS_DIR="$DATA/maps" PATHD_DATA_DIR="$DATA/data" \
    PATHD_MAX_SUBSCRIPTIONS="$N" PATHD_MAX_SUBSCRIPTIONS_PER_MAP="$N" \
    PATHD_MAX_SUBSCRIPTION_BYTES="${BUDGET:-1073741824}" PATHD_MAX_SUBSCRIPTION_BYTES_PER_MAP="${BUDGET:-1073741824}" \
    PATHD_MAX_CONNECTIONS="$((N + 256))" PATHD_QUEUE_DEPTH=256 PATHD_SHUTDOWN_GRACE_MS=2000 RUST_LOG=warn \
    "${CARGO_TARGET_DIR:-target}"/release/pathd serve >"$DATA/server.log" 2>&1 &
PID=$!

BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 300); do
    if curl -fsS "$BASE/readyz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "pathd exited early:" >&2
        cat "$DATA/server.log" >&2
        exit 1
    fi
    sleep 0.1
done

FANOUT_SERVER_PID="$PID" timeout "$((TIMEOUT * 4))" "${CARGO_TARGET_DIR:-target}"/release/examples/fanout "$BASE" "$MAP" "$N" "$TIMEOUT" "$GOALS" "$SPREAD"
echo "server RSS: $(ps -o rss= -p "$PID" | awk '{printf "%.0f MiB", $1/1024}')"
curl -fsS "$BASE/metrics" | grep -E '^pathd_subscription_memory_bytes ' || true
