#!/usr/bin/env bash
# pathd beside warthog (../shared/peers/side-by-side.sh) on evenly spread samples of the
# Moving AI scenario files, for one or more pathd binaries in one run, so that a before/after
# comparison is taken under the same (shared, noisy) machine conditions.
#
# Why samples: the full files take about 40 minutes per binary on a loaded 2-core machine
# (maze512-1-0 has 11960 rows, and every A* row on Berlin_1_1024 takes ~0.1 s in each
# planner); every k-th row keeps all buckets, short and long, represented. ROWS=0 runs the
# whole files.
#
# Usage: scripts/side-by-side-sample.sh [ROWS] PATHD_BIN...
#   ROWS   rows per map (default 250)
#   MAPS   environment: maps to run (default: arena2 16room_000 maze512-1-0 random512-20-0
#          Berlin_1_1024)
#   REPEAT environment: rounds per map (default 1); above 1 a last table gives each
#          column's fastest round
# Compare the columns of one table (one binary's run), never absolute figures across runs.
# pd_jps+ is pathd's JPS+ (`pathd scen --algorithm jps_plus`) and pd_subgoal its subgoal graph
# (`--algorithm subgoal`), run right after the other columns of the same map.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
peers=$root/../shared/peers
bench=${PATHD_BENCHMARKS:-$root/../shared/benchmarks/movingai}
rows=250
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
  rows=$1
  shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [ROWS] PATHD_BIN..." >&2; exit 2; }
maps=${MAPS:-"arena2 16room_000 maze512-1-0 random512-20-0 Berlin_1_1024"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pairs=()
for m in $maps; do
  scen=$bench/scen/$m.map.scen
  if [ "$rows" -gt 0 ]; then
    total=$(($(wc -l <"$scen") - 1))
    step=$((total / rows > 0 ? total / rows : 1))
    # The header line, then every step-th row (from the middle of the first step).
    awk -v s="$step" 'NR == 1 {print; next} (NR - 2) % s == int(s / 2)' "$scen" >"$tmp/$m.map.scen"
    scen=$tmp/$m.map.scen
  fi
  pairs+=("$bench/maps/$m.map:$scen")
done
# pathd's JPS+ (jump table built before the rows and not timed, as warthog's jps+ does),
# for binaries that have it; "-" for those that do not.
jps_plus() {
  "$1" scen "$2" "$3" --algorithm jps_plus --json 2>/dev/null | python3 -c 'import json,sys
lines = sys.stdin.read().strip().splitlines()
d = json.loads(lines[-1]) if lines else None
print("-" if d is None else "%.1f%s" % (d["mean_us"], "" if d["matched"] == d["rows"] else "(!%d/%d)" % (d["matched"], d["rows"])))' || echo -
}
# pathd's subgoal graph (`--algorithm subgoal`, built before the rows and not timed), for
# binaries that have it; "-" for those that do not.
subgoal() {
  "$1" scen "$2" "$3" --algorithm subgoal --json 2>/dev/null | python3 -c 'import json,sys
lines = sys.stdin.read().strip().splitlines()
d = json.loads(lines[-1]) if lines else None
print("-" if d is None else "%.1f%s" % (d["mean_us"], "" if d["matched"] == d["rows"] else "(!%d/%d)" % (d["matched"], d["rows"])))' || echo -
}
# Map by map, every binary in turn (each with its own warthog columns), so that the binaries'
# rows of one map are measured minutes apart, not a whole table apart. With REPEAT=N (> 1)
# each map's rounds run N times in a row and every column, pathd's and warthog's alike, is
# the fastest of its N figures: on a shared machine a column measured while a neighbour is
# busy can come out 2x slow, and the minimum is the figure least touched by that. The
# rounds' own figures are printed first.
repeat=${REPEAT:-1}
header() {
  printf "%-16s %9s %9s %9s %9s %9s %9s %9s %9s %10s  %s\n" map pd_astar wh_astar pd_jps wh_jps wh_jps2 wh_jps+ wh_jps2+ pd_jps+ pd_subgoal "$1"
}
header "binary ($rows rows per map)"
for pair in "${pairs[@]}"; do
  for ((r = 1; r <= repeat; r++)); do
    for bin in "$@"; do
      line=$("$peers/side-by-side.sh" "$bin" "$pair" | tail -n +2)
      jp=$(jps_plus "$bin" "${pair%%:*}" "${pair#*:}")
      sg=$(subgoal "$bin" "${pair%%:*}" "${pair#*:}")
      printf "%s %9s %10s  %s\n" "$line" "$jp" "$sg" "$bin" | tee -a "$tmp/rounds"
    done
  done
done
if [ "$repeat" -gt 1 ]; then
  echo
  header "binary (fastest of $repeat rounds per column)"
  python3 - "$tmp/rounds" <<'PY'
import sys
best, order = {}, []
for line in open(sys.argv[1]):
    f = line.split()
    key = (f[0], f[10])
    if key not in best:
        best[key] = [None] * 9
        order.append(key)
    for i, v in enumerate(f[1:10]):
        try:
            x = float(v)
        except ValueError:  # a mismatch flag or "-": shown as is
            best[key][i] = v
            continue
        b = best[key][i]
        if b is None or isinstance(b, float) and x < b:
            best[key][i] = x
for key in order:
    cols = ["%.1f" % v if isinstance(v, float) else str(v) for v in best[key]]
    print("%-16s %s %10s  %s" % (key[0], " ".join("%9s" % c for c in cols[:8]), cols[8], key[1]))
PY
fi
