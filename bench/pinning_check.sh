#!/usr/bin/env bash
# Times `nettop --pinning-check` on this machine with N extra sleeping
# threads (default 2000), P of them pinned to CPU 1 (default 100) so the
# per-pinned-thread work (cgroup, sockets, CPU sample) is exercised too.
# Usage: bench/pinning_check.sh [N] [P]   (BIN=path/to/nettop, RUNS=20)
set -euo pipefail
N=${1:-2000}
P=${2:-100}
RUNS=${RUNS:-20}
BIN=${BIN:-target/release/nettop}
[ -x "$BIN" ] || { echo "build first: cargo build --release (or set BIN)" >&2; exit 2; }
READY=$(mktemp)
python3 - "$N" "$P" "$READY" <<'PY' &
import os, sys, threading, time
n, p, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ev = threading.Event()
def worker(i):
    if i < p and os.cpu_count() > 1:
        os.sched_setaffinity(threading.get_native_id(), {1})
    ev.wait()
ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
for t in ts: t.start()
open(ready, "w").write("ok")
time.sleep(600)
PY
HOLDER=$!
trap 'kill $HOLDER 2>/dev/null; wait $HOLDER 2>/dev/null; rm -f "$READY"' EXIT
while [ ! -s "$READY" ]; do sleep 0.05; done
echo "threads on host: $(cut -d' ' -f4 /proc/loadavg | cut -d/ -f2)  (holder pid $HOLDER)"
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 2 --runs "$RUNS" "$BIN --pinning-check --fail-on never"
else
  ts=()
  for _ in $(seq "$RUNS"); do
    a=$(date +%s%N); "$BIN" --pinning-check --fail-on never >/dev/null; b=$(date +%s%N)
    ts+=($(( (b - a) / 1000 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk '{v[NR]=$1; s+=$1} END {printf "runs %d  min %.1f ms  median %.1f ms  mean %.1f ms  max %.1f ms\n", NR, v[1]/1000, v[int((NR+1)/2)]/1000, s/NR/1000, v[NR]/1000}'
fi
"$BIN" --pinning-check --fail-on never | grep -v "^      threads:" | head -12
