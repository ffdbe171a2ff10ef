#!/usr/bin/env bash
# Browser test of the visualiser: real headless Chromium (Debian's `chromium`) driven by
# Playwright for Python against a live pathd built from this tree, with a temp data
# directory and the bundled maps. Installs what is missing (chromium via apt-get, the
# `playwright` module via pip; Playwright's own browser download is never used).
#
#   scripts/browser-test.sh                      # debug build
#   PATHD_BIN=/path/to/pathd scripts/browser-test.sh
#   PROFILE=release scripts/browser-test.sh
#   SCREENSHOT_DIR=/tmp/shots scripts/browser-test.sh   # keep the screenshots
#   UPDATE_SCREENSHOTS=1 scripts/browser-test.sh        # refresh the README's docs/ui/*.png
set -euo pipefail

cd "$(dirname "$0")/.."
PROFILE="${PROFILE:-debug}"

if [ ! -x /usr/bin/chromium ]; then
    echo "installing chromium (apt-get)" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if ! python3 -c 'import playwright.sync_api' >/dev/null 2>&1; then
    echo "installing playwright (pip)" >&2
    python3 -m pip install --quiet playwright
fi

if [ -n "${PATHD_BIN:-}" ]; then
    BIN="$PATHD_BIN"
else
    if [ "$PROFILE" = release ]; then
        cargo build --release --bin pathd
    else
        cargo build --bin pathd
    fi
    BIN="${CARGO_TARGET_DIR:-target}/$PROFILE/pathd"
fi

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
TMP="$(mktemp -d)"
LOG="$TMP/server.log"
PID=""
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

# HPA* abstractions for maps of arena2's size (281x209) up, with clusters small enough to
# show several entrances between start and goal.
PATHD_ADDR="127.0.0.1:$PORT" PATHD_MAPS_DIR=maps PATHD_DATA_DIR="$TMP/data" \
    PATHD_POOL_THREADS=2 PATHD_LOG_FORMAT=json \
    PATHD_HPA_MIN_CELLS=50000 PATHD_HPA_CLUSTER_SIZE=16 \
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

SHOTS="${SCREENSHOT_DIR:-$TMP/shots}"
mkdir -p "$SHOTS"
status=0
# BROWSER_SUITES=ui,visualiser,mapf (the default: all three) picks the files to run:
# tests/browser/test_ui.py, test_visualiser.py (the engine in the tab, lessons, issue 25's
# defects), test_mapf.py (many agents, issue 26); BROWSER_TESTS=name,... filters the tests
# of the last two.
SUITES=",${BROWSER_SUITES:-ui,visualiser,mapf},"
for suite in ui visualiser mapf; do
    case "$SUITES" in
        *",$suite,"*)
            PATHD_URL="$BASE" SCREENSHOT_DIR="$SHOTS" python3 "tests/browser/test_$suite.py" || status=$?
            ;;
    esac
done
if [ "$status" = 0 ] && [ "${UPDATE_SCREENSHOTS:-0}" = 1 ]; then
    mkdir -p docs/ui
    for shot in query trace-step compare subscription hpa repair \
        offline lesson-3x3 lesson-ties lesson-manhattan city-1024 games-goals games-snap \
        mapf mapf-alone-arena2 mapf-replan; do
        # (only the suites run made theirs)
        if [ -f "$SHOTS/$shot.png" ]; then cp "$SHOTS/$shot.png" "docs/ui/$shot.png"; fi
    done
    echo "updated docs/ui/*.png"
fi
if [ -z "${SCREENSHOT_DIR:-}" ]; then
    echo "screenshots were in $SHOTS (set SCREENSHOT_DIR to keep them)"
fi
if [ "$status" != 0 ]; then
    echo "server log (tail):" >&2
    tail -20 "$LOG" >&2
fi
exit "$status"
