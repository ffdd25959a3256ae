#!/usr/bin/env bash
# nettop's own cost against thread count, side by side with top in one run.
# One process holds N sleeping threads (bench/programs/threads.rs); for each N the
# CPU (user+sys, children included) of 4 batch frames at 1 s is measured for
# `nettop -b`, `nettop -b -H`, `top -b` and `top -b -H`, plus nettop's peak
# RSS. Writes bench/results/threads.csv and bench/results/threads.svg.
#
#   bench/threads.sh [N ...]      (default: 1000 3000 10000 30000 100000)
#
# Needs root (BPF; pid_max and vm.max_map_count are raised for the run and
# restored).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
counts=("$@")
((${#counts[@]})) || counts=(1000 3000 10000 30000 100000)
frames=4

cargo build --release --quiet --bin nettop --example threads
nettop=target/release/nettop
holder=target/release/examples/threads
mkdir -p bench/results
csv=bench/results/threads.csv

raise_thread_limits

echo "threads,nettop_s_per_frame,nettop_H_s_per_frame,top_s_per_frame,top_H_s_per_frame,nettop_rss_kib" >"$csv"
for n in "${counts[@]}"; do
    coproc HOLD { exec "$holder" "$n"; }
    read -r _ hold_pid <&"${HOLD[0]}"
    sleep 1
    a=$(cpu_s "$nettop" -b -n "$frames" -d 1)
    b=$(cpu_s "$nettop" -b -H -n "$frames" -d 1)
    c=$(cpu_s top -b -n "$frames" -d 1)
    d=$(cpu_s top -b -H -n "$frames" -d 1)
    r=$(peak_rss_kib "$nettop" -b -n "$frames" -d 1)
    exec {HOLD[1]}>&-
    wait "$hold_pid" 2>/dev/null || true
    line=$(awk -v n="$n" -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v r="$r" -v f="$frames" \
        'BEGIN { printf "%d,%.4f,%.4f,%.4f,%.4f,%d", n, a/f, b/f, c/f, d/f, r }')
    echo "$line" | tee -a "$csv"
done
bench/plot_threads.sh "$csv" bench/results/threads.svg
echo "wrote $csv and bench/results/threads.svg"
