#!/usr/bin/env bash
# Recording benchmarks for BENCHMARKS.md (## Recording). Run as root from the
# repository root: bash bench/record.sh [SECONDS]
#
# 1. nettop --record (raw and .zst, BPF) and atop -w record this host at a
#    1 s interval for SECONDS (default 60), all three at the same time, under
#    the same load; prints bytes per snapshot (per 100 tasks) and CPU
#    (user+sys from wait4 rusage) of each recorder.
# 2. Synthetic figures (cargo run --release --example record_bench):
#    bytes per snapshot at 100/1000 tasks, and replay load time of a
#    synthesised 24-hour recording at 1 s.
set -euo pipefail
secs=${1:-60}
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/nettop
dir=$(mktemp -d /tmp/nettop-bench-record.XXXXXX)
trap 'rm -rf "$dir"' EXIT

echo "== live: $secs s at 1 s, $(nproc) CPUs, $(ls -d /proc/[0-9]*/task/* | wc -l) threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$bin" "$dir" "$secs" <<'EOF'
import os, subprocess, sys, time, json
binp, d, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
procs = {
  "nettop raw":  [binp, "--record", f"{d}/live.rec", "-d", "1", "-n", str(secs)],
  "nettop zstd": [binp, "--record", f"{d}/live.zst", "-d", "1", "-n", str(secs)],
  "atop -w":     ["atop", "-w", f"{d}/live.atop", "1", str(secs)],
}
running = {k: subprocess.Popen(v, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k, v in procs.items()}
t0 = time.time()
res = {}
while running:
    pid, status, ru = os.wait4(-1, 0)
    for k, p in list(running.items()):
        if p.pid == pid:
            res[k] = (status, ru.ru_utime + ru.ru_stime, time.time() - t0, ru.ru_maxrss)
            del running[k]
files = {"nettop raw": f"{d}/live.rec", "nettop zstd": f"{d}/live.zst", "atop -w": f"{d}/live.atop"}
# Threads per snapshot, from the recording itself (export json counts tasks).
out = subprocess.run([binp, "--replay", f"{d}/live.zst", "--export", "json"], capture_output=True, text=True).stdout.splitlines()
tasks = sum(json.loads(l)["summary"]["tasks"] for l in out) / max(1, len(out))
for k, (st, cpu, wall, rss) in res.items():
    size = os.path.getsize(files[k])
    per = size / secs
    print(f"{k:12s} exit={st>>8} cpu={cpu:.2f} s over {wall:.0f} s = {100*cpu/wall:.2f} % of one CPU, "
          f"maxrss={rss/1024:.1f} MiB, file={size} B, {per:.0f} B/snapshot, "
          f"{per/(tasks/100):.0f} B/snapshot per 100 threads (threads≈{tasks:.0f})")
EOF

echo "== synthetic"
NETTOP_BENCH_DIR="$dir" cargo run --release -q --example record_bench 2>&1 | grep BENCH
