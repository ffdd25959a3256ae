#!/usr/bin/env bash
# Installs nettop's build and run dependencies on Debian 12 and nettop itself
# into /usr/local/bin (run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

if [[ $(id -u) -ne 0 ]]; then
    echo "scripts/install.sh: run as root (apt-get, and nettop needs root or CAP_BPF+CAP_PERFMON)" >&2
    exit 2
fi
install_system_packages
install_rust
mount_tracefs
cargo build --release --locked
install -m 0755 target/release/nettop /usr/local/bin/nettop
echo ">>> installed $(command -v nettop)"
