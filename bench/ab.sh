#!/usr/bin/env bash
# Two nettop binaries, A and B, measured alternately in one run (the
# machines are noisy: only ratios from one run mean anything):
#   - one process holding N sleeping threads (bench/programs/threads.rs): user+sys CPU
#     of `-b -n 4 -d 1` and `-b -H -n 4 -d 1`, per frame, and the peak RSS;
#   - 2,000 extra `sleep` processes: CPU of `-b -n 4 -d 1` per frame;
#   - `--pinning-check` at the largest N: CPU per check.
# Each figure is the median of ROUNDS alternations (A, B, A, B, …).
#
#   bench/ab.sh OLD_NETTOP NEW_NETTOP [N ...]   (default N: 3000 30000)
#   ROUNDS=3 (default), HOLDER=target/release/examples/threads
#
# Needs root (BPF); pid_max and vm.max_map_count are raised for the run
# and restored.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[[ $# -ge 2 ]] || { echo "usage: bench/ab.sh OLD NEW [N ...]" >&2; exit 2; }
a=$1 b=$2
shift 2
counts=("$@")
((${#counts[@]})) || counts=(3000 30000)
rounds=${ROUNDS:-3}
holder=${HOLDER:-target/release/examples/threads}
[[ -x "$holder" ]] || cargo build --release --quiet --example threads
frames=4

old_pid_max=$(cat /proc/sys/kernel/pid_max)
old_map_count=$(cat /proc/sys/vm/max_map_count)
sleepers=()
cleanup() {
    echo "$old_pid_max" >/proc/sys/kernel/pid_max
    echo "$old_map_count" >/proc/sys/vm/max_map_count
    ((${#sleepers[@]})) && kill "${sleepers[@]}" 2>/dev/null
    wait 2>/dev/null || true
}
trap cleanup EXIT
echo 4194304 >/proc/sys/kernel/pid_max
# Two mappings per thread (stack and guard): 100,000 threads need more
# than the default 65,530.
echo 1048576 >/proc/sys/vm/max_map_count

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One row: label, then the median of A and B over the rounds, and B/A.
# $1 label, $2 divisor, rest: the measuring function and its arguments,
# with the binary as "@".
row() {
    local label=$1 div=$2 i
    shift 2
    local fa=() fb=()
    for ((i = 0; i < rounds; i++)); do
        fa+=("$("${@/#@/$a}")")
        fb+=("$("${@/#@/$b}")")
    done
    local ma mb
    ma=$(printf '%s\n' "${fa[@]}" | median)
    mb=$(printf '%s\n' "${fb[@]}" | median)
    awk -v l="$label" -v x="$ma" -v y="$mb" -v d="$div" \
        'BEGIN { printf "| %s | %.4f | %.4f | %.2f |\n", l, x / d, y / d, (x > 0 ? y / x : 0) }'
}

echo "A = $a, B = $b, $rounds rounds each, alternating; medians"
echo
echo "| measure | A | B | B/A |"
echo "|---|---:|---:|---:|"
for n in "${counts[@]}"; do
    coproc HOLD { exec "$holder" "$n"; }
    read -r _ hold_pid <&"${HOLD[0]}"
    sleep 1
    row "$n threads: \`-b\` CPU s/frame" "$frames" cpu_s @ -b -n "$frames" -d 1
    row "$n threads: \`-b -H\` CPU s/frame" "$frames" cpu_s @ -b -H -n "$frames" -d 1
    row "$n threads: \`-b\` peak RSS MiB" 1024 peak_rss_kib @ -b -n "$frames" -d 1
    row "$n threads: \`-b -H\` peak RSS MiB" 1024 peak_rss_kib @ -b -H -n "$frames" -d 1
    if [[ $n == "${counts[-1]}" ]]; then
        row "$n threads: \`--pinning-check\` CPU s" 1 cpu_s @ --pinning-check --fail-on never
    fi
    exec {HOLD[1]}>&-
    wait "$hold_pid" 2>/dev/null || true
done
for ((i = 0; i < 2000; i++)); do
    sleep 600 &
    sleepers+=($!)
done
sleep 1
row "2,000 processes: \`-b\` CPU s/frame" "$frames" cpu_s @ -b -n "$frames" -d 1
row "2,000 processes: \`-b\` peak RSS MiB" 1024 peak_rss_kib @ -b -n "$frames" -d 1
