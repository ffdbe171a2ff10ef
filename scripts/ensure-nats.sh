#!/usr/bin/env bash
# Installs nats-server (Debian package) when it is missing: the replication tests
# (tests/it/replicas.rs) and scripts/replicas-bench.sh start real NATS JetStream servers.
set -euo pipefail
if command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; then
  exit 0
fi
echo "[ensure-nats] installing nats-server with apt-get" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nats-server >/dev/null
