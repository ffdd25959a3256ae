#!/usr/bin/env bash
# BPF time per task exit (btf_task_exit) for BENCHMARKS.md "Task exit".
# Run as root:
#
#     bash bench/task-exit.sh NETTOP [NETTOP...]
#
# Each round runs every given nettop binary in turn (`-b --json -d 1`,
# the default programs) while a load makes tasks exit, and reads the
# program's run count and run time from bpf_stats over the load. Two
# loads, one after the other: `procs` (a shell running /bin/true in a
# loop: every exit ends a process) and `threads` (a Python loop starting
# and joining 8 threads: every exit is a thread of a live process).
#
# Knobs: ROUNDS=3, WIN_S=4 (seconds of load per measurement).
# Prints markdown on stdout, progress on stderr; restores
# kernel.bpf_stats_enabled and stops everything it started on every exit.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
WIN_S=${WIN_S:-4}

[[ $# -ge 1 ]] || { echo "usage: bench/task-exit.sh NETTOP [NETTOP...]" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "bench/task-exit.sh: run as root (BPF)" >&2; exit 2; }
for t in jq bpftool python3 timeout; do
    command -v "$t" >/dev/null || { echo "bench/task-exit.sh: '$t' missing: apt-get install jq bpftool python3 coreutils" >&2; exit 2; }
done
for nt in "$@"; do
    [[ -x $nt ]] || { echo "bench/task-exit.sh: $nt is not an executable" >&2; exit 2; }
done

OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
NT_PID=
cleanup() {
    if [[ -n $NT_PID ]]; then kill "$NT_PID" 2>/dev/null || true; wait "$NT_PID" 2>/dev/null || true; fi
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -qw kernel.bpf_stats_enabled=1

say() { echo "[task-exit] $*" >&2; }

load() {  # load procs|threads: WIN_S seconds of exits
    case $1 in
        procs) timeout "$WIN_S" bash -c 'while :; do /bin/true; done' || true ;;
        threads) timeout "$WIN_S" python3 -c '
import threading
while True:
    ts = [threading.Thread(target=lambda: None) for _ in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
' || true ;;
    esac
}

# exit_stats NETTOP LOAD: "runs ns_per_run" of btf_task_exit over the load.
exit_stats() {
    local a b
    "$1" -b --json -d 1 -n 100000 >/dev/null 2>&1 &
    NT_PID=$!
    sleep 3   # loaded, attached, past the first frames
    a=$(bpftool prog show -j)
    load "$2"
    b=$(bpftool prog show -j)
    kill "$NT_PID"
    wait "$NT_PID" 2>/dev/null || true
    NT_PID=
    jq -n -r --argjson a "$a" --argjson b "$b" '
      def prog(x): [x[] | select(.name == "btf_task_exit")] | max_by(.id);
      (prog($b)) as $q | ([$a[] | select(.id == $q.id)] | .[0] // {run_cnt: 0, run_time_ns: 0}) as $p
      | ($q.run_cnt - $p.run_cnt) as $n
      | "\($n) \(if $n > 0 then (($q.run_time_ns - $p.run_time_ns) / $n | round) else "-" end)"'
}

echo "Machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| load | nettop | exits/s | ns per exit, per round |"
echo "|---|---|---:|---:|"
for what in procs threads; do
    declare -A ns=() runs=()
    for ((r = 1; r <= ROUNDS; r++)); do
        for nt in "$@"; do
            say "$what round $r: $nt"
            read -r n t < <(exit_stats "$nt" "$what")
            ns[$nt]+="${ns[$nt]:+ / }$t"
            runs[$nt]=$(( ${runs[$nt]:-0} + n ))
        done
    done
    for nt in "$@"; do
        echo "| $what | \`$nt\` | $(( runs[$nt] / ROUNDS / WIN_S )) | ${ns[$nt]} |"
    done
    unset ns runs
done
echo
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
