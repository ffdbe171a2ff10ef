#!/usr/bin/env bash
# Build the pathd container image with buildah and prove it works: run the server inside it,
# wait for /readyz, run the image's own HEALTHCHECK, answer a real path query on a baked-in
# map (checked against a reference Dijkstra), upload a map into the /data volume, check the
# server runs as the image's non-root user, stop it with SIGTERM (graceful, exit 0), start it
# again on the same volume and find the uploaded map back.
#
# Usage: scripts/container-test.sh            (as root; CI runs it on a fresh machine)
# Env:   PATHD_IMAGE       image name to build       (default localhost/pathd:test)
#        PATHD_CT_HOSTNET  1 = skip the private network namespace and use a free
#                          127.0.0.1 port of the host instead
#        PATHD_CT_SOURCE   git work tree to build   (default: this repository)
#        KEEP_CONTEXT      1 = keep the temporary build context (debugging)
#
# No registry is reachable here, so the Dockerfile is built FROM local base images made by
# scripts/base-image.sh (debootstrap + the host's Rust toolchain), and crates are vendored
# on the host into the temporary build context, so the build itself is offline.
# Idempotent: base images and buildah's layer and cargo caches are reused; everything else
# (containers, network namespace, temp dirs, dangling images) is removed on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
SRC="$(cd "${PATHD_CT_SOURCE:-$ROOT}" && pwd)"
IMAGE="${PATHD_IMAGE:-localhost/pathd:test}"
T0="$(date +%s)"

log() { printf '[container-test %3ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
phase_start() { PHASE_T="$(date +%s)"; }
phase_end() { TIMINGS+=("$(printf '%-22s %4ss' "$1" "$(($(date +%s) - PHASE_T))")"); }
TIMINGS=()

[ "$(id -u)" = 0 ] || die "must run as root (buildah storage, chroot, network namespaces)"

ensure_tools() {
    local missing=()
    command -v buildah >/dev/null 2>&1 || missing+=(buildah)
    command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
    command -v jq >/dev/null 2>&1 || missing+=(jq)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v ss >/dev/null 2>&1 || missing+=(iproute2)
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" debian-archive-keyring ca-certificates >/dev/null
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo is needed on the host (vendoring crates, builder toolchain)"
}

# --- cleanup ---------------------------------------------------------------------------
TMP=""
CTRS=()
NETNS=""
SERVER_PID=""
RUN_PID=""
# The processes under one pid (buildah run -> its chroot helpers -> the server), by id.
descendants() {
    local kid
    for kid in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        printf '%s ' "$kid"
        descendants "$kid"
    done
}

cleanup() {
    local rc=$?
    trap - ERR
    trap '' INT TERM # finish cleaning up even if signalled again
    # A failed check leaves the server up: end it without judging how it stops.
    if [ -n "$RUN_PID" ]; then
        local tree
        tree="$(descendants "$RUN_PID")"
        [ -z "$SERVER_PID" ] || kill -TERM "$SERVER_PID" 2>/dev/null || true
        sleep 1
        # shellcheck disable=SC2086
        kill -KILL $tree "$RUN_PID" 2>/dev/null || true
        wait "$RUN_PID" 2>/dev/null || true
    fi
    for c in "${CTRS[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
    if [ -n "$NETNS" ]; then ip netns delete "$NETNS" 2>/dev/null || true; fi
    if [ -n "$TMP" ] && [ "${KEEP_CONTEXT:-0}" != 1 ]; then rm -rf --one-file-system "$TMP"; fi
    # Superseded builds leave untagged images behind; with the vfs driver each is a full copy.
    buildah rmi --prune >/dev/null 2>&1 || true
    if [ "$rc" = 0 ]; then log "PASS"; else log "FAILED (exit $rc)"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'log "FAIL: command failed at line $LINENO: $BASH_COMMAND"' ERR
set -E

# --- build -------------------------------------------------------------------------------
# The build context is the working tree as git sees it (tracked and untracked-but-not-ignored
# files; .dockerignore then trims it), plus vendored crates and a cargo config that uses them.
make_context() {
    local ctx="$TMP/context"
    mkdir -p "$ctx/.cargo"
    (cd "$SRC" && git ls-files -z -co --exclude-standard --deduplicate \
        | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf -) | tar -C "$ctx" -xf -
    (cd "$ctx" && cargo vendor --locked --versioned-dirs -q vendor >/dev/null) \
        || die "cargo vendor failed (is Cargo.lock up to date?)"
    cat >"$ctx/.cargo/config.toml" <<'EOF'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"
EOF
    printf '%s\n' "$ctx"
}

build_image() {
    local ctx="$1" names runtime builder
    names="$("$ROOT/scripts/base-image.sh" --print-names)"
    runtime="$(sed -n 's/^RUNTIME=//p' <<<"$names")"
    builder="$(sed -n 's/^BUILDER=//p' <<<"$names")"
    log "building $IMAGE (log: $TMP/build.log)"
    if ! buildah bud --layers --format docker \
        --build-arg "BUILDER_IMAGE=$builder" --build-arg "RUNTIME_IMAGE=$runtime" \
        -f "$ROOT/Dockerfile" -t "$IMAGE" "$ctx" >"$TMP/build.log" 2>&1; then
        tail -n 40 "$TMP/build.log" >&2
        die "image build failed"
    fi
    # Keep the builder stage's last layer tagged: untagged, it would be pruned as dangling and
    # the next build would copy the toolchain rootfs and re-run cargo even for the same sources.
    local stage_id
    stage_id="$(awk '
        match($0, /^\[1\/[0-9]+\] STEP [0-9]+\/[0-9]+:/) {
            split(substr($0, RSTART, RLENGTH), a, /[ \/:]/); last = (a[4] == a[5]) }
        last && /^--> [0-9a-f]+$/ { print $2; exit }' "$TMP/build.log")"
    if [ -n "$stage_id" ]; then buildah tag "$stage_id" "$BUILD_CACHE_TAG" >/dev/null 2>&1 || true; fi
}
BUILD_CACHE_TAG=localhost/pathd-build-cache:latest

# --- image metadata --------------------------------------------------------------------
check_metadata() {
    local cfg
    cfg="$(buildah inspect --type image "$IMAGE" | jq '.Docker.config')"
    IMG_USER="$(jq -r '.User // ""' <<<"$cfg")"
    case "${IMG_USER%%:*}" in ""|0|root) die "image runs as root (User=\"$IMG_USER\")" ;; esac
    jq -e '.ExposedPorts | has("8080/tcp")' <<<"$cfg" >/dev/null || die "EXPOSE 8080 missing"
    jq -e '.Volumes | has("/data")' <<<"$cfg" >/dev/null || die "VOLUME /data missing"
    jq -e '.Env | index("PATHD_DATA_DIR=/data")' <<<"$cfg" >/dev/null || die "PATHD_DATA_DIR is not /data"
    jq -e '.Healthcheck.Test | length > 1' <<<"$cfg" >/dev/null || die "HEALTHCHECK missing"
    mapfile -t SERVE_CMD < <(jq -r '(.Entrypoint // []) + (.Cmd // []) | .[]' <<<"$cfg")
    [ "${#SERVE_CMD[@]}" -gt 0 ] || die "image has neither ENTRYPOINT nor CMD"
    # ["CMD", argv...] runs argv; ["CMD-SHELL", "cmd"] runs it with /bin/sh -c.
    mapfile -t HEALTH_CMD < <(jq -r '.Healthcheck.Test
        | if .[0] == "CMD-SHELL" then ["/bin/sh", "-c", .[1]] else .[1:] end | .[]' <<<"$cfg")
    log "image: user=$IMG_USER cmd=[${SERVE_CMD[*]}] healthcheck=[${HEALTH_CMD[*]}]"
}

# --- running the server ------------------------------------------------------------------
# The server runs with the image's own ENTRYPOINT/CMD, environment and user, in a network
# namespace of its own (only a loopback interface), so the image's PATHD_ADDR 0.0.0.0:8080
# and its HEALTHCHECK are exercised unchanged and nothing on the host's ports can collide.
NSEXEC=()
PORT=8080
setup_network() {
    if [ "${PATHD_CT_HOSTNET:-0}" != 1 ]; then
        NETNS="pathd-ct-$$"
        if ip netns add "$NETNS" 2>/dev/null && ip -n "$NETNS" link set lo up; then
            NSEXEC=(ip netns exec "$NETNS")
            log "network namespace $NETNS (server on its 127.0.0.1:8080)"
            return
        fi
        ip netns delete "$NETNS" 2>/dev/null || true
        NETNS=""
        log "no network namespace available; using a free host loopback port"
    fi
    PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    RUN_ENV+=(--env "PATHD_ADDR=127.0.0.1:$PORT")
}
RUN_ENV=()

hcurl() { "${NSEXEC[@]}" curl -sS --max-time 10 "$@"; }
url() { printf 'http://127.0.0.1:%s%s' "$PORT" "$1"; }

# Sets CTR (not printed: a command substitution would lose the CTRS bookkeeping).
new_container() {
    CTR="$(buildah from --quiet --pull-never "$IMAGE")"
    CTRS+=("$CTR")
}

start_server() {
    local ctr="$1" logf="$2"
    "${NSEXEC[@]}" buildah run --isolation chroot "${RUN_ENV[@]}" "$ctr" -- "${SERVE_CMD[@]}" >"$logf" 2>&1 &
    RUN_PID=$!
    local i
    for i in $(seq 1 300); do
        if ! kill -0 "$RUN_PID" 2>/dev/null; then
            tail -n 30 "$logf" >&2; RUN_PID=""; die "server exited during start"
        fi
        if [ "$(hcurl -o /dev/null -w '%{http_code}' "$(url /readyz)" 2>/dev/null)" = 200 ]; then
            SERVER_PID="$("${NSEXEC[@]}" ss -Hltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2)"
            [ -n "$SERVER_PID" ] || die "ready, but no process found listening on :$PORT"
            log "ready after $((i / 10)).$((i % 10))s (pid $SERVER_PID)"
            return
        fi
        sleep 0.1
    done
    tail -n 30 "$logf" >&2
    die "/readyz did not answer 200 within 30s"
}

# SIGTERM must drain and exit 0; buildah run passes the server's exit status through.
stop_server() {
    [ -n "$RUN_PID" ] || return 0
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
    local i rc=0
    for i in $(seq 1 150); do kill -0 "$RUN_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$RUN_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" "$RUN_PID" 2>/dev/null || true
        wait "$RUN_PID" 2>/dev/null || true
        RUN_PID=""; SERVER_PID=""
        die "server did not stop within 15s of SIGTERM"
    fi
    wait "$RUN_PID" || rc=$?
    RUN_PID=""; SERVER_PID=""
    [ "$rc" = 0 ] || die "server exited with status $rc after SIGTERM"
    log "stopped gracefully (exit 0)"
}

# --- checks ----------------------------------------------------------------------------
# Reference for the path check: parse the Moving AI map, pick a start and a far goal in its
# largest component, and compute the optimal octile cost (no corner cutting) with Dijkstra.
PYREF='
import heapq, json, math, sys
def load(path):
    lines = open(path).read().splitlines()
    i = lines.index("map")
    rows = [r for r in lines[i + 1:] if r]
    return [[c in ".GS" for c in r] for r in rows]
def nbrs(g, x, y):
    H, W = len(g), len(g[0])
    for dx, dy in ((1,0),(-1,0),(0,1),(0,-1),(1,1),(1,-1),(-1,1),(-1,-1)):
        nx, ny = x + dx, y + dy
        if 0 <= nx < W and 0 <= ny < H and g[ny][nx]:
            if dx and dy and not (g[y][nx] and g[ny][x]):
                continue
            yield nx, ny, (math.sqrt(2) if dx and dy else 1.0)
def dijkstra(g, s, goal=None):
    dist = {s: 0.0}; pq = [(0.0, s)]
    while pq:
        d, p = heapq.heappop(pq)
        if d > dist[p]: continue
        if p == goal: return dist
        for nx, ny, c in nbrs(g, *p):
            nd = d + c
            if nd < dist.get((nx, ny), math.inf):
                dist[(nx, ny)] = nd; heapq.heappush(pq, (nd, (nx, ny)))
    return dist
g = load(sys.argv[2])
if sys.argv[1] == "pick":
    seen, best = set(), []
    for y, row in enumerate(g):
        for x, ok in enumerate(row):
            if ok and (x, y) not in seen:
                comp, stack = [], [(x, y)]; seen.add((x, y))
                while stack:
                    p = stack.pop(); comp.append(p)
                    for nx, ny, _ in nbrs(g, *p):
                        if (nx, ny) not in seen: seen.add((nx, ny)); stack.append((nx, ny))
                if len(comp) > len(best): best = comp
    s = min(best)
    d = dijkstra(g, s)
    goal = max(d, key=lambda p: (d[p], p))
    print(json.dumps({"start": list(s), "goal": list(goal), "optimal": d[goal]}))
else:
    q = json.loads(sys.argv[3]); r = json.loads(sys.stdin.read())
    err = lambda m: sys.exit("bad answer: " + m)
    if r.get("status") != "found": err("status %r" % r.get("status"))
    path = [tuple(p) for p in r["path"]]
    if path[0] != tuple(q["start"]) or path[-1] != tuple(q["goal"]): err("path ends")
    cost = 0.0
    for a, b in zip(path, path[1:]):
        step = {(nx, ny): c for nx, ny, c in nbrs(g, *a)}.get(b)
        if step is None: err("illegal step %s -> %s" % (a, b))
        cost += step
    if abs(cost - r["cost"]) > 1e-6 * max(1, cost): err("cost %s but path costs %s" % (r["cost"], cost))
    if abs(cost - q["optimal"]) > 1e-6 * max(1, cost): err("cost %s, optimum %s" % (cost, q["optimal"]))
    print("path of %d cells, cost %.4f = optimum" % (len(path), cost))
'

# The smallest bundled map keeps the Python reference quick.
pick_map() {
    local names name f best="" best_cells=0 cells
    names="$(hcurl -f "$(url /v1/maps)" | jq -r '(if type == "array" then . else .maps end) | .[].name')" \
        || die "GET /v1/maps failed"
    [ -n "$names" ] || die "GET /v1/maps lists no maps"
    for name in $names; do
        f="$SRC/maps/$name.map"
        [ -f "$f" ] || continue
        # Header lines may end in CRLF (Berlin_0_256 does).
        cells="$(awk '{sub(/\r$/, "")} /^height /{h=$2} /^width /{w=$2} /^map/{print h*w; exit}' "$f")"
        [[ "$cells" =~ ^[0-9]+$ ]] || die "cannot read the size of $f"
        if [ -z "$best" ] || [ "$cells" -lt "$best_cells" ]; then best="$name"; best_cells="$cells"; fi
    done
    [ -n "$best" ] || die "none of the served maps ($names) is a file in maps/"
    MAP_NAME="$best"
}

check_baked_maps() {
    local ctr="$1" mnt f
    mnt="$(buildah mount "$ctr")"
    for f in "$SRC"/maps/*.map; do
        cmp -s "$f" "$mnt/srv/pathd/maps/$(basename "$f")" || { buildah umount "$ctr" >/dev/null; die "$(basename "$f") is not baked into the image"; }
    done
    buildah umount "$ctr" >/dev/null
}

# buildah 1.28 must not run two commands in one working container at once (the second one's
# teardown unmounts the first's rootfs), so the image user's uid is read before the server
# starts, and the health check runs in a second container of the same image.
image_uid() { IMG_UID="$(buildah run "$1" -- id -u)"; }

# The image is built with the `nats` and `http2` features (the Dockerfile's --features
# nats,http2), so it can run as a replica (--store nats://...) and speaks h2c.
check_features() {
    local v
    v="$(buildah run "$1" -- /usr/local/bin/pathd --version)" || die "pathd --version failed"
    case "$v" in *"with nats"*) ;; *) die "the image's pathd has no NATS support: $v" ;; esac
    case "$v" in *"with http2"*) ;; *) die "the image's pathd has no HTTP/2 support: $v" ;; esac
    log "image binary: $v"
}

check_user() {
    local uid
    uid="$(awk '/^Uid:/{print $2}' "/proc/$SERVER_PID/status")"
    [ "$uid" != 0 ] || die "server process runs as root"
    [ "$uid" = "$IMG_UID" ] || die "server uid $uid is not the image user's uid $IMG_UID"
    log "server runs as uid $uid ($IMG_USER), not root"
}

check_health() {
    [ "$(hcurl "$(url /healthz)" -o /dev/null -w '%{http_code}')" = 200 ] || die "/healthz is not 200"
    if [ "$PORT" = 8080 ]; then
        "${NSEXEC[@]}" buildah run --isolation chroot "$1" -- "${HEALTH_CMD[@]}" >/dev/null \
            || die "the image's HEALTHCHECK command failed against the running server"
        log "HEALTHCHECK command passes inside the container"
    else
        log "HEALTHCHECK not run verbatim (host port $PORT, not 8080)"
    fi
}

check_path() {
    local q body
    q="$(python3 -c "$PYREF" pick "$SRC/maps/$MAP_NAME.map")"
    body="$(jq -c '{start, goal, algorithm: "astar"}' <<<"$q")"
    log "POST /v1/maps/$MAP_NAME/path $body"
    hcurl -f -H 'Content-Type: application/json' -d "$body" "$(url "/v1/maps/$MAP_NAME/path")" >"$TMP/answer.json" \
        || die "path query failed: $(cat "$TMP/answer.json" 2>/dev/null)"
    python3 -c "$PYREF" check "$SRC/maps/$MAP_NAME.map" "$q" <"$TMP/answer.json" >"$TMP/check.txt" \
        || die "path answer rejected: $(head -c 400 "$TMP/answer.json")"
    log "answer: $(jq -c '{status, cost, algorithm, map_version}' "$TMP/answer.json"); $(cat "$TMP/check.txt")"
}

UPLOAD=ct-upload
upload_map() {
    printf 'type octile\nheight 3\nwidth 5\nmap\n.....\n.@@@.\n.....\n' >"$TMP/upload.map"
    local code
    code="$(hcurl -o "$TMP/upload.json" -w '%{http_code}' -X PUT -H 'Content-Type: text/plain' \
        --data-binary "@$TMP/upload.map" "$(url "/v1/maps/$UPLOAD")")"
    [ "$code" = 201 ] || die "PUT /v1/maps/$UPLOAD answered $code: $(cat "$TMP/upload.json")"
    UPLOAD_VERSION="$(jq -c .version "$TMP/upload.json")"
    # buildah run backs an image VOLUME with a directory of the working container's own (a -v
    # bind onto /data is overridden by it); it lives on across runs of the same container.
    local graph cid found
    graph="$(buildah info | jq -r '.store.GraphRoot')"
    cid="$(buildah inspect --type container "$CTR" | jq -r '.ContainerID')"
    found="$(find "$graph" -path "*/$cid/userdata/buildah-volumes/*" -type f -print -quit)"
    [ -n "$found" ] || die "upload left nothing in the /data volume"
    log "uploaded $UPLOAD (version $UPLOAD_VERSION) into the /data volume"
}

check_upload_back() {
    hcurl -f "$(url "/v1/maps/$UPLOAD")" >"$TMP/back.json" || die "uploaded map missing after restart"
    [ "$(jq -c .version "$TMP/back.json")" = "$UPLOAD_VERSION" ] || die "uploaded map came back with another version"
    log "uploaded map is back after restart (version $UPLOAD_VERSION)"
}

# --- main ------------------------------------------------------------------------------
main() {
    ensure_tools
    TMP="$(mktemp -d /var/tmp/pathd-ct.XXXXXX)"

    phase_start
    "$ROOT/scripts/base-image.sh"
    phase_end "base images"

    phase_start
    local ctx
    ctx="$(make_context)"
    phase_end "context + vendoring"

    phase_start
    build_image "$ctx"
    phase_end "image build"
    log "built $IMAGE ($(buildah images --format '{{.Size}}' "$IMAGE" | head -n1))"

    phase_start
    check_metadata
    local ctr hc
    new_container
    hc="$CTR"
    new_container
    ctr="$CTR"
    check_baked_maps "$ctr"
    image_uid "$ctr"
    check_features "$ctr"
    setup_network

    start_server "$ctr" "$TMP/server1.log"
    check_user "$ctr"
    check_health "$hc"
    pick_map
    check_path
    upload_map
    stop_server

    start_server "$ctr" "$TMP/server2.log"
    check_upload_back
    stop_server
    phase_end "run checks"
    phase_start

    log "timings (cleanup follows):"
    for t in "${TIMINGS[@]}"; do log "  $t"; done
    log "  total                  $(($(date +%s) - T0))s"
}

main "$@"
