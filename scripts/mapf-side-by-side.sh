#!/usr/bin/env bash
# Runs `pathd mapf` and LaCAM3 on the same MAPF benchmark instances, one after the other in
# one run (interleaved per instance, so both see the same machine load), and prints a
# table: solved?, time to the first solution, sum of costs / lower bound at the limit.
# Every plan is checked by LaCAM3's independent checker `validate`, which also recomputes
# the sum of costs and the lower bound that the ratio uses.
#
#   scripts/mapf-side-by-side.sh [PATHD_BIN] [MAP:N ...]
#
# PATHD_BIN defaults to target/release/pathd (build it with `cargo build --release`).
# Instances default to the issue's list. Environment: TIME_S (limit, whole seconds, default
# 10), SCEN (which `<map>-random-K.scen`, default 1), BENCH (default
# ../shared/benchmarks/movingai), LACAM3_DIR (default ../shared/peers/lacam3), OUT (where
# the plans go, default a temporary directory). Both solvers run on one thread: pathd's
# solve is single-threaded, LaCAM3 gets --no-multi-thread.
set -euo pipefail
cd "$(dirname "$0")/.."
PATHD=${1:-target/release/pathd}
shift || true
TIME_S=${TIME_S:-10}
SCEN=${SCEN:-1}
BENCH=${BENCH:-../shared/benchmarks/movingai}
LACAM3_DIR=${LACAM3_DIR:-../shared/peers/lacam3}
OUT=${OUT:-$(mktemp -d)}
if [ $# -eq 0 ]; then
    set -- random-32-32-10:100 random-32-32-10:200 random-32-32-10:400 \
        warehouse-10-20-10-2-1:200 warehouse-10-20-10-2-1:500 \
        den520d:500 den520d:1000 room-32-32-4:200 Berlin_1_256:1000
fi
for f in "$PATHD" "$LACAM3_DIR/lacam3" "$LACAM3_DIR/validate"; do
    [ -x "$f" ] || { echo "missing $f" >&2; exit 2; }
done

# `validate`'s verdict on a result file: "soc lb" or "invalid(<reason>)".
check() {
    local v
    v=$("$LACAM3_DIR/validate" "$1" "$2" "$3" "$4" 2>&1 || true)
    if [[ $v == valid=1* ]]; then
        python3 -c 'import sys; kv=dict(x.split("=") for x in sys.argv[1].split()); print(kv["soc"], kv["soc_lb"])' "$v"
    else
        echo "invalid(${v//[[:space:]]/_})"
    fi
}

ratio() { python3 -c 'import sys; s,l=map(int,sys.argv[1:3]); print(f"{s/l:.3f}")' "$1" "$2"; }

printf '| map | N | pathd solved | pathd first (ms) | pathd SOC/LB | LaCAM3 solved | LaCAM3 first (ms) | LaCAM3 SOC/LB |\n'
printf '|---|---:|---|---:|---:|---|---:|---:|\n'
for inst in "$@"; do
    map=${inst%%:*}
    n=${inst##*:}
    m="$BENCH/maps/$map.map"
    s="$BENCH/scen/$map-random-$SCEN.scen"
    # pathd
    pj="$OUT/$map-$n.pathd.json"
    pp="$OUT/$map-$n.pathd.txt"
    "$PATHD" mapf "$m" "$s" -N "$n" --time-limit-ms $((TIME_S * 1000)) --no-paths --plan-out "$pp" >"$pj" 2>/dev/null || true
    read -r p_status p_first < <(python3 -c 'import json,sys
try:
    v=json.load(open(sys.argv[1])); f=v["first_solution_ms"]
    print(v["status"], "-" if f is None else f"{f:.0f}")
except Exception: print("error -")' "$pj")
    p_ratio=-
    if [ "$p_status" = solved ]; then
        c=$(check "$m" "$s" "$n" "$pp")
        if [[ $c == invalid* ]]; then p_status="INVALID"; p_ratio=$c; else p_ratio=$(ratio $c); fi
    fi
    # LaCAM3
    lo="$OUT/$map-$n.lacam3.txt"
    "$LACAM3_DIR/lacam3" -m "$m" -i "$s" -N "$n" -t "$TIME_S" -v 0 --no-multi-thread -o "$lo" >/dev/null 2>&1 || true
    l_status=failed l_first=- l_ratio=-
    if grep -q '^solved=1' "$lo" 2>/dev/null; then
        l_status=solved
        l_first=$(sed -n 's/^comp_time_initial_solution=//p' "$lo")
        c=$(check "$m" "$s" "$n" "$lo")
        if [[ $c == invalid* ]]; then l_status="INVALID"; l_ratio=$c; else l_ratio=$(ratio $c); fi
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$map" "$n" "$p_status" "$p_first" "$p_ratio" "$l_status" "$l_first" "$l_ratio"
done
echo "(plans and answers in $OUT; limit ${TIME_S} s; scenario random-$SCEN)"
