#!/usr/bin/env bash
# The clients in clients/: each one's own test suite against a real pathd that the suite
# starts (PATHD_BIN), the shared scenario (clients/SCENARIO.md) included, and the contract
# check of the TypeScript client. Installs what is missing:
#   TypeScript: `npm ci` in clients/ts (typescript, openapi-typescript, @types/node; Node's
#               own fetch and test runner, no runtime dependencies);
#   Go:         Debian's golang-go (apt-get); the module has no dependencies (GOPROXY=off);
#   Python:     httpx and pytest (pip).
# Stages: ts (tsc build, node --test, then openapi-typescript types from openapi.yaml held
# against the client's calls by `tsc --noEmit`), go (go vet, go test), python (pytest).
#
#   PATHD_BIN=target/debug/pathd scripts/clients-test.sh        # no build
#   scripts/clients-test.sh go python                           # some of the stages
set -euo pipefail
orig=$PWD
cd "$(dirname "$0")/.."
root=$PWD

if [ -n "${PATHD_BIN:-}" ]; then
  case $PATHD_BIN in /*) ;; *) PATHD_BIN=$orig/$PATHD_BIN ;; esac
else
  cargo build --locked --bin pathd
  PATHD_BIN=${CARGO_TARGET_DIR:-target}/debug/pathd
  case $PATHD_BIN in /*) ;; *) PATHD_BIN=$root/$PATHD_BIN ;; esac
fi
[ -x "$PATHD_BIN" ] || { echo "clients-test: no pathd binary at $PATHD_BIN" >&2; exit 2; }
export PATHD_BIN
# The suites give their servers the flags they need; tokens from the environment would
# change what they test.
unset PATHD_ADMIN_TOKEN PATHD_QUERY_TOKEN

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

stage_ts() {
  command -v node >/dev/null && command -v npm >/dev/null || {
    echo "[clients-test] installing nodejs and npm (apt-get)" >&2
    apt_install nodejs npm
  }
  (
    cd clients/ts
    npm ci --no-audit --no-fund --loglevel=error
    npm test
    npm run --silent contract
    echo "clients-test ts: the openapi-typescript types check against the client's calls"
  )
}

stage_go() {
  command -v go >/dev/null || {
    echo "[clients-test] installing golang-go (apt-get)" >&2
    apt_install golang-go
  }
  (
    cd clients/go
    export GOPROXY=off GOFLAGS=-mod=mod
    test -z "$(gofmt -l .)" || { echo "clients-test go: gofmt -l:" >&2; gofmt -l . >&2; exit 1; }
    go vet ./...
    go test -count=1 -v ./...
  )
}

stage_python() {
  python3 -c 'import httpx, pytest' 2>/dev/null || {
    echo "[clients-test] installing httpx and pytest (pip)" >&2
    python3 -m pip install --quiet httpx pytest
  }
  (cd clients/python && python3 -m pytest -q -p no:cacheprovider)
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(ts go python)
for s in "${stages[@]}"; do
  echo "== clients-test: $s"
  "stage_$s"
done
echo "clients-test: ${#stages[@]} passed, 0 failed"
