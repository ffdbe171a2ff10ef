#!/usr/bin/env bash
# Forwarded subscription reads vs direct ones: one nats-server, two release replicas A and
# B on loopback; a subscription created on A; N sequential keep-alive GETs of it on A
# (served there) and on B (forwarded to A); p50/p99 of each. Needs nats-server and python3.
#   N=2000 ./scripts/lb-bench.sh        (PATHD_BIN=... to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
bin=${PATHD_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --features nats --locked >&2
  bin=${CARGO_TARGET_DIR:-target}/release/pathd
fi
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
np=$(free); pa=$(free); pb=$(free)
nats-server -js -a 127.0.0.1 -p "$np" -sd "$tmp/js" >/dev/null 2>&1 & pids+=($!)
mkdir -p "$tmp/maps"
for p in "$pa" "$pb"; do
  "$bin" --addr "127.0.0.1:$p" --maps-dir "$tmp/maps" --data-dir "$tmp/d$p" \
    --store "nats://127.0.0.1:$np" >/dev/null 2>&1 & pids+=($!)
done
for p in "$pa" "$pb"; do
  until curl -sf "http://127.0.0.1:$p/readyz" | grep -q '"members":\[{'; do sleep 0.1; done
done
python3 - "$pa" "$pb" "$N" <<'PY'
import http.client, json, sys, time
pa, pb, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def conn(p): return http.client.HTTPConnection("127.0.0.1", p)
a = conn(pa)
rows = "\n".join("." * 256 for _ in range(256))
a.request("PUT", "/v1/maps/m", f"type octile\nheight 256\nwidth 256\nmap\n{rows}\n", {"content-type": "text/plain"})
assert a.getresponse().read() is not None
a.request("POST", "/v1/maps/m/subscriptions", json.dumps({"start": [1, 1], "goal": [250, 200], "min_version": 1}), {"content-type": "application/json"})
r = a.getresponse(); sub = json.loads(r.read()); assert r.status == 201, sub
path = f"/v1/subscriptions/{sub['id']}"
def run(p):
    c = conn(p); ts = []
    for _ in range(n):
        t = time.perf_counter(); c.request("GET", path); r = c.getresponse(); r.read()
        ts.append(time.perf_counter() - t); assert r.status == 200
    ts.sort(); return r.getheader("x-pathd-forwarded-by"), ts[len(ts) // 2] * 1e3, ts[int(len(ts) * 0.99)] * 1e3
for name, p in (("direct (A, owner)", pa), ("forwarded (B -> A)", pb)):
    run(p)  # warm-up
    fwd, p50, p99 = run(p)
    print(f"{name:20} n={n} p50={p50:.3f} ms p99={p99:.3f} ms forwarded_by={fwd}")
PY
