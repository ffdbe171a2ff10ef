#!/usr/bin/env bash
# Replication benchmark: one nats-server with JetStream and three release pathd replicas on
# loopback (examples/replicas_bench.rs). Prints, in one run:
#   - write ack latency on A, and propagation latency (ack on A -> visible on B and on C),
#     p50 and p99, over PATCHES patches;
#   - A* query throughput of one replica vs three behind a round-robin client.
# Env: PATCHES=300 CLIENTS=32 SECS=5 MAP_SIDE=256. Everything it starts is stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
./scripts/ensure-nats.sh
cargo build --release --locked --features nats --bin pathd --example replicas_bench
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
exec "$TARGET/release/examples/replicas_bench" "$TARGET/release/pathd" "$NATS"
