#!/usr/bin/env bash
# A NATS node loss under write load: three nats-server nodes (one JetStream cluster, the
# stream at R=3) and three release pathd replicas on loopback, a write load of patches
# round-robin over the replicas (each a wall on a cell of its own), and after WARM seconds
# the node leading the stream killed with kill -9. Prints the write outage (the longest
# time between two acknowledged writes, and the slowest write), the answers by status, and
# checks that every acknowledged write is on every replica afterwards.
#
#   scripts/nats-node-loss.sh                 # WARM=3 AFTER=12 CLIENTS=6
#   PATHD_BIN=/tmp/pathd-old scripts/nats-node-loss.sh   # another build (skips cargo)
#
# Everything it starts is stopped by pid on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./scripts/ensure-nats.sh
WARM="${WARM:-3}"
AFTER="${AFTER:-12}"
CLIENTS="${CLIENTS:-6}"
KILL="${KILL:-1}"   # KILL=0: the same load without the kill (a baseline)
if [ -z "${PATHD_BIN:-}" ]; then
    cargo build --release --features nats --bin pathd
    PATHD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/pathd"
fi
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
TMP="$(mktemp -d)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

CPORTS=() NPORTS=() MPORTS=() NPIDS=()
for i in 0 1 2; do CPORTS+=("$(port)"); NPORTS+=("$(port)"); MPORTS+=("$(port)"); done
ROUTES="nats://127.0.0.1:${CPORTS[0]},nats://127.0.0.1:${CPORTS[1]},nats://127.0.0.1:${CPORTS[2]}"
for i in 0 1 2; do
    "$NATS" -js -a 127.0.0.1 -p "${NPORTS[$i]}" -m "${MPORTS[$i]}" -sd "$TMP/js$i" -n "n$i" \
        --cluster_name pathd --cluster "nats://127.0.0.1:${CPORTS[$i]}" --routes "$ROUTES" \
        >"$TMP/nats$i.log" 2>&1 &
    NPIDS+=("$!")
    PIDS+=("$!")
done
STORE="nats://127.0.0.1:${NPORTS[0]},127.0.0.1:${NPORTS[1]},127.0.0.1:${NPORTS[2]}"
BASES=()
for i in 0 1 2; do
    p="$(port)"
    mkdir -p "$TMP/maps$i"
    PATHD_ADDR="127.0.0.1:$p" PATHD_MAPS_DIR="$TMP/maps$i" PATHD_DATA_DIR="$TMP/data$i" \
        PATHD_STORE="$STORE" PATHD_NATS_REPLICAS=3 RUST_LOG="${RUST_LOG:-warn}" \
        "$PATHD_BIN" serve >"$TMP/pathd$i.log" 2>&1 &
    PIDS+=("$!")
    BASES+=("http://127.0.0.1:$p")
done
for b in "${BASES[@]}"; do
    for _ in $(seq 1 600); do
        if curl -fsS "$b/readyz" >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    curl -fsS "$b/readyz" >/dev/null
done

RC=0
python3 - "$WARM" "$AFTER" "$CLIENTS" "$KILL" "${NPIDS[*]}" "${MPORTS[*]}" "${BASES[@]}" <<'EOF' || RC=$?
import json, os, signal, sys, threading, time, urllib.request, urllib.error

warm, after, clients, kill = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
npids = [int(p) for p in sys.argv[5].split()]
mports = [int(p) for p in sys.argv[6].split()]
bases = sys.argv[7:]
W = H = 256

def req(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(url, data=data, method=method,
                               headers={"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

text = "type octile\nheight %d\nwidth %d\nmap\n" % (H, W) + ("." * W + "\n") * H
r = urllib.request.Request(bases[0] + "/v1/maps/w", data=text.encode(), method="PUT",
                           headers={"content-type": "text/plain"})
with urllib.request.urlopen(r, timeout=30) as resp:
    assert resp.status == 201, resp.status

def leader():
    for port in mports:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/jsz?streams=true" % port, timeout=2) as r:
                j = json.load(r)
            for acc in j.get("account_details", []):
                for st in acc.get("stream_detail", []):
                    if st["name"] == "PATHD_MAPS":
                        return st["cluster"]["leader"]
        except Exception:
            pass
    return None

lock = threading.Lock()
nxt = [0]
results = []  # (start, end, status, cell, body)
stop = threading.Event()
t0 = time.monotonic()

def client():
    while not stop.is_set():
        with lock:
            i = nxt[0]; nxt[0] += 1
        x, y = i % W, i // W
        start = time.monotonic()
        s, body = req("PATCH", bases[i % len(bases)] + "/v1/maps/w",
                      {"cells": [{"x": x, "y": y, "cost": 0}]})
        with lock:
            results.append((start - t0, time.monotonic() - t0, s, (x, y), body))

threads = [threading.Thread(target=client) for _ in range(clients)]
for t in threads: t.start()
time.sleep(warm)
name = leader()
victim = int(name[1:]) if name else 0
killed_at = time.monotonic() - t0
if kill:
    os.kill(npids[victim], signal.SIGKILL)
    print("killed the stream leader %s (pid %d) at %.2f s" % (name, npids[victim], killed_at))
else:
    print("no kill (the stream leader is %s)" % name)
time.sleep(after)
stop.set()
for t in threads: t.join()

ok = sorted((e, c) for (_, e, s, c, _) in results if 200 <= s < 300)
bad = [(st, e, s, b) for (st, e, s, _, b) in results if not 200 <= s < 300]
by = {}
for (_, _, s, _, _) in results: by[s] = by.get(s, 0) + 1
ends = [e for e, _ in ok]
gaps = [(b - a, a) for a, b in zip(ends, ends[1:]) if b > killed_at - 1]
gap, gap_at = max(gaps) if gaps else (float("nan"), 0)
slow = max(((e - st), st) for (st, e, s, _, _) in results if 200 <= s < 300)
print("answers by status: %s (of %d writes)" % (dict(sorted(by.items())), len(results)))
msgs = {}
for (_, _, s, b) in bad:
    try: m = json.loads(b)["error"]["message"][:90]
    except Exception: m = b[:90]
    msgs[(s, m)] = msgs.get((s, m), 0) + 1
for (s, m), n in sorted(msgs.items(), key=lambda kv: -kv[1]):
    print("  %5d x %d %s" % (n, s, m))
if bad:
    print("failures from %.2f s to %.2f s after the start (kill at %.2f s); first: %s"
          % (min(b[1] for b in bad), max(b[1] for b in bad), killed_at, bad[0][3][:200].decode(errors="replace")))
print("write outage: longest time without an acknowledged write %.2f s (from %.2f s); slowest acknowledged write %.2f s (sent at %.2f s)"
      % (gap, gap_at, slow[0], slow[1]))

# No acknowledged write lost: every 2xx cell is a wall on every replica.
last = 0
for (_, _, s, _, b) in results:
    if 200 <= s < 300: last = max(last, json.loads(b)["version"])
vers = [json.loads(b)["version"] for (_, _, s, _, b) in results if 200 <= s < 300]
print("acknowledged versions: %d, distinct: %d (a version acknowledged twice means two writes were given it)" % (len(vers), len(set(vers))))
missing = 0
for base in bases:
    for _ in range(300):
        s, body = req("GET", base + "/v1/maps/w?min_version=%d" % last)
        if s == 200: break
        time.sleep(0.1)
    print("%s: at version %s (newest acknowledged %d)" % (base, json.loads(body).get("version"), last))
    r = urllib.request.Request(base + "/v1/maps/w", headers={"accept": "text/plain"})
    with urllib.request.urlopen(r, timeout=30) as resp:
        rows = resp.read().decode().splitlines()[4:]
    lost = [c for _, c in ok if rows[c[1]][c[0]] != "@"]
    missing += len(lost)
    print("%s: %d acknowledged writes, %d missing%s" % (base, len(ok), len(lost), (" e.g. %s" % lost[:5]) if lost else ""))
sys.exit(1 if missing else 0)
EOF
echo "why the writes failed (replica logs):"
cat "$TMP"/pathd*.log | grep -E "not made durable|kept writing" | sed -E 's/^.*(error|message)=//' | cut -c1-110 | sort | uniq -c | sort -rn | head -8 || true
exit $RC
