#!/usr/bin/env bash
# Start-up and four frames at many threads, two nettop builds alternated in
# one run (BENCHMARKS.md "Start-up and four frames at 30,000 threads"):
#
#     bash bench/startup.sh OLD NEW        # knobs: N=30000 ROUNDS=6
#
# One process holds N sleeping threads (bench/programs/threads.rs). Each
# round measures user+sys CPU of `-b -n 4 -d 1` and of `-b -n 1 -d 0.1`
# (start-up and one frame) for OLD, then NEW, and `top -b -n 4 -d 1`.
# Prints a markdown table. Needs root; raises kernel.pid_max and
# vm.max_map_count for the run and restores them.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
(($# == 2)) || { echo "usage: bench/startup.sh OLD NEW" >&2; exit 2; }
old_bin=$1 new_bin=$2
cargo build --release --quiet --example threads
raise_thread_limits
coproc HOLD { exec target/release/examples/threads "${N:-30000}"; }
read -r _ hold_pid <&"${HOLD[0]}"
sleep 1
echo "| round | 4 frames, OLD | NEW | start-up + 1 frame, OLD | NEW | \`top -b -n 4\` |"
echo "|---:|---:|---:|---:|---:|---:|"
for ((i = 1; i <= ${ROUNDS:-6}; i++)); do
    a=$(cpu_s "$old_bin" -b -n 4 -d 1)
    b=$(cpu_s "$new_bin" -b -n 4 -d 1)
    a1=$(cpu_s "$old_bin" -b -n 1 -d 0.1)
    b1=$(cpu_s "$new_bin" -b -n 1 -d 0.1)
    t=$(cpu_s top -b -n 4 -d 1)
    echo "| $i | $a | $b | $a1 | $b1 | $t |"
done
exec {HOLD[1]}>&-
wait "$hold_pid" 2>/dev/null || true
