#!/usr/bin/env bash
# Installs nginx (Debian package) when it is missing: tests/it/lb.rs puts a real round-robin
# nginx in front of three pathd replicas (started by the test on loopback, as a child
# process with its own configuration; the system's nginx service is not used).
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  exit 0
fi
echo "[ensure-nginx] installing nginx with apt-get" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
# --no-install-recommends; policy-rc.d may refuse to start the service, which is fine.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nginx >/dev/null
