#!/usr/bin/env bash
# Per-frame ONCPU% of a task that is on its CPU all the time, read by a
# starved nettop: a spinner on CPU 1, and nettop on CPU 0 at nice 19 next
# to a busy loop at nice 0, so that any of its reads can be stalled for
# tenths of a second. Every frame should say 100 %; what it says beyond
# that is the skew between the task times and the sample's timestamp.
# Binaries alternate (A, B, A, B…) in one run, on the /proc path and on the
# task sampler (BENCHMARKS.md, "Starved reads").
#
#   bench/experiments/starved-reads.sh NETTOP_A NETTOP_B [ROUNDS]
#
# Needs root (BPF).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 NETTOP_A NETTOP_B [ROUNDS]" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-2}
cache=$(mktemp -d)
taskset -c 1 sh -c 'while :; do :; done' & spinner=$!
taskset -c 0 sh -c 'while :; do :; done' & hog=$!
trap 'kill $spinner $hog 2>/dev/null; rm -rf "$cache"' EXIT
sleep 0.5
frames() { # BIN ENV...: "n mean min max sd" of the spinner's ONCPU% over 20 frames
  local bin=$1; shift
  env "$@" NETTOP_CACHE_DIR="$cache" taskset -c 0 nice -n 19 "$bin" -b --json \
    -p "$spinner" -d 1 -n 21 2>/dev/null | python3 -c "
import sys, json, statistics
v = [t['on_cpu_pct'] for l in sys.stdin for t in json.loads(l)['processes'] if t['pid'] == $spinner][1:]
print('n=%d mean=%.1f min=%.1f max=%.1f sd=%.2f' % (len(v), statistics.mean(v), min(v), max(v), statistics.pstdev(v)))"
}
# One calibration for both, taken before the hog starts mattering.
env NETTOP_CACHE_DIR="$cache" "$a" -b -n 1 >/dev/null 2>&1 || true
for _ in $(seq "$rounds"); do
  for path in ${PATHS:-proc sampler}; do
    envs=(X=1)
    [[ $path == proc ]] && envs=(NETTOP_NO_TASK_SAMPLER=1)
    echo "$path A: $(frames "$a" "${envs[@]}")"
    echo "$path B: $(frames "$b" "${envs[@]}")"
  done
done
