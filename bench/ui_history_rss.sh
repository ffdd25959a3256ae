#!/usr/bin/env bash
# What the TUI's sparkline history costs in memory: peak RSS (VmHWM) of an
# App fed a full history (300 frames) of one process with N threads, the
# thread list on, with the history on and off, every thread busy (every
# ring allocated: the worst case) or idle (no ring allocated).
# bench/programs/ui_history_rss.rs does the feeding and prints its own VmHWM.
#
#   bench/ui_history_rss.sh [N]      (default: 30000)
#
# No root needed: no collector, fixture frames only.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30000}
cargo build --release --quiet --example ui_history_rss
bin=${CARGO_TARGET_DIR:-target}/release/examples/ui_history_rss
printf '| history | threads | VmHWM MiB | history heap MiB |\n|---|---|---:|---:|\n'
for load in busy idle; do
    for hist in off on; do
        out=$("$bin" "$hist" "$load" "$n" 300)
        hwm=$(sed -n 's/.*VmHWM_kB=\([0-9]*\).*/\1/p' <<<"$out")
        heap=$(sed -n 's/.*history_heap_bytes=\([0-9]*\).*/\1/p' <<<"$out")
        awk -v h="$hist" -v l="$load" -v k="$hwm" -v b="$heap" \
            'BEGIN { printf "| %s | %s | %.1f | %.1f |\n", h, l, k / 1024, b / 1048576 }'
    done
done
