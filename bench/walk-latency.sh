#!/usr/bin/env bash
# What a sample's task walk makes the other tasks on nettop's CPU wait
# (BENCHMARKS.md "The open-coded task walk"):
#
#     bash bench/walk-latency.sh OLD NEW...   # knobs: N=30000 ROUNDS=2 SECS=12
#
# One process holds N sleeping threads (bench/programs/threads.rs). Each
# round runs cyclictest (a SCHED_FIFO thread on CPU 1 waking every 1 ms)
# alone, then next to each build given (a command: extra arguments such
# as --walk-span go in a wrapper), pinned to CPU 1 with `-b -d 0.25`, and
# prints cyclictest's maximum and average wake-up latency in µs. Needs
# root, two CPUs and cyclictest (Debian: rt-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
(($# >= 1)) || { echo "usage: bench/walk-latency.sh NETTOP..." >&2; exit 2; }
command -v cyclictest >/dev/null || { echo "needs cyclictest (apt-get install rt-tests)" >&2; exit 2; }
secs=${SECS:-12}
cargo build --release --quiet --example threads
raise_thread_limits
coproc HOLD { exec target/release/examples/threads "${N:-30000}"; }
read -r _ hold_pid <&"${HOLD[0]}"
sleep 1
latency() { # prints "max avg" in µs
    cyclictest -q -m -a 1 -p 80 -i 1000 -D "$secs" -h 100000 2>/dev/null |
        awk '/^# Max Latencies/ {m = $4 + 0} /^# Avg Latencies/ {a = $4 + 0} END {print m, a}'
}
echo "| round | nettop | max µs | average µs |"
echo "|---:|---|---:|---:|"
for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
    read -r m a < <(latency)
    echo "| $r | none | $m | $a |"
    for bin in "$@"; do
        taskset -c 1 "$bin" -b -n $((secs * 4 + 8)) -d 0.25 >/dev/null 2>&1 &
        np=$!
        sleep 1
        read -r m a < <(latency)
        kill "$np" 2>/dev/null || true
        wait "$np" 2>/dev/null || true
        echo "| $r | $bin | $m | $a |"
    done
done
exec {HOLD[1]}>&-
wait "$hold_pid" 2>/dev/null || true
