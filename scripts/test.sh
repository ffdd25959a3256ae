#!/usr/bin/env bash
# The full test suite, as CI runs it: installs what a fresh Debian 12 lacks,
# then format check, clippy, and every test with BPF required (root). Any
# failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

if [[ $(id -u) -ne 0 ]]; then
    echo "scripts/test.sh: run as root (the BPF and network-namespace tests need it)" >&2
    exit 2
fi
install_system_packages
install_rust
mount_tracefs

# Tests that need root/BPF/netns fail instead of skipping.
export NETTOP_REQUIRE_BPF=1

set -x
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
