#!/usr/bin/env bash
# Device counters, BENCHMARKS.md "Device counters": CPU per device read with
# 1,000 veth devices (500 pairs) in a private network namespace, for the
# sysfs reader (six files per device), nettop's rtnetlink dump and the same
# dump fully decoded by netlink-packet-route, in interleaved rounds of one
# run. Run as root from the repository root:
#
#     bash bench/netdev.sh                 # 500 pairs, 30 rounds
#     NETDEV_PAIRS=1000 bash bench/netdev.sh
#
# The namespace (and with it every veth) is deleted when the benchmark ends,
# also on failure (tests/live/netdev_live.rs, cost_1000_veths).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "bench/netdev.sh: run as root (network namespaces)" >&2; exit 2; }
command -v ip >/dev/null || { echo "bench/netdev.sh: 'ip' missing: apt-get install iproute2" >&2; exit 2; }
echo "Machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
cargo test --release --quiet --test live -- --ignored --nocapture --exact netdev_live::cost_1000_veths 2>&1 |
    grep -v -e '^running' -e '^test ' -e '^$' -e '^test result'
