#!/usr/bin/env bash
# Fan-out behind a load balancer (issue 28): one nats-server with JetStream, three release
# replicas (`--features nats`) sharing it, and a plain round-robin nginx in front of them,
# all on loopback. The fan-out client (examples/fanout.rs, as in scripts/fanout.sh) talks
# only to nginx: N subscriptions over GOALS goals, every event stream open (each lands on
# whichever replica nginx picks and is forwarded to the subscription's owner), one wall
# patch; it prints the time from sending the PATCH to each affected client's event (p50,
# p99, max) and the PATCH's own answer time. Before subscribing, the same kind of PATCH
# (one cell far from the paths) is timed REPEAT times through nginx on the map with no
# subscriptions: the baseline; and REPEAT times again with every subscription in place
# (FAR_PATCHES of the client). The wall itself is also PATCHed REPEAT times before any
# subscription (WALL_BASELINE of the client; each time opened again by an untimed PATCH),
# so the wall's answer with the subscriptions has a baseline of its own; after the measured
# wall, WALL_AGAIN (default 5) more walls with every subscription in place (each opened
# again, untimed, half a second between). At the end each replica's RSS and subscription
# memory.
#
#   N=10000 GOALS=100 SPREAD=200 MAP_FILE=../shared/benchmarks/movingai/maps/Berlin_1_1024.map \
#       scripts/fanout-lb.sh
#   PATHD_BIN=target/release/pathd scripts/fanout-lb.sh    # a build with the nats feature
# Needs nats-server and nginx (installed by scripts/ensure-nats.sh and ensure-nginx.sh).
# Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-1000}"
GOALS="${GOALS:-10}"
SPREAD="${SPREAD:-25}"
TIMEOUT="${TIMEOUT:-120}"
REPEAT="${REPEAT:-20}"
REPEAT=$(( (REPEAT + 1) / 2 * 2 ))
MAP_FILE="${MAP_FILE:-maps/den520d.map}"
MAP="$(basename "$MAP_FILE" .map)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

./scripts/ensure-nats.sh >/dev/null
./scripts/ensure-nginx.sh >/dev/null
if [ -z "${PATHD_BIN:-}" ]; then
  cargo build --release --locked --features nats --bin pathd
  PATHD_BIN="${CARGO_TARGET_DIR:-target}/release/pathd"
fi
cargo build --release --locked --features nats --example fanout
FANOUT="${CARGO_TARGET_DIR:-target}/release/examples/fanout"
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

tmp="$(mktemp -d)"
pids=()
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    for f in "$tmp"/nginx.log "$tmp"/r*.log; do
      [ -s "$f" ] && { echo "--- $(basename "$f") (last lines)"; tail -n 5 "$f"; }
    done
  fi
  # nginx first, with SIGTERM: its master then stops its workers, which a killed master
  # would leave running (and listening) as orphans.
  if [ -n "${ngx:-}" ]; then
    kill -TERM "$ngx" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$ngx" 2>/dev/null || break; sleep 0.1; done
  fi
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

np="$(free)"
"$NATS" -js -a 127.0.0.1 -p "$np" -sd "$tmp/js" >/dev/null 2>&1 &
pids+=($!)
mkdir -p "$tmp/maps"
ln -s "$(realpath "$MAP_FILE")" "$tmp/maps/"
ports=()
rpids=()
for i in 1 2 3; do
  p="$(free)"
  PATHD_MAX_SUBSCRIPTIONS="$N" PATHD_MAX_SUBSCRIPTIONS_PER_MAP="$N" \
  PATHD_MAX_SUBSCRIPTION_BYTES=1073741824 PATHD_MAX_SUBSCRIPTION_BYTES_PER_MAP=1073741824 \
  PATHD_MAX_CONNECTIONS="$((2 * N + 256))" PATHD_QUEUE_DEPTH=256 RUST_LOG=warn \
    "$PATHD_BIN" serve --addr "127.0.0.1:$p" --advertise-url "http://127.0.0.1:$p" \
    --maps-dir "$tmp/maps" --data-dir "$tmp/d$i" --store "nats://127.0.0.1:$np" \
    >"$tmp/r$i.log" 2>&1 &
  pids+=($!)
  rpids+=($!)
  ports+=("$p")
done
for p in "${ports[@]}"; do
  until curl -sf "http://127.0.0.1:$p/readyz" | python3 -c 'import json,sys; sys.exit(0 if len(json.load(sys.stdin)["cluster"]["members"]) == 3 else 1)' 2>/dev/null; do
    sleep 0.2
  done
done

lp="$(free)"
mkdir -p "$tmp/nginx"
user=""
[ "$(id -u)" = 0 ] && user="user root;"
# Each stream holds two sockets in nginx (the client's and the upstream's); one worker
# process holds at most the open-file limit, so the streams are spread over enough workers.
nofile="$(ulimit -n)"
workers=$(( (4 * N) / nofile + 1 ))
cat >"$tmp/nginx/nginx.conf" <<EOF
$user
worker_processes $workers;
worker_rlimit_nofile $nofile;
events { worker_connections $((nofile / 2)); }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  upstream pathd {
    server 127.0.0.1:${ports[0]};
    server 127.0.0.1:${ports[1]};
    server 127.0.0.1:${ports[2]};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$lp;
    location / {
      proxy_pass http://pathd;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_connect_timeout 1s;
    }
  }
}
EOF
"$NGINX" -p "$tmp/nginx" -e stderr -c "$tmp/nginx/nginx.conf" \
  -g "daemon off; pid $tmp/nginx/nginx.pid; error_log stderr;" 2>"$tmp/nginx.log" &
ngx=$!
pids+=($ngx)
BASE="http://127.0.0.1:$lp"
until curl -sf "$BASE/healthz" >/dev/null; do sleep 0.1; done
echo "== nats, three replicas (${ports[*]}) and nginx round-robin on $lp; map $MAP"

# The baseline: one-cell patches in a far corner through nginx, no subscriptions.
python3 - "$BASE" "$MAP" "$REPEAT" <<'PY'
import http.client, json, sys, time
base, name, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
host = base.split("//")[1]
info = json.load(__import__("urllib.request").request.urlopen(f"{base}/v1/maps/{name}"))
w, h = info["width"], info["height"]
cells = json.load(__import__("urllib.request").request.urlopen(f"{base}/v1/maps/{name}/cells"))
costs = __import__("base64").b64decode(cells["costs"])
def open_cell():
    for y in range(h - 1, -1, -1):
        for x in range(w - 1, -1, -1):
            if costs[y * w + x] > 0:
                return x, y
x, y = open_cell()
times = []
c = http.client.HTTPConnection(host)
for i in range(repeat):
    # A wall, then open again (an even count ends open): the map keeps costs 0 and 1 only,
    # so the fan-out client can still read it as a Moving AI file.
    body = json.dumps({"cells": [{"x": x, "y": y, "cost": i % 2}]})
    t = time.perf_counter()
    c.request("PATCH", f"/v1/maps/{name}", body, {"content-type": "application/json"})
    r = c.getresponse()
    r.read()
    times.append((time.perf_counter() - t) * 1e3)
    assert r.status == 200, r.status
times.sort()
print(f"== baseline, no subscriptions: PATCH of one cell through nginx, {repeat} times: "
      f"p50 {times[len(times) // 2]:.2f} ms, max {times[-1]:.2f} ms")
PY

WALL_AGAIN="${WALL_AGAIN:-5}" WALL_BASELINE="$REPEAT" FAR_PATCHES="$REPEAT" timeout "$((TIMEOUT * 4))" "$FANOUT" "$BASE" "$MAP" "$N" "$TIMEOUT" "$GOALS" "$SPREAD"
for i in 0 1 2; do
  rss="$(awk '/VmRSS/ {printf "%.0f MiB", $2/1024}' "/proc/${rpids[$i]}/status")"
  subs="$(curl -sf "http://127.0.0.1:${ports[$i]}/metrics" | awk '/^pathd_subscription_memory_bytes / {printf "%.1f MiB", $2/1048576}')"
  owned="$(curl -sf "http://127.0.0.1:${ports[$i]}/metrics" | awk '/^pathd_subscriptions / {print $2}')"
  echo "replica $((i + 1)): RSS $rss, subscription memory ${subs:-?}, subscriptions ${owned:-?}"
done
