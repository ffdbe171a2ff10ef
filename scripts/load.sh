#!/usr/bin/env bash
# Load benchmark: wrk against a release pathd on loopback, A* path queries on a bundled map
# beside the same wrk on GET /healthz (the framework's ceiling: routing, HTTP and the runtime
# without any search). Prints req/s and p50/p99 latency of both side by side.
#
# Usage: scripts/load.sh [MAP]                      (MAP: a name from maps/, default den520d)
# Env:   DURATION=10s CONNECTIONS=64 THREADS=2      wrk's -d, -c and -t
#        PAIRS=8 SEED=1                             start/goal pairs per run, and their seed
#        PATHD_POOL_THREADS                         server search threads (default: one per core)
#        RUST_LOG=warn                              server log filter (info logs every request)
#
# Only loopback traffic; every run is bounded by DURATION; the server is stopped on exit.
# Installs wrk (and jq, curl) with apt-get when missing; builds with cargo --release.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAP="${1:-den520d}"
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
PAIRS="${PAIRS:-8}"
SEED="${SEED:-1}"

log() { printf '[load] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

ensure_tools() {
    local missing=()
    command -v wrk >/dev/null 2>&1 || missing+=(wrk)
    command -v jq >/dev/null 2>&1 || missing+=(jq)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    if [ "${#missing[@]}" -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them or run as root"
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

TMP=""
SERVER_PID=""
cleanup() {
    trap '' INT TERM # finish cleaning up even if signalled again
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    [ -z "$TMP" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start/goal pairs drawn (seeded) from the map's largest connected component, so every query
# finds a path and the load is real search work, with a spread of path lengths.
pick_pairs() {
    python3 - "$1" "$PAIRS" "$SEED" <<'EOF'
import json, random, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [r for r in lines[lines.index("map") + 1:] if r]
ok = [[c in ".GS" for c in r] for r in rows]
H, W = len(ok), len(ok[0])
seen, best = set(), []
for y in range(H):
    for x in range(W):
        if ok[y][x] and (x, y) not in seen:
            comp, stack = [], [(x, y)]
            seen.add((x, y))
            while stack:
                px, py = stack.pop()
                comp.append((px, py))
                for nx, ny in ((px + 1, py), (px - 1, py), (px, py + 1), (px, py - 1)):
                    if 0 <= nx < W and 0 <= ny < H and ok[ny][nx] and (nx, ny) not in seen:
                        seen.add((nx, ny))
                        stack.append((nx, ny))
            if len(comp) > len(best):
                best = comp
rng = random.Random(int(sys.argv[3]))
best.sort()
for _ in range(int(sys.argv[2])):
    s, g = rng.sample(best, 2)
    print(json.dumps({"start": list(s), "goal": list(g), "algorithm": "astar"}, separators=(",", ":")))
EOF
}

# A wrk Lua script: round-robin over the request bodies (each wrk thread has its own Lua
# state and counter), and one machine-readable result line at the end.
write_lua() {
    local out="$1" path="$2" bodies="$3"
    {
        echo 'local bodies = {'
        if [ -n "$bodies" ]; then
            while IFS= read -r b; do printf '  %s,\n' "$(jq -Rn --arg b "$b" '$b')"; done <<<"$bodies"
        fi
        echo '}'
        printf 'local path = %s\n' "$(jq -Rn --arg p "$path" '$p')"
        cat <<'EOF'
local i = 0
if #bodies > 0 then
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
request = function()
  if #bodies == 0 then return wrk.format("GET", path) end
  i = i % #bodies + 1
  return wrk.format(nil, path, nil, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("LOAD_RESULT %.1f %d %d %d %d %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.requests, e.status, e.connect + e.read + e.write + e.timeout))
end
EOF
    } >"$out"
}

run_wrk() {
    local lua="$1" url="$2" out
    out="$(wrk -t "$THREADS" -c "$CONNECTIONS" -d "$DURATION" --timeout 10s -s "$lua" "$url")" \
        || die "wrk failed: $out"
    printf '%s\n' "$out" >>"$TMP/wrk.txt"
    grep '^LOAD_RESULT ' <<<"$out" | cut -d' ' -f2-
}

ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

main() {
    ensure_tools
    local mapfile="$ROOT/maps/$MAP.map"
    if [ ! -f "$mapfile" ]; then
        local names=() f
        for f in "$ROOT"/maps/*.map; do names+=("$(basename "$f" .map)"); done
        die "no map $mapfile (choose one of: ${names[*]})"
    fi
    TMP="$(mktemp -d)"

    log "building the release server"
    (cd "$ROOT" && cargo build --release --locked --bin pathd -q) || die "cargo build failed"
    local bin
    bin="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release/pathd"
    [ -x "$bin" ] || die "no binary at $bin"

    local port base
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    base="http://127.0.0.1:$port"
    PATHD_ADDR="127.0.0.1:$port" PATHD_MAPS_DIR="$ROOT/maps" PATHD_DATA_DIR="$TMP/data" \
        RUST_LOG="${RUST_LOG:-warn}" "$bin" serve >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    local _
    for _ in $(seq 1 100); do
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/server.log" >&2; die "server exited"; }
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && break
        sleep 0.1
    done
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] || die "server not ready after 10s"
    log "server pid $SERVER_PID on $base"

    local bodies b n=0 exp=0 len=0 answer
    bodies="$(pick_pairs "$mapfile")"
    # Each body must be a real found path before it is used as load.
    while IFS= read -r b; do
        answer="$(curl -sf -H 'Content-Type: application/json' -d "$b" "$base/v1/maps/$MAP/path")" \
            || die "query failed: $b"
        [ "$(jq -r .status <<<"$answer")" = found ] || die "no path for $b: $answer"
        exp=$((exp + $(jq -r .expanded <<<"$answer")))
        len=$((len + $(jq -r '.path | length' <<<"$answer")))
        n=$((n + 1))
    done <<<"$bodies"
    log "$n start/goal pairs on $MAP, mean $((len / n)) cells per path, mean $((exp / n)) expansions per query"

    write_lua "$TMP/path.lua" "/v1/maps/$MAP/path" "$bodies"
    write_lua "$TMP/health.lua" "/healthz" ""
    log "wrk -t$THREADS -c$CONNECTIONS -d$DURATION: POST /v1/maps/$MAP/path (A*)"
    local r_path r_health
    r_path="$(run_wrk "$TMP/path.lua" "$base")"
    log "wrk -t$THREADS -c$CONNECTIONS -d$DURATION: GET /healthz"
    r_health="$(run_wrk "$TMP/health.lua" "$base")"

    local server_threads="${PATHD_POOL_THREADS:-$(nproc)}"
    printf '\npathd load: wrk -t%s -c%s -d%s on %s cores, %s search threads, loopback, RUST_LOG=%s\n' \
        "$THREADS" "$CONNECTIONS" "$DURATION" "$(nproc)" "$server_threads" "${RUST_LOG:-warn}"
    printf '%-34s %12s %11s %11s %10s %8s %7s\n' endpoint req/s p50 p99 requests non-2xx errors
    local name r rps p50 p99 reqs non2xx errs bad=0
    for name in "POST /v1/maps/$MAP/path (astar)" "GET /healthz"; do
        if [ "$name" = "GET /healthz" ]; then r="$r_health"; else r="$r_path"; fi
        read -r rps p50 p99 reqs non2xx errs <<<"$r"
        printf '%-34s %12s %11s %11s %10s %8s %7s\n' "$name" "$rps" "$(ms "$p50")" "$(ms "$p99")" \
            "$reqs" "$non2xx" "$errs"
        if [ "$non2xx" != 0 ] || [ "$errs" != 0 ]; then bad=1; fi
    done
    if [ "$bad" != 0 ]; then cat "$TMP/wrk.txt" >&2; die "some requests failed (non-2xx or socket errors above)"; fi
}

main "$@"
