#!/usr/bin/env bash
# Placement benchmark (issue 28): one nats-server with JetStream and three release pathd
# replicas with `--placement K` on loopback; MAPS generated maps of SIDE x SIDE (random
# walls, uniform octile, so each gets a JPS+ table, landmarks and a subgoal graph) uploaded
# through one replica. Prints, per replica: maps held, their cells, derived bytes (its own
# account) and RSS, once every map is held and its derived state built; then the holder
# of the most maps is killed with -9 and it prints how long until every map answered a
# query again through the survivors, and their RSS afterwards. With COMPARE=1 (default) it
# first runs one replica holding every map (`--placement all`, as before) for comparison.
# Env: MAPS=30 SIDE=1024 K=1 COMPARE=1 PLACED=1 (0: only the comparison); PATHD=path/to/pathd skips the release build (a
# build with the `nats` feature). Everything it starts is stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MAPS="${MAPS:-30}"
SIDE="${SIDE:-1024}"
K="${K:-1}"
COMPARE="${COMPARE:-1}"
PLACED="${PLACED:-1}"
./scripts/ensure-nats.sh >/dev/null
if [[ -z "${PATHD:-}" ]]; then
  cargo build --release --locked --features nats --bin pathd
  PATHD="${CARGO_TARGET_DIR:-$ROOT/target}/release/pathd"
fi
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "-"; }

echo "generating $MAPS maps of ${SIDE}x${SIDE}..."
mkdir -p "$TMP/maps" "$TMP/empty"
python3 - "$TMP/maps" "$MAPS" "$SIDE" <<'EOF'
import random, sys
out, n, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    rng = random.Random(i)
    rows = []
    for y in range(side):
        row = bytearray(b"." * side)
        for x in range(side):
            if rng.random() < 0.15:
                row[x] = ord("@")
        rows.append(row.decode())
    with open(f"{out}/bench-{i}.map", "w") as f:
        f.write(f"type octile\nheight {side}\nwidth {side}\nmap\n" + "\n".join(rows) + "\n")
EOF

# start_fleet N PLACEMENT: a fresh nats-server and N replicas; sets NATS_PID, PORTS, RPIDS.
start_fleet() {
  local n="$1" placement="$2" np
  np="$(free_port)"
  rm -rf "$TMP/js"
  "$NATS" -js -a 127.0.0.1 -p "$np" -sd "$TMP/js" >/dev/null 2>&1 &
  NATS_PID=$!
  disown
  PIDS+=("$NATS_PID")
  until (echo > "/dev/tcp/127.0.0.1/$np") 2>/dev/null; do sleep 0.05; done
  PORTS=()
  RPIDS=()
  for _ in $(seq "$n"); do
    local p
    p="$(free_port)"
    RUST_LOG=warn "$PATHD" --addr "127.0.0.1:$p" --maps-dir "$TMP/empty" \
      --data-dir "$TMP/data-$p" --store "nats://127.0.0.1:$np" --placement "$placement" \
      >/dev/null 2>&1 &
    RPIDS+=($!)
    PIDS+=($!)
    disown
    PORTS+=("$p")
  done
  for p in "${PORTS[@]}"; do
    until curl -sf "http://127.0.0.1:$p/readyz" >/dev/null; do sleep 0.1; done
  done
}

stop_fleet() {
  for p in "${RPIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  kill -9 "$NATS_PID" 2>/dev/null || true
  sleep 0.5
}

upload_all() {
  local t0 t1
  t0="$(now)"
  for i in $(seq 0 $((MAPS - 1))); do
    curl -sf -o /dev/null -X PUT -H 'content-type: text/plain' \
      --data-binary "@$TMP/maps/bench-$i.map" "http://127.0.0.1:${PORTS[0]}/v1/maps/bench-$i"
  done
  t1="$(now)"
  printf 'uploaded %d maps through one replica in %.1f s\n' "$MAPS" "$(echo "$t1 - $t0" | bc)"
}

# Sum over the replicas of (held maps, derived bytes): settles once no replica's figures
# changed for 5 s (every map held once and its derived state built).
fleet_figures() {
  for p in "$@"; do
    curl -sf "http://127.0.0.1:$p/healthz" | python3 -c '
import json, sys
h = json.load(sys.stdin)
p = h.get("cluster", {}).get("placement")
if p:
    print(len(p["held"]), p["derived_bytes"], end=" ")
else:
    print(h["maps"], end=" ")'
    # Without placement the health answer has no derived bytes: the gauge has them.
    curl -sf "http://127.0.0.1:$p/metrics" | awk '/^pathd_derived_resident_bytes / {printf "%s ", $2}'
  done
}

settle() {
  local last="" same=0 cur
  while true; do
    cur="$(fleet_figures "$@")"
    if [[ "$cur" == "$last" ]]; then
      same=$((same + 1))
      [[ $same -ge 10 ]] && return
    else
      same=0
      last="$cur"
    fi
    sleep 0.5
  done
}

cat > "$TMP/report.py" <<'EOF'
import json, sys
h = json.load(sys.stdin)
c = h.get("cluster", {})
p = c.get("placement")
rss = sys.argv[1]
if p:
    print("  replica %s: holds %2d maps (%.1f M cells), summaries only %2d, derived %7.1f MiB, RSS %s MiB"
          % (c["replica"], len(p["held"]), p["map_cells"] / 1e6, p["summaries_only"],
             p["derived_bytes"] / 2**20, rss))
else:
    print("  replica: holds %2d maps, derived %7.1f MiB, RSS %s MiB"
          % (h["maps"], float(sys.argv[2]) / 2**20, rss))
EOF

report() {
  local i=0
  for p in "$@"; do
    local pid="${RPIDS[$i]}"
    i=$((i + 1))
    [[ -e "/proc/$pid" ]] || continue
    local derived
    derived="$(curl -sf "http://127.0.0.1:$p/metrics" | awk '/^pathd_derived_resident_bytes / {print $2}')"
    curl -sf "http://127.0.0.1:$p/healthz" | python3 "$TMP/report.py" "$(rss_mib "$pid")" "${derived:-0}"
  done
}

# One query per map through the given ports, round-robin; prints how many answered 200.
query_all() {
  local ok=0 j=0 ports=("$@")
  for i in $(seq 0 $((MAPS - 1))); do
    local p="${ports[$((j % ${#ports[@]}))]}"
    j=$((j + 1))
    local s
    s="$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
      -d "{\"start\":[0,0],\"goal\":[$((SIDE - 1)),$((SIDE - 1))],\"algorithm\":\"astar\"}" \
      "http://127.0.0.1:$p/v1/maps/bench-$i/path")"
    # 200 (found) and 400 start/goal blocked both prove a holder answered.
    [[ "$s" == 200 || "$s" == 400 ]] && ok=$((ok + 1))
  done
  echo "$ok"
}

if [[ "$COMPARE" == 1 ]]; then
  echo "== one replica, --placement all: holds every map"
  start_fleet 1 all
  upload_all
  settle "${PORTS[@]}"
  report "${PORTS[@]}"
  stop_fleet
fi

[[ "$PLACED" == 1 ]] || exit 0
echo "== three replicas, --placement $K"
start_fleet 3 "$K"
sleep 3 # a heartbeat or two: every replica sees the whole membership
upload_all
settle "${PORTS[@]}"
report "${PORTS[@]}"
echo "  queries answered (one per map, round-robin over the replicas): $(query_all "${PORTS[@]}")/$MAPS"

# Kill -9 the holder of the most maps; time until every map answers through the others.
most=0
victim=0
for i in 0 1 2; do
  n="$(curl -sf "http://127.0.0.1:${PORTS[$i]}/healthz" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["cluster"]["placement"]["held"]))')"
  if [[ "$n" -gt "$most" ]]; then most="$n"; victim="$i"; fi
done
SURV=()
for i in 0 1 2; do [[ "$i" != "$victim" ]] && SURV+=("${PORTS[$i]}"); done
# Every map is asked through the survivors at once, each by its own poller (the same A*
# query, alternating survivors, 0.1 s apart while it fails): the time to a map's first
# answer (200 found, or 400 for blocked corners) after the kill is that map's recovery.
echo "== killing (-9) the holder of $most maps"
kill -9 "${RPIDS[$victim]}"
python3 - "$MAPS" "$SIDE" "${SURV[@]}" <<'PY'
import json, sys, threading, time, urllib.error, urllib.request
t0 = time.monotonic()
maps, side, ports = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
body = json.dumps({"start": [0, 0], "goal": [side - 1, side - 1], "algorithm": "astar"}).encode()
first = {}
def poll(i):
    k = i
    while time.monotonic() - t0 < 120:
        url = f"http://127.0.0.1:{ports[k % len(ports)]}/v1/maps/bench-{i}/path"
        k += 1
        req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        except Exception:
            status = 0
        if status in (200, 400):
            first[i] = time.monotonic() - t0
            return
        time.sleep(0.1)
threads = [threading.Thread(target=poll, args=(i,)) for i in range(maps)]
for t in threads: t.start()
for t in threads: t.join()
times = sorted(first.values())
if len(times) < maps:
    print(f"== {maps - len(times)} maps never answered within 120 s")
    sys.exit(1)
print(f"== after kill -9 of a holder: every map answered again through the survivors; "
      f"first answer per map p50 {times[len(times) // 2]:.1f} s, max {times[-1]:.1f} s "
      f"(maps that never moved answer at once)")
PY
settle "${SURV[@]}"
report "${PORTS[@]}"
stop_fleet
