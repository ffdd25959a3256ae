#!/usr/bin/env bash
# Hostile-input figures for BENCHMARKS.md (## Hostile input), two binaries
# side by side in one run:
#
#     bash bench/hostile.sh OLD_NETTOP NEW_NETTOP [MIB]
#
# 1. Replay of a crafted recording of MIB MiB (default 128): a valid start,
#    then overlapping record headers each claiming a payload up to the end
#    of the file (what made resync checksum O(n^2) bytes). Wall time of
#    `--replay FILE --export json`, each binary killed after 120 s.
# 2. `--serve --no-bpf` sent one request whose header is 300 MiB: bytes the
#    server accepted before closing, and its peak RSS (VmHWM) growth.
#
# Needs python3. Creates files under a temporary directory and removes them;
# every server it starts is killed on exit.
set -euo pipefail
old=${1:?usage: bench/hostile.sh OLD_NETTOP NEW_NETTOP [MIB]}
new=${2:?usage: bench/hostile.sh OLD_NETTOP NEW_NETTOP [MIB]}
mib=${3:-128}
command -v python3 >/dev/null || { echo "bench/hostile.sh: python3 missing" >&2; exit 2; }
dir=$(mktemp -d /tmp/nettop-bench-hostile.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

# A valid start (meta + 2 snapshots) recorded by the new binary from the
# test fixture, cut after its second record, then the crafted region.
"$new" --record "$dir/seed.rec" --no-bpf --sysroot tests/fixtures/proc/modern -n 2 -d 0.05 2>/dev/null
python3 - "$dir/seed.rec" "$dir/crafted.rec" "$mib" <<'EOF'
import struct, sys
seed = open(sys.argv[1], 'rb').read()
marks = [i for i in range(16, len(seed) - 3) if seed[i:i+4] == b'NTRC']
out = bytearray(seed[:marks[2]]) + b'damage!!'
total = int(sys.argv[3]) << 20
hdr_tail = bytes([2, 0, 0, 0]) + bytes(12)
while len(out) + 24 <= total:
    out += b'NTRC' + struct.pack('<I', total - len(out) - 24) + hdr_tail
out += bytes(total - len(out))
open(sys.argv[2], 'wb').write(out)
EOF

echo "| binary | crafted ${mib} MiB recording: --replay --export json | exit |"
echo "|---|---:|---:|"
for b in "$old" "$new"; do
    t0=$(date +%s.%N)
    set +e
    timeout 120 "$b" --replay "$dir/crafted.rec" --export json >/dev/null 2>"$dir/err"
    rc=$?
    set -e
    t1=$(date +%s.%N)
    secs=$(python3 -c "print(f'{$t1 - $t0:.2f} s')")
    [[ $rc -eq 124 ]] && secs="> 120 s (killed)"
    echo "| $b | $secs | $rc |"
done

echo
echo "| binary | 300 MiB request header: bytes accepted | peak RSS growth | still serving |"
echo "|---|---:|---:|---|"
for b in "$old" "$new"; do
    "$b" --serve 127.0.0.1:0 --no-bpf -d 1 2>"$dir/serve.err" >/dev/null &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do
        grep -q 'http://' "$dir/serve.err" 2>/dev/null && break
        sleep 0.1
    done
    addr=$(grep -o 'http://[^/]*' "$dir/serve.err" | head -1 | cut -c8-)
    python3 - "$addr" "$pid" "$b" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(':', 1)
pid, binary = sys.argv[2], sys.argv[3]
def hwm():
    for l in open(f'/proc/{pid}/status'):
        if l.startswith('VmHWM:'):
            return int(l.split()[1])
before = hwm()
s = socket.create_connection((host, int(port)))
s.sendall(b'GET /metrics HTTP/1.1\r\nX-Bomb: ')
chunk = b'a' * (1 << 20)
sent = 0
try:
    for _ in range(300):
        s.sendall(chunk)
        sent += len(chunk)
except OSError:
    pass
s.close()
time.sleep(0.5)
grew = hwm() - before
try:
    c = socket.create_connection((host, int(port)), timeout=5)
    c.sendall(b'GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n')
    ok = c.recv(64).startswith(b'HTTP/1.1 200')
except OSError:
    ok = False
print(f'| {binary} | {sent >> 20} MiB | {grew / 1024:.1f} MiB | {"yes" if ok else "no"} |')
EOF
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
done
