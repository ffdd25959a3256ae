#!/usr/bin/env bash
# Collector benchmarks for BENCHMARKS.md "## Collector". Run as root from the
# repository root on an otherwise idle machine with >= 2 CPUs:
#
#     bash bench/collector.sh            # all three
#     bash bench/collector.sh bpf        # (a) BPF cost per event under netns load
#     bash bench/collector.sh observer   # (b) victim work rate, nettop on vs off
#     bash bench/collector.sh procs      # (c) nettop vs top -b, 2,000 processes
#     bash bench/collector.sh floor      # (d) the floor under (a): empty and
#                                        # clock-only programs, same tracepoints
#                                        # (NETTOP_BASE=BIN: that build too, each round)
#     bash bench/collector.sh bpf-ab OLD NEW   # (a) for two nettop binaries,
#                                        # alternated ROUNDS_AB times in one run
#
# Prints markdown to stdout. Everything it creates (namespaces, iperf3,
# victims, 2,000 sleep processes) is removed on exit, and
# kernel.bpf_stats_enabled is restored to its previous value.
set -euo pipefail

cd "$(dirname "$0")/.."
HERE=$PWD
# shellcheck source=bench/netns-load.sh
source "$HERE/bench/netns-load.sh"

WHAT=${1:-all}
ROUNDS=${ROUNDS:-8}          # A/B pairs for the observer effect
ROUND_MS=${ROUND_MS:-2000}   # victim run per round
NPROCS=${NPROCS:-2000}
SAMPLE_S=${SAMPLE_S:-15}     # steady-state window for (c)

[[ $(id -u) -eq 0 ]] || { echo "bench/collector.sh: run as root (BPF, network namespaces)" >&2; exit 2; }
[[ $(nproc) -ge 2 ]] || { echo "bench/collector.sh: needs at least 2 CPUs" >&2; exit 2; }
for t in jq bpftool iperf3 taskset ip top; do
    command -v "$t" >/dev/null || { echo "bench/collector.sh: '$t' missing: apt-get install jq bpftool iperf3 util-linux iproute2 procps" >&2; exit 2; }
done

cargo build --release --quiet --bin nettop --example victim --example bpf_floor
NETTOP=${NETTOP:-$HERE/target/release/nettop}   # NETTOP=... to measure another build
VICTIM=$HERE/target/release/examples/victim

OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
SLEEPERS=()
BG=()
cleanup() {
    local p
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
    if ((${#SLEEPERS[@]})); then kill "${SLEEPERS[@]}" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    netns_down
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

echo "Machine: $(nproc) CPUs, $(uname -r), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
echo "Regime: $(zcat /proc/config.gz 2>/dev/null | grep -E '^# CONFIG_IRQ_TIME_ACCOUNTING|^CONFIG_IRQ_TIME_ACCOUNTING' || grep -E 'CONFIG_IRQ_TIME_ACCOUNTING' "/boot/config-$(uname -r)" 2>/dev/null || echo unknown)"
echo

# (a) BPF run time per event, per nettop program, under the netns load with
# a victim on the RPS CPU (so softirqs interrupt a task, the common case).
bench_bpf() {
    echo "### BPF cost per event (netns iperf3 load, RPS -> CPU 1, victim on CPU 1)"
    echo
    echo '`sysctl kernel.bpf_stats_enabled=1`; `bpftool prog show -j` sampled 10 s apart while `nettop -b -d 1` runs.'
    echo
    rps_load_up 30
    nettop_window 20 || return 1
    rps_load_down
    awk -v t="$WIN_TOTAL" -v n="$WIN_INTS" 'BEGIN {
        printf "Total BPF run time: %.3f %% of one CPU (%d ns over 10 s).\n\n", t / 1e8, t
        if (n > 0) printf "Per interruption: %d interruptions/s, %.0f ns of BPF each (all programs).\n\n", n / 10, t / n }'
}

# rps_load_up SECS: bpf_stats on, the netns pair with RPS to CPU 1, SECS of
# iperf3 UDP load and a victim on CPU 1 for most of it. rps_load_down undoes it.
rps_load_up() {
    sysctl -qw kernel.bpf_stats_enabled=1
    netns_up 2
    load_start "$1" 0
    "$VICTIM" --cpu 1 --ms $(($1 * 1000 - 5000)) --summary >/dev/null &
    BG+=($!)
}

rps_load_down() {
    load_stop
    netns_down
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
}

# nettop_window FRAMES: `nettop -b -d 1 -n FRAMES`, past its start-up, then
# one bpf_window over it.
nettop_window() {
    "$NETTOP" -b -d 1 -n "$1" >/dev/null &
    local np=$!
    BG+=("$np")
    sleep 4
    bpf_window "$np" || return 1
    kill "$np" 2>/dev/null || true
    wait "$np" 2>/dev/null || true
}

# bpf_window PID: the BPF programs PID holds (the prog_ids behind its open
# file descriptors; bpftool's .pids needs a bpftool built with skeletons,
# fdinfo does not), sampled 10 s apart: prints a table of events/s and
# ns/event, sets WIN_TOTAL (ns of BPF over the window) and WIN_INTS (runs of
# the hardirq/system-vector entry programs: every interruption runs exactly
# one outermost entry).
bpf_window() {
    local np=$1 ids
    ids=$(grep -h '^prog_id:' /proc/"$np"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un | jq -Rs '[split("\n")[] | select(length > 0) | tonumber]')
    if [[ $ids == "[]" ]]; then
        echo "pid $np holds no BPF programs: did it load BPF?" >&2
        return 1
    fi
    local s1=/tmp/nettop-bench-s1.$$ s2=/tmp/nettop-bench-s2.$$
    bpftool prog show -j >"$s1"
    sleep 10
    bpftool prog show -j >"$s2"
    echo "| program | events/s | ns/event |"
    echo "|---|---:|---:|"
    local prog='
      def mine: [.[] | select(.id as $i | $ids | index($i))];
      ($a[0] | mine | map({key: (.id|tostring), value: .}) | from_entries) as $old'
    jq -r -n --argjson ids "$ids" --slurpfile a "$s1" --slurpfile b "$s2" "$prog"'
      | $b[0] | mine | .[]
      | . as $p | ($old[(.id|tostring)] // {run_cnt: 0, run_time_ns: 0}) as $o
      | (($p.run_cnt // 0) - ($o.run_cnt // 0)) as $n
      | (($p.run_time_ns // 0) - ($o.run_time_ns // 0)) as $t
      | "| \($p.name) | \($n / 10 | floor) | \(if $n > 0 then ($t / $n | floor) else "-" end) |"' | sort
    WIN_TOTAL=$(jq -r -n --argjson ids "$ids" --slurpfile a "$s1" --slurpfile b "$s2" "$prog"'
      | ($b[0] | mine | map(.run_time_ns // 0) | add // 0) - ($old | [.[] | .run_time_ns // 0] | add // 0)')
    WIN_INTS=$(jq -r -n --argjson ids "$ids" --slurpfile a "$s1" --slurpfile b "$s2" "$prog"'
      | [$b[0] | mine | .[] | select(.name | test("_in$")) | select(.name | test("_si_in$") | not)
         | (.run_cnt // 0) - ($old[(.id|tostring)].run_cnt // 0)] | add // 0')
    rm -f "$s1" "$s2"
    echo
}

# (d) The floor under (a): programs that do nothing, and programs that only
# read the clock, on the tracepoints an RPS interruption fires
# (bpf/testing/floor.bpf.c), under the same load, alternated with nettop so drift
# hits both.
bench_floor() {
    echo "### The floor: empty and clock-only programs on the same tracepoints (netns iperf3 load, RPS -> CPU 1, victim on CPU 1)"
    echo
    local rounds=${ROUNDS_FLOOR:-2} i
    rps_load_up $((rounds * (${NETTOP_BASE:+16} + 32) + 10))
    for ((i = 1; i <= rounds; i++)); do
        if [[ -n ${NETTOP_BASE:-} ]]; then
            echo "#### Round $i: base ($NETTOP_BASE)"
            echo
            NETTOP=$NETTOP_BASE nettop_window 16 || return 1
        fi
        echo "#### Round $i: nettop"
        echo
        nettop_window 16 || return 1
        echo "#### Round $i: floor"
        echo
        local fifo=/tmp/nettop-bench-floor.$$
        rm -f "$fifo"; mkfifo "$fifo"
        "$HERE/target/release/examples/bpf_floor" <"$fifo" >/dev/null &
        local fp=$!
        BG+=("$fp")
        exec 7>"$fifo"
        sleep 2
        bpf_window "$fp" || return 1
        exec 7>&-
        wait "$fp" 2>/dev/null || true
        rm -f "$fifo"
    done
    rps_load_down
}

# (b) Observer effect: the victim's work rate with nettop running vs not,
# interleaved A/B so drift in the load hits both sides alike.
observer_rounds() {  # observer_rounds LABEL
    local label=$1 a=() b=() i r
    for ((i = 0; i < ROUNDS; i++)); do
        r=$("$VICTIM" --cpu 1 --ms "$ROUND_MS" --summary | jq .chunks_per_ms)
        a+=("$r")
        "$NETTOP" -b -d 1 >/dev/null &
        local np=$!
        BG+=("$np")
        sleep 1.5   # BPF load and attach
        kill -0 "$np" 2>/dev/null || { echo "nettop -b exited early; run it by hand to see why" >&2; return 1; }
        r=$("$VICTIM" --cpu 1 --ms "$ROUND_MS" --summary | jq .chunks_per_ms)
        b+=("$r")
        kill "$np" 2>/dev/null || true
        wait "$np" 2>/dev/null || true
    done
    printf '%s\n' "${a[@]}" >/tmp/nettop-bench-a.$$
    printf '%s\n' "${b[@]}" >/tmp/nettop-bench-b.$$
    paste /tmp/nettop-bench-a.$$ /tmp/nettop-bench-b.$$ | awk -v label="$label" '
      { a[NR] = $1; b[NR] = $2; sa += $1; sb += $2; n++ }
      END {
        ma = sa / n; mb = sb / n
        for (i = 1; i <= n; i++) { va += (a[i] - ma)^2; vb += (b[i] - mb)^2; d = b[i] / a[i] - 1; sd += d; dd[i] = d }
        md = sd / n; for (i = 1; i <= n; i++) vd += (dd[i] - md)^2
        printf "| %s | %d | %.0f ± %.0f | %.0f ± %.0f | %+.2f %% ± %.2f |\n", label, n, ma, sqrt(va / (n - 1)), mb, sqrt(vb / (n - 1)), 100 * (mb / ma - 1), 100 * sqrt(vd / (n - 1)) / sqrt(n)
      }'
    rm -f /tmp/nettop-bench-a.$$ /tmp/nettop-bench-b.$$
}

bench_observer() {
    echo "### Observer effect: victim (CPU 1) work rate, nettop off (A) vs on (B), interleaved"
    echo
    echo "$ROUNDS A/B pairs of ${ROUND_MS} ms victim runs (\`examples/victim --cpu 1 --summary\`); nettop is \`nettop -b -d 1\`, started 1.5 s before each B run. Change = mean(B)/mean(A) - 1; ± is the standard error of the per-pair change."
    echo
    echo "| load | pairs | A chunks/ms | B chunks/ms | change |"
    echo "|---|---:|---:|---:|---:|"
    observer_rounds "idle"
    netns_up 2
    load_start $((ROUNDS * (ROUND_MS / 1000 * 2 + 3) + 10)) 0
    observer_rounds "netns iperf3, RPS -> CPU 1"
    netns_down
    echo
}

# (c) nettop's own cost with many processes, next to top -b in the same run.
bench_procs() {
    echo "### nettop vs top -b at 1 s with $NPROCS extra processes"
    echo
    local i
    for ((i = 0; i < NPROCS; i++)); do
        sleep 600 &
        SLEEPERS+=($!)
    done
    sleep 1
    local ntasks
    ntasks=$(ls -d /proc/[0-9]* | wc -l)
    local frames=$((SAMPLE_S + 5))
    "$NETTOP" -b -d 1 -n "$frames" >/dev/null &
    local np=$!
    BG+=("$np")
    COLUMNS=200 top -b -d 1 -n "$frames" -w 200 >/dev/null &
    local tp=$!
    BG+=("$tp")
    sleep 3   # past start-up (BPF load, first full /proc scan)
    local n0 t0 w0 nmax=0 tmax=0 r
    n0=$(ticks "$np"); t0=$(ticks "$tp"); w0=$(date +%s.%N)
    for ((i = 0; i < SAMPLE_S; i++)); do
        sleep 1
        r=$(rss_kb "$np"); ((r > nmax)) && nmax=$r
        r=$(rss_kb "$tp"); ((r > tmax)) && tmax=$r
    done
    local n1 t1 w1
    n1=$(ticks "$np"); t1=$(ticks "$tp"); w1=$(date +%s.%N)
    wait "$np" "$tp" 2>/dev/null || true
    kill "${SLEEPERS[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    SLEEPERS=()
    echo "$ntasks processes in /proc. \`$NETTOP -b -d 1\` and \`top -b -d 1\` run side by side; utime+stime from /proc/<pid>/stat over ${SAMPLE_S} s after a 3 s start-up, peak VmRSS sampled every second."
    echo
    echo "| program | CPU % of one CPU | peak RSS MiB |"
    echo "|---|---:|---:|"
    awk -v d="$((n1 - n0))" -v w="$w1" -v w0="$w0" -v hz="$hz" -v r="$nmax" 'BEGIN { printf "| nettop -b -d 1 | %.2f | %.1f |\n", 100 * d / hz / (w - w0), r / 1024 }'
    awk -v d="$((t1 - t0))" -v w="$w1" -v w0="$w0" -v hz="$hz" -v r="$tmax" 'BEGIN { printf "| top -b -d 1 | %.2f | %.1f |\n", 100 * d / hz / (w - w0), r / 1024 }'
    echo
}

# (a) for two builds in one run, alternated so the machine's drift hits both.
bench_bpf_ab() {  # bench_bpf_ab OLD NEW
    local old=$1 new=$2 i
    for ((i = 1; i <= ${ROUNDS_AB:-3}; i++)); do
        echo "#### Round $i: A = $old"
        NETTOP=$old bench_bpf
        echo "#### Round $i: B = $new"
        NETTOP=$new bench_bpf
    done
}

case $WHAT in
    all) bench_bpf; bench_observer; bench_procs ;;
    bpf) bench_bpf ;;
    bpf-ab) bench_bpf_ab "${2:?bpf-ab needs OLD and NEW nettop binaries}" "${3:?bpf-ab needs OLD and NEW nettop binaries}" ;;
    observer) bench_observer ;;
    procs) bench_procs ;;
    floor) bench_floor ;;
    *) echo "usage: bench/collector.sh [all|bpf|observer|procs|floor|bpf-ab OLD NEW]" >&2; exit 2 ;;
esac
