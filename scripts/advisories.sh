#!/usr/bin/env bash
# Known advisories against every dependency the project ships or the test run installs
# (issue 24). Fails on any advisory that applies; informational ones (unmaintained,
# unsound) are warnings. Logic and unit tests in scripts/advisories.py.
#   Rust:   every [[package]] of Cargo.lock against RustSec: the live rustsec/advisory-db
#           (git, cached under ~/.cache/pathd/advisory-db) when github.com answers, else the
#           snapshot security/rustsec-snapshot.json (see security/README.md), where a crate
#           the snapshot never looked up fails as "not covered";
#   npm:    `npm audit` (all dependencies, dev included, --audit-level=low) of each
#           package-lock.json (clients/ts, clients/wasm);
#   Python: what scripts/*.sh and clients/python pip-install, resolved in a throwaway venv
#           under /tmp (plus the versions already installed, which those scripts keep),
#           through pip-audit with PyPI's vulnerability data;
#   Go:     clients/go/go.mod's requirements (govulncheck if vuln.go.dev answers).
# An ecosystem whose advisory service cannot be reached is reported UNCHECKED in the
# summary; PATHD_ADVISORIES_STRICT=1 makes that fail too. Installs what is missing (git,
# nodejs/npm with apt-get, pip-audit from PyPI into the throwaway venv).
#   scripts/advisories.sh               # everything
#   scripts/advisories.sh rust npm      # some of the stages (rust npm python go)
#   scripts/advisories.sh --self-test   # only the checker's own tests
#   PATHD_ADVISORIES_OFFLINE=1 ...      # use the snapshot without trying github.com
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --self-test ]; then exec python3 scripts/advisories.py self-test; fi
# The checker's own tests first (a fake affected lock entry must fail, a patched one
# pass, the range matcher's edge cases): a green run below means something.
python3 scripts/advisories.py self-test -q 2>/dev/null || {
  python3 scripts/advisories.py self-test
  exit 1
}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
tmp="$(mktemp -d /tmp/pathd-advisories.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

failed=0
unchecked=0
summary=()
# Runs a checker, prints its output, keeps its last line for the summary; exit 1 is a
# finding, 2 an unreachable service.
record() {
  local out rc=0
  out="$("$@")" || rc=$?
  [ -z "$out" ] || printf '%s\n' "$out"
  summary+=("$(printf '%s\n' "$out" | tail -n 1)")
  case $rc in 0) ;; 2) unchecked=1 ;; *) failed=1 ;; esac
}

stage_rust() {
  command -v git >/dev/null || { echo "[advisories] installing git (apt-get)" >&2; apt_install git; }
  local url=${PATHD_ADVISORY_DB_URL:-https://github.com/rustsec/advisory-db}
  local dir=${PATHD_ADVISORY_DB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pathd/advisory-db}
  local args=(--snapshot security/rustsec-snapshot.json) why=""
  if [ "${PATHD_ADVISORIES_OFFLINE:-0}" = 1 ]; then
    why="PATHD_ADVISORIES_OFFLINE=1"
  elif ! timeout 15 git ls-remote "$url" HEAD >/dev/null 2>&1; then
    why="$url unreachable"
  else
    if [ -d "$dir/.git" ]; then
      git -C "$dir" remote set-url origin "$url" &&
        timeout 120 git -C "$dir" fetch -q --depth 1 origin HEAD && git -C "$dir" reset -q --hard FETCH_HEAD
    else
      rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && timeout 120 git clone -q --depth 1 "$url" "$dir"
    fi && args=(--db-dir "$dir" --source-label "live $url at $(git -C "$dir" log -1 --format='%h of %cs')") ||
      why="fetching $url failed"
  fi
  [ -z "$why" ] || echo "advisories rust: $why: using the snapshot security/rustsec-snapshot.json"
  record python3 scripts/advisories.py rust --lock Cargo.lock "${args[@]}"
}

stage_npm() {
  command -v npm >/dev/null || { echo "[advisories] installing nodejs and npm (apt-get)" >&2; apt_install nodejs npm; }
  local lock dir locks
  locks=$(git ls-files '*package-lock.json' 2>/dev/null ||
    find . -name package-lock.json -not -path '*/node_modules/*' -not -path './target/*')
  [ -n "$locks" ] || { summary+=("advisories npm: no package-lock.json found"); return; }
  for lock in $locks; do
    dir=$(dirname "$lock")
    # --package-lock-only: audit the lockfile as CI installs it, node_modules or not.
    (cd "$dir" && timeout 180 npm audit --json --package-lock-only --audit-level=low) >"$tmp/npm.json" 2>/dev/null || true
    record python3 scripts/advisories.py npm-report "$dir" "$tmp/npm.json"
  done
}

stage_python() {
  python3 -m venv "$tmp/venv" 2>/dev/null || {
    echo "[advisories] installing python3-venv (apt-get)" >&2
    apt_install python3-venv
    python3 -m venv "$tmp/venv"
  }
  local pip="$tmp/venv/bin/pip" specs
  mapfile -t specs < <(python3 scripts/advisories.py pip-specs .)
  echo "advisories python: requirements of scripts/*.sh and clients/python: ${specs[*]}"
  # What a fresh install of those requirements resolves to (no install: pip's report).
  "$pip" install -q --disable-pip-version-check --dry-run --ignore-installed \
    --report "$tmp/report.json" "${specs[@]}"
  python3 -m pip list --disable-pip-version-check --format=json >"$tmp/installed.json" 2>/dev/null ||
    echo '[]' >"$tmp/installed.json"
  python3 scripts/advisories.py pip-pins "$tmp/report.json" "$tmp/installed.json" "$tmp"
  "$pip" install -q --disable-pip-version-check pip-audit
  # Exactly the pinned versions (--no-deps --disable-pip: no second resolution); one run
  # per list, as a requirements file takes one version of a name.
  local list reports=()
  for list in resolved installed; do
    [ -s "$tmp/$list.txt" ] || continue
    "$tmp/venv/bin/pip-audit" -r "$tmp/$list.txt" --no-deps --disable-pip --progress-spinner off \
      --vulnerability-service pypi --format json -o "$tmp/audit-$list.json" 2>"$tmp/audit.err" || true
    if [ ! -s "$tmp/audit-$list.json" ]; then
      echo "advisories python: UNCHECKED: pip-audit gave no report for the $list versions: $(tail -n 1 "$tmp/audit.err")"
      summary+=("advisories python: UNCHECKED (pip-audit failed)")
      unchecked=1
      return
    fi
    reports+=("$tmp/audit-$list.json")
  done
  record python3 scripts/advisories.py pip-report "${reports[@]}"
}

stage_go() {
  local mod=clients/go/go.mod line
  if ! grep -qE '^[[:space:]]*require\b' "$mod"; then
    line="advisories go: $mod has no requirements, no module to check"
    # The toolchain's standard library is another matter: govulncheck needs vuln.go.dev.
    if curl -fsS --max-time 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null &&
      command -v go >/dev/null && (cd clients/go && go run golang.org/x/vuln/cmd/govulncheck@latest ./...); then
      line+="; govulncheck found nothing in the standard library"
    else
      line+="; the standard library of the Go toolchain ($(go env GOVERSION 2>/dev/null || echo "no go")) is UNCHECKED (vuln.go.dev or govulncheck unavailable)"
      unchecked=1
    fi
    echo "$line"
    summary+=("$line")
    return
  fi
  if curl -fsS --max-time 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null; then
    if (cd clients/go && go run golang.org/x/vuln/cmd/govulncheck@latest ./...); then
      summary+=("advisories go: govulncheck: no vulnerability reached")
    else
      summary+=("advisories go: FAIL: govulncheck")
      failed=1
    fi
  else
    echo "advisories go: UNCHECKED: $mod has requirements and vuln.go.dev is unreachable"
    summary+=("advisories go: UNCHECKED (vuln.go.dev unreachable)")
    unchecked=1
  fi
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(rust npm python go)
for s in "${stages[@]}"; do
  echo "== advisories: $s"
  "stage_$s"
done
echo "== advisories: summary"
printf '%s\n' "${summary[@]}"
if [ "$failed" = 1 ]; then
  echo "advisories: FAILED (see the FAIL lines above)"
  exit 1
fi
if [ "$unchecked" = 1 ] && [ "${PATHD_ADVISORIES_STRICT:-0}" = 1 ]; then
  echo "advisories: some ecosystems are UNCHECKED and PATHD_ADVISORIES_STRICT=1"
  exit 1
fi
echo "advisories: no known advisory applies$([ "$unchecked" = 1 ] && echo " to what could be checked (UNCHECKED above)")"
