#!/usr/bin/env bash
# The kernel's iter/task walk against the open-coded task iterator over
# N threads (BENCHMARKS.md "Start-up and four frames at 30,000 threads"):
#
#     bash bench/walk.sh        # knobs: N=30000 ROUNDS=4 PASSES=10
#
# One process holds N sleeping threads (bench/programs/threads.rs) while
# bench/programs/walk.rs alternates the two walks. Needs root and Linux
# 6.7+; raises kernel.pid_max and vm.max_map_count for the run and
# restores them.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
cargo build --release --quiet --example threads --example walk
raise_thread_limits
coproc HOLD { exec target/release/examples/threads "${N:-30000}"; }
read -r _ hold_pid <&"${HOLD[0]}"
sleep 1
target/release/examples/walk "${ROUNDS:-4}" "${PASSES:-10}"
exec {HOLD[1]}>&-
wait "$hold_pid" 2>/dev/null || true
