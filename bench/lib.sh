# shellcheck shell=bash
# Sourced by the benchmark scripts: how one command's cost is measured.

# user+sys CPU seconds of one command (its children included).
cpu_s() {
    local out
    out=$( { /usr/bin/env bash -c 'TIMEFORMAT="%U %S"; time "$@" >/dev/null 2>&1' _ "$@"; } 2>&1 )
    awk '{ printf "%.4f", $1 + $2 }' <<<"$out"
}

# Peak RSS (VmHWM) in KiB of one command, sampled every 50 ms.
peak_rss_kib() {
    "$@" >/dev/null 2>&1 &
    local pid=$! max=0 v
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        [[ -n "$v" && "$v" -gt "$max" ]] && max=$v
        sleep 0.05
    done
    wait "$pid" || true
    echo "$max"
}

# Raises kernel.pid_max and vm.max_map_count for a run that holds many
# threads, and restores both when the script exits (an EXIT trap: a
# script that sets its own must call restore_thread_limits from it). Two
# mappings per thread (stack and guard): 100,000 threads need more than
# the default 65,530.
raise_thread_limits() {
    OLD_PID_MAX=$(cat /proc/sys/kernel/pid_max)
    OLD_MAP_COUNT=$(cat /proc/sys/vm/max_map_count)
    trap restore_thread_limits EXIT
    echo 4194304 >/proc/sys/kernel/pid_max
    echo 1048576 >/proc/sys/vm/max_map_count
}

restore_thread_limits() {
    echo "$OLD_PID_MAX" >/proc/sys/kernel/pid_max
    echo "$OLD_MAP_COUNT" >/proc/sys/vm/max_map_count
}
