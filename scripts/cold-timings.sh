#!/usr/bin/env bash
# The newcomer's first hour, timed: clones this repository (its committed HEAD) next to
# itself, so `../shared` resolves the same, with an empty target directory, and times
#   1. `cargo run --release` until the README's first query is answered, and
#   2. `scripts/test.sh` (every stage; PATHD_SKIP_CONTAINER / PATHD_SKIP_BROWSER pass through).
# Crates come from the local cargo cache (download time is not counted); container base
# images are whatever buildah already holds. Run it on a quiet machine: it measures wall time.
#
#   scripts/cold-timings.sh             # both
#   ONLY=run scripts/cold-timings.sh    # just the first answer
#   ONLY=test scripts/cold-timings.sh   # just scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
CLONE="$(dirname "$ROOT")/cold-$$"
PORT="${PORT:-18080}"
cleanup() {
    if [ -n "${PID:-}" ]; then kill "$PID" 2>/dev/null || true; fi
    rm -rf "$CLONE"
}
trap cleanup EXIT
git clone -q "$ROOT" "$CLONE"
cd "$CLONE"
unset CARGO_TARGET_DIR PATHD_BIN

if [ "${ONLY:-}" != test ]; then
start=$(date +%s.%N)
PATHD_ADDR="127.0.0.1:$PORT" PATHD_DATA_DIR="$CLONE/data" cargo run --release >"$CLONE/run.log" 2>&1 &
PID=$!
until curl -sf -X POST "127.0.0.1:$PORT/v1/maps/arena2/path" -H 'Content-Type: application/json' \
    -d '{"start": [5, 100], "goal": [100, 100]}' -o /dev/null; do
    if ! kill -0 "$PID" 2>/dev/null; then echo "cargo run exited:" >&2; tail -20 "$CLONE/run.log" >&2; exit 1; fi
    sleep 0.2
done
end=$(date +%s.%N)
printf 'first answer of `cargo run --release`: %.0f s\n' "$(echo "$end - $start" | bc)"
# Stop the server: cargo run's child, or cargo's own process when it exec'd the binary (it
# does on Unix), so stop both.
pkill -TERM -P "$PID" 2>/dev/null || true
kill -TERM "$PID" 2>/dev/null || true
wait "$PID" 2>/dev/null || true
PID=""
fi

if [ "${ONLY:-}" = run ]; then exit 0; fi
rm -rf target
start=$(date +%s.%N)
status=0
./scripts/test.sh >"$CLONE/test.log" 2>&1 || status=$?
end=$(date +%s.%N)
printf 'scripts/test.sh from an empty target directory: %.0f s (exit %s)\n' "$(echo "$end - $start" | bc)" "$status"
grep -E '^test result|passed|failed' "$CLONE/test.log" | tail -15
exit "$status"
