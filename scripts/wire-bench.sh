#!/usr/bin/env bash
# What the wire costs, in one run on a release build: wrk (Debian package; installed when
# missing) against one pathd on loopback for
#   1. GET /healthz (the floor: HTTP and the middleware, no work),
#   2. one long path query, POST /v1/maps/arena2/path, arena2 [5,100] -> [250,190] with
#      jps_plus (about 300 cells of path),
#   3. the same query 64 times in a batch, POST /v1/maps/arena2/paths,
# and beside them the engine's own rate on the same query, one thread per core
# (engine/examples/engine_rate.rs, with the jump table and landmarks pathd derives, the
# same limits, and the full cell path built as the server builds it), measured twice for
# SECS each: once before the HTTP runs and once after them (the same binary's rate has
# swung by half between runs on a shared machine).
# Prints requests/s, queries/s and the ratios the targets are stated in:
#   single/healthz (target >= 0.5) and batch queries/s / engine queries/s (target >= 0.5),
#   the engine's rate being the mean of its two measurements (both are printed, and the
#   batch's ratio to each).
# Env: SECS=10 (each wrk run), CONNS=64, THREADS=2 (wrk's), FORMAT=pairs|flat|turns
# (the queries' path_format), PATHD_POOL_THREADS (default: one per core), PATHD_BIN (a
# pathd binary to measure instead of this tree's release build, e.g. another commit's, to
# set two builds side by side in the same minutes; the engine's rate is always this tree's).
# Everything it starts is stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORIG="$PWD"
cd "$ROOT"
SECS="${SECS:-10}"
CONNS="${CONNS:-64}"
THREADS="${THREADS:-2}"
FORMAT="${FORMAT:-pairs}"
if ! command -v wrk >/dev/null 2>&1; then
    echo "installing wrk (Debian package)" >&2
    apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case $TARGET in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
if [ -n "${PATHD_BIN:-}" ]; then
    case $PATHD_BIN in /*) ;; *) PATHD_BIN="$ORIG/$PATHD_BIN" ;; esac
    [ -x "$PATHD_BIN" ] || { echo "no pathd binary at $PATHD_BIN" >&2; exit 2; }
else
    cargo build --release --locked --bin pathd
    PATHD_BIN="$TARGET/release/pathd"
fi
cargo build --release --locked -p pathd-engine --example engine_rate

WORK="$(mktemp -d)"
PID=""
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

engine_rate() { # queries/s threads cost cells
    local out
    out="$("$TARGET/release/examples/engine_rate" "$ROOT/maps/arena2.map" 5 100 250 190 jps_plus "$SECS")"
    read -r _ rate cores cost cells <<<"$out"
    echo "$rate $cores $cost $cells"
}
read -r engine_before cores cost cells < <(engine_rate)

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
BASE="http://127.0.0.1:$PORT"
PATHD_ADDR="127.0.0.1:$PORT" PATHD_MAPS_DIR="$ROOT/maps" PATHD_DATA_DIR="$WORK/data" \
    PATHD_LOG_FORMAT=json RUST_LOG=warn \
    "$PATHD_BIN" serve >"$WORK/server.log" 2>&1 &
PID=$!

Q='{"start": [5, 100], "goal": [250, 190], "algorithm": "jps_plus", "path_format": "'"$FORMAT"'"}'
printf '%s' "$Q" >"$WORK/single.json"
python3 - "$WORK/batch.json" "$Q" <<'PY'
import json, sys
q = json.loads(sys.argv[2])
json.dump({"queries": [q] * 64}, open(sys.argv[1], "w"))
PY
# Ready, and the jump table and its landmarks built (the answer expands the fewest nodes
# once they are: wait until two answers a second apart expand as many nodes).
for _ in $(seq 1 600); do
    if curl -fsS "$BASE/readyz" >/dev/null 2>&1; then break; fi
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
done
expanded() {
    curl -fsS -H 'content-type: application/json' --data-binary @"$WORK/single.json" \
        "$BASE/v1/maps/arena2/path" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["expanded"])' 2>/dev/null || echo none
}
last=none
for _ in $(seq 1 120); do
    now="$(expanded)"
    if [ "$now" != none ] && [ "$now" = "$last" ]; then break; fi
    last="$now"
    sleep 1
done
[ "$now" != none ] || { echo "the query never answered" >&2; cat "$WORK/server.log" >&2; exit 1; }

for name in single batch; do
    cat >"$WORK/$name.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$WORK/$name.json", "rb")
wrk.body = f:read("*a")
f:close()
LUA
done
rate() { # URL [LUA]: wrk's requests/s; non-2xx answers make the run fail
    local out
    if [ $# -gt 1 ]; then
        out="$(wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" -s "$2" "$1")"
    else
        out="$(wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" "$1")"
    fi
    if grep -q "Non-2xx" <<<"$out"; then echo "non-2xx answers from $1: $out" >&2; exit 1; fi
    awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}
healthz="$(rate "$BASE/healthz")"
single="$(rate "$BASE/v1/maps/arena2/path" "$WORK/single.lua")"
batch="$(rate "$BASE/v1/maps/arena2/paths" "$WORK/batch.lua")"
kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=""
read -r engine_after _ _ _ < <(engine_rate)

python3 - "$healthz" "$single" "$batch" "$engine_before" "$engine_after" "$cores" "$cost" "$cells" \
    "$FORMAT" "$CONNS" "$SECS" <<'PY'
import sys
healthz, single, batch, before, after = map(float, sys.argv[1:6])
cores, cost, cells, fmt, conns, secs = sys.argv[6:]
engine = (before + after) / 2
batch_q = batch * 64
print(f"arena2 [5,100] -> [250,190] jps_plus: {cells} cells, cost {float(cost):.3f}; "
      f"path_format {fmt}; wrk {conns} connections, {secs} s each")
print(f"  GET /healthz            {healthz:10.0f} requests/s")
print(f"  POST .../path (single)  {single:10.0f} requests/s   {single / healthz:.2f} of /healthz (target >= 0.5)")
print(f"  POST .../paths (x64)    {batch:10.0f} requests/s = {batch_q:.0f} queries/s   "
      f"{batch_q / engine:.2f} of the engine's mean (target >= 0.5)")
print(f"  engine, {cores} threads    {engine:10.0f} queries/s (mean of {before:.0f} before "
      f"and {after:.0f} after the HTTP runs; the batch is {batch_q / before:.2f} and "
      f"{batch_q / after:.2f} of each)")
PY
