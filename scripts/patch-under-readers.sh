#!/usr/bin/env bash
# PATCH latency under read-only load (issue 22): a release pathd on loopback, one 1024x1024
# map (Berlin_1_1024 from ../shared/benchmarks when present, else a seeded one), ROUNDS
# one-cell PATCHes alone (one every PACE_MS), then ROUNDS more while CLIENTS clients
# create subscriptions and flow fields on the same map in a loop (and delete them again).
# Prints p50 / p99 / max of each phase, their ratio, and how many creates answered and how
# (so a run where the readers did nothing shows). Bounded: every phase stops after its
# ROUNDS PATCHes.
#
#   scripts/patch-under-readers.sh            # ROUNDS=300 CLIENTS=8 PACE_MS=50
#   PATHD_BIN=/tmp/pathd-old scripts/patch-under-readers.sh   # another build, same script
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-300}"
CLIENTS="${CLIENTS:-8}"
PACE_MS="${PACE_MS:-50}"
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
    PATHD_QUEUE_DEPTH=256 PATHD_SHUTDOWN_GRACE_MS=2000 RUST_LOG=warn \
    "$PATHD_BIN" serve >"$DATA/server.log" 2>&1 &
PID=$!
BERLIN=../shared/benchmarks/movingai/maps/Berlin_1_1024.map
python3 - "$PORT" "$ROUNDS" "$CLIENTS" "$BERLIN" "$PACE_MS" <<'PY'
import collections, http.client, json, os, random, sys, threading, time

port, rounds, clients, berlin = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
pace = int(sys.argv[5]) / 1000

def call(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = {"content-type": "application/json"} | (headers or {})
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data

for _ in range(600):
    try:
        if call("GET", "/readyz")[0] == 200:
            break
    except OSError:
        pass
    time.sleep(0.05)

if os.path.exists(berlin):
    text = open(berlin).read()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("PUT", "/v1/maps/m", body=text, headers={"content-type": "text/plain"})
    r = c.getresponse(); r.read(); c.close()
    print(f"map: Berlin_1_1024 ({r.status})")
else:
    rng = random.Random(7)
    costs = [0 if rng.random() < 0.2 else 1 for _ in range(1024 * 1024)]
    costs[0] = costs[-1] = 1
    print("map: seeded 1024x1024 (20% walls):", call("PUT", "/v1/maps/m",
          {"width": 1024, "height": 1024, "costs": costs})[0])

open_cells = []
status, data = call("GET", "/v1/maps/m/cells")
import base64
cells = json.loads(data)
w = cells["width"]
row_costs = base64.b64decode(cells["costs"])
rng = random.Random(1)
def open_cell():
    while True:
        x, y = rng.randrange(1024), rng.randrange(1024)
        if row_costs[y * w + x] > 0:
            return x, y

def patches(n, label):
    lat = []
    for i in range(n):
        x, y = open_cell()
        cost = 1 if i % 2 else 3
        t = time.perf_counter()
        s, _ = call("PATCH", "/v1/maps/m", {"cells": [{"x": x, "y": y, "cost": cost}]})
        lat.append((time.perf_counter() - t) * 1000)
        assert s == 200, s
        time.sleep(pace)
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"{label:>28}: p50 {p(0.5):8.1f} ms  p99 {p(0.99):8.1f} ms  max {lat[-1]:8.1f} ms")
    return p(0.5), p(0.99)

patches(20, "warm-up")
alone = patches(rounds, "PATCH alone")
stop = threading.Event()
made = [0, 0]
answers = collections.Counter()
def reader(k):
    r = random.Random(100 + k)
    while not stop.is_set():
        a, b = open_cell(), open_cell()
        if k % 2 == 0:
            s, d = call("POST", "/v1/maps/m/subscriptions", {"start": list(a), "goal": list(b)})
            answers[("subscription", s)] += 1
            if s == 201:
                made[0] += 1
                v = json.loads(d)
                call("DELETE", f"/v1/subscriptions/{v['id']}",
                     headers={"x-subscription-secret": v["secret"]})
        else:
            s, d = call("POST", "/v1/maps/m/flowfields", {"goal": list(b)})
            answers[("flow field", s)] += 1
            if s == 201:
                made[1] += 1
                v = json.loads(d)
                call("DELETE", f"/v1/flowfields/{v['id']}",
                     headers={"x-flowfield-secret": v["secret"]})
threads = [threading.Thread(target=reader, args=(k,)) for k in range(clients)]
for t in threads:
    t.start()
time.sleep(1.0)
busy = patches(rounds, f"PATCH, {clients} creating clients")
stop.set()
for t in threads:
    t.join()
print(f"created meanwhile: {made[0]} subscriptions, {made[1]} flow fields; answers {dict(answers)}")
print(f"ratio busy/alone: p50 {busy[0] / alone[0]:.2f}x  p99 {busy[1] / alone[1]:.2f}x")
PY
