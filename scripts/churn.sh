#!/usr/bin/env bash
# Subscription churn: a release pathd on loopback, N subscriptions created and deleted,
# CYCLES times; prints the server's RSS and reported subscription memory after each cycle
# (issue: RSS at the end within 2x of the first cycle's).
#
#   scripts/churn.sh                       # N=2000, CYCLES=6 on den520d, a goal each
#   GOALS=20 scripts/churn.sh              # sharing 20 goals
set -euo pipefail

cd "$(dirname "$0")/.."
N="${N:-2000}"
CYCLES="${CYCLES:-6}"
MAP="${MAP:-den520d}"
GOALS="${GOALS:-0}"

cargo build --release --bin pathd --example churn

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

PATHD_ADDR="127.0.0.1:$PORT" PATHD_MAPS_DIR=maps PATHD_DATA_DIR="$DATA/data" \
    PATHD_MAX_SUBSCRIPTIONS="$N" PATHD_MAX_SUBSCRIPTIONS_PER_MAP="$N" \
    PATHD_MAX_SUBSCRIPTION_BYTES="${BUDGET:-1073741824}" PATHD_MAX_SUBSCRIPTION_BYTES_PER_MAP="${BUDGET:-1073741824}" \
    PATHD_SHUTDOWN_GRACE_MS=2000 RUST_LOG=warn \
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

"${CARGO_TARGET_DIR:-target}"/release/examples/churn "$BASE" "$PID" "$MAP" "$N" "$CYCLES" "$GOALS"
