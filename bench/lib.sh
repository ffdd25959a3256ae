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
