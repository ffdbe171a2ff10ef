#!/usr/bin/env bash
# Unit-type profiles (issue 23): what a profile costs a write and memory. A release pathd on
# loopback, a 1024x1024 map (Berlin_1_1024 from ../shared/benchmarks when present, else a
# seeded one) uploaded twice: `one` with its Moving AI profile `ground` only, `four` with
# three more profiles, each made (one query each) before the patches. Then ROUNDS one-cell
# PATCHes of each map (one every PACE_MS, the same cells), and prints PATCH p50 / p99 / max
# of each, their ratio, and the RSS and derived memory each extra profile added.
#
#   scripts/profile-bench.sh                  # ROUNDS=300 PACE_MS=20
#   PATHD_BIN=target/release/pathd scripts/profile-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-300}"
PACE_MS="${PACE_MS:-20}"
if [ -z "${PATHD_BIN:-}" ]; then
    cargo build --release --bin pathd
    PATHD_BIN=target/release/pathd
fi
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
DATA="$(mktemp -d)"
MAPS="$(mktemp -d)"
PID=""
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$DATA" "$MAPS"
}
trap cleanup EXIT
PATHD_ADDR="127.0.0.1:$PORT" PATHD_MAPS_DIR="$MAPS" PATHD_DATA_DIR="$DATA/data" \
    PATHD_SHUTDOWN_GRACE_MS=2000 RUST_LOG=warn \
    "$PATHD_BIN" serve >"$DATA/server.log" 2>&1 &
PID=$!
python3 - "$PORT" "$ROUNDS" "$PACE_MS" "$PID" ../shared/benchmarks/movingai/maps/Berlin_1_1024.map <<'PY'
import http.client, json, os, random, sys, time

port, rounds, pace, pid, berlin = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000, sys.argv[4], sys.argv[5]

def call(method, path, body=None, ctype="application/json"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    c.request(method, path, body=data, headers={"content-type": ctype})
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out

def rss():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

for _ in range(600):
    try:
        if call("GET", "/readyz")[0] == 200:
            break
    except OSError:
        pass
    time.sleep(0.05)

if os.path.exists(berlin):
    text = open(berlin).read()
    source = "Berlin_1_1024"
else:
    rng = random.Random(7)
    rows = ["".join("@" if rng.random() < 0.2 else ("T" if rng.random() < 0.05 else ".") for _ in range(1024)) for _ in range(1024)]
    text = "type octile\nheight 1024\nwidth 1024\nmap\n" + "\n".join(rows) + "\n"
    source = "a seeded 1024x1024 map"
lines = text.split("\n")
width, height = int(lines[2].split()[1]), int(lines[1].split()[1])
grid = lines[4:4 + height]
open_cells = [(x, y) for y in range(height) for x in range(width) if grid[y][x] == "."]

def settle(name):
    # Wait until the map's derived structures (and those of its profiles) are built.
    for _ in range(1200):
        st, body = call("GET", f"/v1/maps/{name}")
        m = json.loads(body)
        kinds = [m.get("jps_plus", {}), m.get("subgoal", {})] + [
            p.get(k, {}) for p in m.get("profiles", []) if not p["default"] for k in ("jps_plus", "subgoal")]
        if all(k.get("status", "ready") == "ready" for k in kinds):
            return m
        time.sleep(0.1)
    return m

before = rss()
assert call("PUT", "/v1/maps/one", text, "text/plain")[0] == 201
settle("one")
one_rss = rss()
assert call("PUT", "/v1/maps/four", text, "text/plain")[0] == 201
settle("four")
four_base = rss()
extra = {"slow": {".": 3, "T": 0}, "forest": {".": 1, "T": 2}, "walker": {".": 1}}
st, body = call("PATCH", "/v1/maps/four", {"profiles": extra})
assert st == 200, body
rng = random.Random(11)
s, g = open_cells[0], open_cells[-1]
for name in extra:
    st, body = call("POST", "/v1/maps/four/path", {"start": list(s), "goal": list(g), "profile": name})
    assert st == 200, body
summary = settle("four")
four_rss = rss()
derived = {p["name"]: sum(p.get(k, {}).get("memory_bytes", 0) for k in ("jps_plus", "subgoal", "hpa"))
           for p in summary["profiles"] if not p["default"]}

def patch_times(name):
    out = []
    r = random.Random(5)
    for i in range(rounds):
        x, y = r.choice(open_cells)
        cost = ord("@") if i % 2 == 0 else ord(".")
        t = time.perf_counter()
        st, body = call("PATCH", f"/v1/maps/{name}", {"cells": [{"x": x, "y": y, "cost": cost}]})
        out.append((time.perf_counter() - t) * 1000)
        assert st == 200, body
        # Put it back so the next round starts from the same map.
        st, body = call("PATCH", f"/v1/maps/{name}", {"cells": [{"x": x, "y": y, "cost": ord(".")}]})
        time.sleep(pace)
    out.sort()
    return out

def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p))]

one = patch_times("one")
four = patch_times("four")
print(f"map: {source}, {rounds} one-cell PATCHes per map")
for label, v in (("1 profile ", one), ("4 profiles", four)):
    print(f"{label}: p50 {pct(v, 0.5):.2f} ms  p99 {pct(v, 0.99):.2f} ms  max {v[-1]:.2f} ms")
print(f"ratio 4/1: p50 {pct(four, 0.5) / pct(one, 0.5):.2f}x  p99 {pct(four, 0.99) / pct(one, 0.99):.2f}x")
mib = 1 << 20
print(f"RSS: server {before / mib:.1f} MiB, +map 'one' {(one_rss - before) / mib:.1f} MiB, "
      f"+map 'four' {(four_base - one_rss) / mib:.1f} MiB, +3 profiles made {(four_rss - four_base) / mib:.1f} MiB "
      f"({(four_rss - four_base) / 3 / mib:.1f} MiB a profile)")
print("derived memory per extra profile (MiB): " + ", ".join(f"{k} {v / mib:.1f}" for k, v in derived.items()))
PY
