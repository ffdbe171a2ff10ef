#!/usr/bin/env bash
# The engine in the tab (wasm/, clients/wasm/): the committed module and glue are what the
# source builds (scripts/build-wasm.sh --check, which installs the wasm32 target with
# rustup if missing), and the npm package's tests pass under `node --test` (installs
# Node.js with apt-get if missing; the tests need no npm packages).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1; then
    echo "installing nodejs (apt-get)" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs >/dev/null
fi
./scripts/build-wasm.sh --check
node --test clients/wasm/test/
