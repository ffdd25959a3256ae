#!/usr/bin/env bash
# Calibration benchmarks for BENCHMARKS.md "## Hidden interrupt cost". Run
# as root from the repository root on an otherwise idle machine with >= 2
# CPUs:
#
#     bash bench/calibrate.sh            # both
#     bash bench/calibrate.sh table      # (a) ROUNDS x nettop --calibrate: table and cost
#     bash bench/calibrate.sh rps        # (b) gap census of a spinner on CPU 1 under the RPS load
#
# Prints markdown to stdout. The calibrations go to a temporary cache
# directory (never /var/cache/nettop); namespaces and iperf3 are removed on
# exit.
set -euo pipefail

cd "$(dirname "$0")/.."
HERE=$PWD
# shellcheck source=bench/netns-load.sh
source "$HERE/bench/netns-load.sh"

WHAT=${1:-all}
ROUNDS=${ROUNDS:-5}

[[ $(id -u) -eq 0 ]] || { echo "bench/calibrate.sh: run as root (BPF, network namespaces)" >&2; exit 2; }
[[ $(nproc) -ge 2 ]] || { echo "bench/calibrate.sh: needs at least 2 CPUs" >&2; exit 2; }
for t in jq iperf3 taskset ip; do
    command -v "$t" >/dev/null || { echo "bench/calibrate.sh: '$t' missing: apt-get install jq iperf3 util-linux iproute2" >&2; exit 2; }
done

cargo build --release --quiet --bin nettop --example gap_census
NETTOP=$HERE/target/release/nettop
CENSUS=$HERE/target/release/examples/gap_census
CACHE=$(mktemp -d)
cleanup() { netns_down; rm -rf "$CACHE"; }
trap cleanup EXIT

table() {
    echo "### Calibration table ($ROUNDS runs of \`nettop --calibrate\`, load average $(cut -d' ' -f1 /proc/loadavg) at start)"
    echo
    echo "| run | CPU | kind | samples | traced ns | hidden ns | spread ns | untraced gaps/s | CPU ms | wall ms |"
    echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    local i
    for i in $(seq "$ROUNDS"); do
        "$NETTOP" --calibrate --json --cache-dir "$CACHE" | jq -r --arg i "$i" '
            . as $c
            | ["ipi", "timer", "tlb", "resched", "softirq"][] as $k
            | $c[$k] as $x
            | "| \($i) | \($c.cpu) | \($k)\(if $x.basis == "same_as_ipi" then " (= ipi)" elif $x.basis == "not_measured" then " (not measured)" else "" end) | \($x.samples) | \($x.traced_ns | floor) | \($x.hidden_ns | floor) | \($x.spread_ns | floor) | \($c.untraced_gaps_per_s | floor) | \($c.cost_cpu_ms | floor) | \($c.wall_ms | floor) |"'
        sleep 1
    done
    echo
}

rps() {
    echo "### Gap census under the RPS load (spinner on CPU 1, nothing induced)"
    echo
    netns_up 2
    load_start 8 0
    sleep 1
    echo '```text'
    "$CENSUS" --cpu 1 --windows 4 --ms 250
    echo '```'
    load_stop
    echo
    echo "### Gap census with the calibration's own load: pure IPIs and loopback RPS from CPU 0"
    echo
    echo '```text'
    "$CENSUS" --cpu 1 --ipi-from 0 --rps --windows 4 --ms 250
    echo '```'
}

case $WHAT in
    table) table ;;
    rps) rps ;;
    all) table; rps ;;
    *) echo "bench/calibrate.sh: unknown part '$WHAT' (table, rps, all)" >&2; exit 2 ;;
esac
