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
install_cargo_deb
install_k8s_tools
mount_tracefs

# Tests that need root/BPF/netns fail instead of skipping.
export NETTOP_REQUIRE_BPF=1

log=$(mktemp /tmp/nettop-test.XXXXXX)
trap 'rm -f "$log"' EXIT

set -x
cargo fmt --check
cargo clippy --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --document-private-items
cargo test --doc 2>&1 | tee "$log"
cargo test --all-targets --no-fail-fast 2>&1 | tee -a "$log"
set +x

# One closing line over every test binary (cargo prints one per binary;
# the tiers of tests/common/tier.rs add a "not run: N (...)" line for tests
# whose needs this machine lacks: counted as ignored when the harness
# knew before running them, as passed when the test found out itself).
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     /^not run: [0-9]+ / { n += $3 }
     END { printf "tests: %d passed, %d failed, %d ignored; %d not run for a need this machine lacks\n", p, f, i, n }' "$log"
