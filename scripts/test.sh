#!/usr/bin/env bash
# The whole test suite: the README's test command, also run by .ci/run.
#   1. every Rust test (engine unit/integration/doc tests incl. the Moving AI benchmarks,
#      server tests over real HTTP), built with every feature (`nats`: the replication
#      tests against real nats-server processes; `http2`: the h2c tests), and before them
#      the default build's own tests (what it refuses without those features);
#   2. the README's curl session, executed against a fresh server (scripts/readme-test.sh);
#   3. schemathesis against the running server and openapi.yaml;
#   4. the visualiser in headless Chromium (scripts/browser-test.sh; PATHD_SKIP_BROWSER=1
#      skips it), after the engine-in-the-tab checks (scripts/wasm-test.sh: the committed
#      .wasm is what the source builds, and the npm package's `node --test`);
#   5. the container: build the image with buildah, run it, query it.
#   (After 2: the TypeScript, Go and Python clients' tests, scripts/clients-test.sh.)
# Set PATHD_SKIP_CONTAINER=1 to skip step 5 on a machine without buildah.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/ensure-nats.sh # the replication tests (tests/it/replicas.rs) start nats-server
./scripts/ensure-nginx.sh # tests/it/lb.rs puts a round-robin nginx in front of three replicas
./scripts/k8s-check.sh # deploy/k8s/ against the Kubernetes schemas, offline (kubernetes-validate)
./scripts/advisories.sh # no dependency with a known advisory: Cargo.lock (RustSec), npm, pip, Go
# The default build (no features) first: what it refuses and says (tests/it/no_nats.rs,
# no_http2.rs). First, because `target/debug/pathd` is then rebuilt with every feature.
cargo test -p pathd --locked --test it -- no_nats no_http2
cargo test --workspace --locked --all-features
# The binary the integration tests ran (with NATS) is the one the later stages start: no
# rebuild.
target="${CARGO_TARGET_DIR:-target}"
case $target in /*) ;; *) target="$(pwd)/$target" ;; esac
export PATHD_BIN="$target/debug/pathd"
./scripts/readme-test.sh
# The clients (clients/ts, clients/go, clients/python): each one's own tests and the shared
# scenario against real servers started from PATHD_BIN, and the TypeScript client checked
# against types generated from openapi.yaml (scripts/clients-test.sh installs Node's,
# Go's and Python's pieces when missing).
./scripts/clients-test.sh
# Issue 24's bar: 500 examples per operation and phase, every check (about 12,800
# stateless cases, then the stateful phase; 28 minutes on two loaded cores, debug build).
# PATHD_SCHEMATHESIS_EXAMPLES=100 for a quicker run.
MAX_EXAMPLES="${PATHD_SCHEMATHESIS_EXAMPLES:-500}" ./scripts/schemathesis.sh
# The engine in the tab: the committed .wasm is up to date with the source, and the npm
# package's node tests (scripts/wasm-test.sh; installs the wasm target and node if missing).
./scripts/wasm-test.sh
if [ "${PATHD_SKIP_BROWSER:-0}" != 1 ]; then ./scripts/browser-test.sh; fi
if [ "${PATHD_SKIP_CONTAINER:-0}" != 1 ]; then
  ./scripts/container-test.sh
fi
echo "all test stages passed"
