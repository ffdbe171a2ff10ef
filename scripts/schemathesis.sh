#!/usr/bin/env bash
# Property-based API testing: runs schemathesis (PyPI) against a live pathd built from this
# tree, with a temp data directory and the bundled maps: every check (`--checks all`: server
# errors, status codes, content types, headers and bodies against openapi.yaml, schema-valid
# data accepted and schema-violating data refused, use after free, resource availability,
# auth), plus the checks of scripts/schemathesis_hooks.py, in every phase (the contract's
# examples, coverage, fuzzing, and the stateful phase along the contract's links, which
# carry a subscription's or a flow field's id and secret to the operations that need
# them). Any finding fails the stage, and so does an ERROR line in the server's log.
#
#   scripts/schemathesis.sh                       # debug build, MAX_EXAMPLES=100
#   MAX_EXAMPLES=500 scripts/schemathesis.sh      # the issue-24 bar: 500 per operation
#   PROFILE=release scripts/schemathesis.sh
#   PATHD_BIN=target/debug/pathd scripts/schemathesis.sh   # no build
#   CHECKS=not_a_server_error scripts/schemathesis.sh      # some checks only
#   WORKERS=2 scripts/schemathesis.sh             # operations in threads (default 1: with
#                                                 # more, CPython 3.11 may fail a case with
#                                                 # "AST constructor recursion depth mismatch")
#
# Two runs against the same server: the stateless phases (examples, coverage, fuzzing), then
# the stateful phase on its own with STATEFUL_EXAMPLES scenarios (default 100; STATEFUL=0
# skips it). Run inside the one all-phase run, the stateful phase stopped after about 10
# scenarios and followed 5 of the 10 links; on its own it runs every scenario asked for
# (128 for 100, 8 of 10 links followed, 93 s on a debug build). SCHEMATHESIS_ARGS go to both
# runs (so no --phases there).
#
# MAX_EXAMPLES is per operation and phase (fuzzing generates up to that many cases for each
# operation). Measured on two cores shared with other builds (debug server): the default,
# about 4,600 cases, 6 minutes; 500 per operation, about 11,500 cases, run as two halves in
# parallel (STATEFUL=0 SCHEMATHESIS_ARGS="--include-operation-id-regex '^(findPathPosthoc|
# findPath|findPaths|costMatrix|lineOfSight|planAgents)$'" and the same regex with
# --exclude-operation-id-regex for the rest and the stateful phase), 22 and 24 minutes
# (measured when both were one run). Both must report no finding.
set -euo pipefail

cd "$(dirname "$0")/.."
PROFILE="${PROFILE:-debug}"
MAX_EXAMPLES="${MAX_EXAMPLES:-100}"

if ! command -v schemathesis >/dev/null 2>&1; then
    echo "installing schemathesis from PyPI" >&2
    python3 -m pip install --quiet schemathesis
fi

# PATHD_BIN: an already built binary (scripts/test.sh passes the one `cargo test` built,
# so this stage compiles nothing).
if [ -n "${PATHD_BIN:-}" ]; then
    BIN="$PATHD_BIN"
else
    if [ "$PROFILE" = release ]; then
        cargo build --locked --release --bin pathd
    else
        cargo build --locked --bin pathd
    fi
    BIN="${CARGO_TARGET_DIR:-target}/$PROFILE/pathd"
fi

# A free port: bind 0, read it back, release it.
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
DATA="$(mktemp -d)"
LOG="$DATA/server.log"
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
    PATHD_POOL_THREADS=2 PATHD_MAX_TIMEOUT_MS=250 PATHD_LOG_FORMAT=json \
    "$BIN" serve >"$LOG" 2>&1 &
PID=$!

BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 300); do
    if curl -fsS "$BASE/readyz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "pathd exited early:" >&2
        cat "$LOG" >&2
        exit 1
    fi
    sleep 0.1
done
curl -fsS "$BASE/readyz" >/dev/null

# The maps the map-scoped operations are fuzzed against (see scripts/schemathesis.toml):
# 64x64, open ground with a ring of walls and a band of costlier terrain, so generated
# points near the origin are often valid and queries reach the search.
python3 - "$BASE" <<'PY'
import json, sys, urllib.request
w = h = 64
costs = []
for y in range(h):
    for x in range(w):
        if x == 32 and 8 <= y < 56:
            costs.append(0)
        elif 40 <= y < 48:
            costs.append(3)
        else:
            costs.append(1)
body = json.dumps({"width": w, "height": h, "costs": costs}).encode()
for name in ("fuzz", "fuzz-patch"):
    req = urllib.request.Request(f"{sys.argv[1]}/v1/maps/{name}", data=body, method="PUT",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
PY

status=0
# The event streams (subscriptionEvents, flowFieldEvents, planEvents) stay open while
# their subscription, field or live plan lives, which schemathesis cannot consume (each
# case would wait out the request timeout). Their frames are typed in the contract
# (OpenAPI 3.2 `itemSchema`: `SubscriptionEventFrame`, `FlowFieldEventFrame`,
# `LivePlanEventFrame`) and checked by the server tests: the contract's examples frame by
# frame (tests/it/openapi.rs), real events (tests/it/live.rs, tests/it/flowfields.rs,
# tests/it/plans_live.rs).
run() {
    schemathesis --config-file scripts/schemathesis.toml run openapi.yaml \
        --url "$BASE" \
        --exclude-operation-id subscriptionEvents \
        --exclude-operation-id flowFieldEvents \
        --exclude-operation-id planEvents \
        --checks "${CHECKS:-all}" \
        --workers "${WORKERS:-1}" \
        --seed 1 \
        --no-color "$@" ${SCHEMATHESIS_ARGS:-}
}
run --phases examples,coverage,fuzzing --max-examples "$MAX_EXAMPLES" || status=$?
if [ "${STATEFUL:-1}" != 0 ]; then
    run --phases stateful --max-examples "${STATEFUL_EXAMPLES:-100}" || status=$?
fi

if grep -q '"level":"ERROR"' "$LOG"; then
    echo "server logged errors:" >&2
    grep '"level":"ERROR"' "$LOG" >&2 | head -20
    status=1
fi
exit "$status"
