#!/usr/bin/env bash
# Socket traffic benchmarks for BENCHMARKS.md "## Socket traffic (who robs
# whom)". Run as root on a machine with >= 2 CPUs:
#
#     bash bench/traffic.sh            # all four parts, in this order
#     bash bench/traffic.sh cost       # (1) ns per run of each traffic program: nettop,
#                                      #     nettop without --traffic and empty programs on the
#                                      #     same tracepoints, alternated; steered UDP, then
#                                      #     TCP request/response
#     bash bench/traffic.sh ab         # (2) a ~200k calls/s TCP request/response task's
#                                      #     throughput: no nettop / nettop / nettop --traffic,
#                                      #     interleaved
#     bash bench/traffic.sh size       # (3) NET_RX ns per delivered packet, 64 vs 1400 B
#     bash bench/traffic.sh robbed     # (4) two UDP flows (30, 90 Mbit/s) robbing one task
#
# Knobs: ROUNDS=3 (alternations in cost and size), WIN_S=10 (bpf_stats
# window), AB_ROUNDS=6, AB_S=5 (seconds per throughput run), SIZE_RATE=40000
# (datagrams/s in size), ROB_S=12 (frames summed in robbed),
# NETTOP=path (default: target/release/nettop, built if missing),
# NETTOP_BASE=path (cost: the same rounds also run this nettop --traffic,
# the A/B against another build in one run).
#
# Prints markdown on stdout, progress on stderr. Everything it starts
# (namespaces, iperf3, sockload, victims, nettop, the floor programs) is
# removed on every exit, kernel.bpf_stats_enabled is restored.
set -euo pipefail

cd "$(dirname "$0")/.."
HERE=$PWD
# shellcheck source=bench/netns-load.sh
source "$HERE/bench/netns-load.sh"

usage() { echo "usage: bench/traffic.sh [all|cost|ab|size|robbed]" >&2; exit 2; }
WHAT=${1:-all}
case $WHAT in all | cost | ab | size | robbed) ;; *) usage ;; esac
ROUNDS=${ROUNDS:-3}
WIN_S=${WIN_S:-10}
AB_ROUNDS=${AB_ROUNDS:-6}
AB_S=${AB_S:-5}
SIZE_RATE=${SIZE_RATE:-40000}
ROB_S=${ROB_S:-12}

[[ $(id -u) -eq 0 ]] || { echo "bench/traffic.sh: run as root (BPF, network namespaces)" >&2; exit 2; }
[[ $(nproc) -ge 2 ]] || { echo "bench/traffic.sh: needs at least 2 CPUs" >&2; exit 2; }
for t in jq bpftool iperf3 taskset ip; do
    command -v "$t" >/dev/null || { echo "bench/traffic.sh: '$t' missing: apt-get install jq bpftool iperf3 util-linux iproute2" >&2; exit 2; }
done

cargo build --release --quiet --example sockload --example bpf_floor --example victim
if [[ -z ${NETTOP:-} ]]; then
    cargo build --release --quiet --bin nettop
    NETTOP=$HERE/target/release/nettop
fi
EX=${CARGO_TARGET_DIR:-$HERE/target}/release/examples
SOCKLOAD=$EX/sockload
FLOOR=$EX/bpf_floor
VICTIM=$EX/victim

OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
TMPD=$(mktemp -d /tmp/nettop-traffic.XXXXXX)
BG=()
FLOOR_FD_OPEN=0
cleanup() {
    local p
    if ((FLOOR_FD_OPEN)); then exec 7>&-; fi
    netns_down
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BG[@]}"; do wait "$p" 2>/dev/null || true; done
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS" || true
    rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "[traffic] $*" >&2; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
spawn() { "$@" & BG+=($!); }

# The prog ids PID holds (from its fds' fdinfo), as a JSON array; waits up
# to 15 s for them to appear.
prog_ids() {
    local i ids
    for ((i = 0; i < 150; i++)); do
        ids=$( (grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null || true) | awk '{print $2}' | sort -un | jq -Rs '[split("\n")[] | select(length > 0) | tonumber]')
        [[ $ids != "[]" ]] && { echo "$ids"; return 0; }
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    echo "pid $1 loaded no BPF programs (run it by hand to see why)" >&2
    return 1
}

# window PID FRAMES_FILE: WIN_S seconds of bpf_stats for PID's programs.
# Prints one JSON object: {progs: {name: {rps, ns}}, frames: [...]} with the
# JSON frames FRAMES_FILE gained during the window (empty when it is not a
# nettop).
window() {
    local pid=$1 ff=$2 ids n0=0 n1=0
    ids=$(prog_ids "$pid") || return 1
    [[ -f $ff ]] && n0=$(wc -l <"$ff")
    bpftool prog show -j >"$TMPD/s1"
    sleep "$WIN_S"
    bpftool prog show -j >"$TMPD/s2"
    if [[ -f $ff ]]; then
        n1=$(wc -l <"$ff")
        sed -n "$((n0 + 1)),${n1}p" "$ff" | jq -c '{cpus: [.cpus[] | {cpu, net_rx: .traced_softirq_pct[3], packets_per_s, net_rx_per_s}], buckets: .traffic.buckets}' >"$TMPD/fr"
    else
        : >"$TMPD/fr"
    fi
    jq -c -n --argjson ids "$ids" --slurpfile a "$TMPD/s1" --slurpfile b "$TMPD/s2" --slurpfile fr "$TMPD/fr" --argjson w "$WIN_S" '
      def mine: [.[] | select(.id as $i | $ids | index($i))];
      ($a[0] | mine | map({key: (.id | tostring), value: .}) | from_entries) as $old
      | {progs: ([$b[0] | mine | .[]
          | . as $p | ($old[(.id | tostring)] // {run_cnt: 0, run_time_ns: 0}) as $o
          | ((($p.run_cnt // 0) - ($o.run_cnt // 0))) as $n
          | ((($p.run_time_ns // 0) - ($o.run_time_ns // 0))) as $t
          | {key: $p.name, value: {rps: ($n / $w), ns: (if $n > 0 then $t / $n else null end), tps: ($t / $w)}}]
          | from_entries),
         frames: $fr}'
}

# nettop_up OUT ARGS...: a JSON nettop writing frames to OUT; NT_PID.
nettop_up() {
    local out=$1
    shift
    "$NETTOP" -b --json -d 1 -n 100000 "$@" >"$out" 2>"$out.err" &
    NT_PID=$!
    BG+=("$NT_PID")
    prog_ids "$NT_PID" >/dev/null || { cat "$out.err" >&2; return 1; }
    sleep 3   # past start-up: the first frames, the first task pass
}

# floor_up: the empty programs (bpf/testing/floor.bpf.c); FL_PID.
floor_up() {
    rm -f "$TMPD/fifo"
    mkfifo "$TMPD/fifo"
    "$FLOOR" <"$TMPD/fifo" >/dev/null &
    FL_PID=$!
    BG+=("$FL_PID")
    exec 7>"$TMPD/fifo"
    FLOOR_FD_OPEN=1
    prog_ids "$FL_PID" >/dev/null
    sleep 1
}
floor_down() {
    exec 7>&-
    FLOOR_FD_OPEN=0
    wait "$FL_PID" 2>/dev/null || true
}

# The programs of the traffic feature, nettop's name then the floor's.
TRAFFIC_PROGS="btf_sock_rx:empty_sock_rx btf_sock_tx:empty_sock_tx btf_sk_ready:empty_sk_ready btf_skb_drop:empty_skb_drop btf_dev_queue:empty_dev_queue btf_csd_queue:empty_csd_queue"

# ---------------------------------------------------------------- (1) cost

# cost_rounds SCENE: ROUNDS x (nettop --traffic, nettop, floor), one
# window each, appended to $TMPD/cost.jsonl.
cost_rounds() {
    local scene=$1 r cfg w cfgs="traffic no-traffic floor"
    [[ -n ${NETTOP_BASE:-} ]] && cfgs="traffic base no-traffic floor"
    for ((r = 1; r <= ROUNDS; r++)); do
        for cfg in $cfgs; do
            say "cost: $scene round $r: $cfg"
            case $cfg in
                traffic) nettop_up "$TMPD/nt.json" --bpf-stats --traffic; w=$(window "$NT_PID" "$TMPD/nt.json"); stop_pid "$NT_PID" ;;
                base) NETTOP=$NETTOP_BASE nettop_up "$TMPD/nt.json" --bpf-stats --traffic; w=$(window "$NT_PID" "$TMPD/nt.json"); stop_pid "$NT_PID" ;;
                no-traffic) nettop_up "$TMPD/nt.json" --bpf-stats; w=$(window "$NT_PID" "$TMPD/nt.json"); stop_pid "$NT_PID" ;;
                floor) floor_up; w=$(window "$FL_PID" /nonexistent); floor_down ;;
            esac
            jq -c --arg s "$scene" --argjson r "$r" --arg c "$cfg" '. + {scene: $s, round: $r, cfg: $c}' <<<"$w" >>"$TMPD/cost.jsonl"
        done
    done
}

cost_table() {  # cost_table SCENE
    local scene=$1
    if [[ -n ${NETTOP_BASE:-} ]]; then
        echo "| program | runs/s | nettop ns/run | empty ns/run | nettop − empty | base ns/run | base − empty |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
    else
        echo "| program | runs/s | nettop ns/run | empty ns/run | nettop − empty |"
        echo "|---|---:|---:|---:|---:|"
    fi
    local pair nt fl
    for pair in $TRAFFIC_PROGS; do
        nt=${pair%%:*} fl=${pair##*:}
        jq -r -s --arg s "$scene" --arg nt "$nt" --arg fl "$fl" '
          def rounds(c; p): [.[] | select(.scene == $s and .cfg == c) | .progs[p] | select(. != null and .ns != null)];
          def fmt: map(.ns | round | tostring) | join(" / ");
          def over(a; f): if (f | length) > 0 and (a | length) > 0 then ((a | map(.ns) | add / length) - (f | map(.ns) | add / length) | round | tostring) else "–" end;
          rounds("traffic"; $nt) as $a | rounds("floor"; $fl) as $f | rounds("base"; $nt) as $b
          | if ($a | length) == 0 then empty else
            "| `\($nt)` | \($a | map(.rps) | add / length | round) | \($a | fmt) | \(if ($f | length) > 0 then ($f | fmt) else "–" end) | \(over($a; $f)) |"
            + (if $base then " \(if ($b | length) > 0 then ($b | fmt) else "–" end) | \(over($b; $f)) |" else "" end) end' --argjson base "$([[ -n ${NETTOP_BASE:-} ]] && echo true || echo false)" "$TMPD/cost.jsonl"
    done
    # The softirq exit with and without the per-run split, and what the
    # traffic programs add inside NET_RX against NET_RX time itself.
    jq -r -s --arg s "$scene" '
      def cfgs(c): [.[] | select(.scene == $s and .cfg == c)];
      def m(f): (map(f) | add / length);
      def netrx: [.frames[] | [.cpus[].net_rx] | add] | (if length > 0 then add / length else 0 end);
      cfgs("traffic") as $t | cfgs("no-traffic") as $n | cfgs("floor") as $f
      | ($t | m(.progs.btf_si_out.ns)) as $so_t | ($n | m(.progs.btf_si_out.ns)) as $so_n
      | ($t | m(.progs.btf_si_out.rps)) as $so_r
      | ($t | m(.progs.btf_sk_ready.tps // 0)) as $skr
      | ($t | m(netrx)) as $nr_pct
      | (($so_t - $so_n) * $so_r) as $grow
      | "| `btf_si_out` (all softirqs) | \($so_r | round) | \($t | map(.progs.btf_si_out.ns | round | tostring) | join(" / ")) | \($n | map(.progs.btf_si_out.ns | round | tostring) | join(" / ")) (without --traffic) | \($so_t - $so_n | round) |",
        "",
        "NET_RX (all CPUs, nettop with traffic): \($nr_pct * 100 | round / 100) % of a CPU = \($nr_pct * 1e7 | round) ns/s. Added inside it by the traffic feature: `btf_sk_ready` \($skr | round) ns/s + `btf_si_out` growth \($grow | round) ns/s (\($so_t - $so_n | round) ns × \($so_r | round) runs/s) = **\(if $nr_pct > 0 then (($skr + $grow) / ($nr_pct * 1e7) * 100 * 100 | round / 100) else "–" end) % of NET_RX time**.",
        "",
        ($t | m([.progs | to_entries[] | select(.key | test("^btf_(sock|sk_|skb|dev|csd|xdp)")) | .value.tps] | add)) as $all
      | ($t | m((.progs.btf_sock_rx.rps // 0) + (.progs.btf_sock_tx.rps // 0))) as $calls
      | (if $calls > 0 then $all / $calls else null end) as $per
      | "All traffic programs together: \($all | round) ns/s = \($all / 1e7 * 1000 | round / 1000) % of a CPU, at \($calls | round) send/receive calls/s: \(if $per then "**\($per | round) ns per call** all in (every traffic program'"'"'s time over the calls), \($per * 1e5 / 1e7 * 100 | round / 100) % of a CPU at 100k calls/s, \($per * 1e6 / 1e7 * 100 | round / 100) % at 1M" else "–" end)."' "$TMPD/cost.jsonl"
    echo
}

bench_cost() {
    echo "### Per-run cost of the traffic programs"
    echo
    echo "\`kernel.bpf_stats_enabled=1\`; ${WIN_S} s windows of \`bpftool prog show -j\`; per round, in this order: \`nettop -b --json -d 1 --bpf-stats --traffic\`${NETTOP_BASE:+, the same with the base build (\$NETTOP_BASE)}, the same without \`--traffic\`, then \`examples/bpf_floor\` (empty programs on the same tracepoints). ${ROUNDS} rounds; ns/run per round, separated by /; the difference is of the means."
    echo
    drop_caches
    sysctl -qw kernel.bpf_stats_enabled=1
    : >"$TMPD/cost.jsonl"

    echo "#### (a) Steered UDP: iperf3 -u -b 0 -l 1400 over veth (both ends on CPU 0), RPS → CPU 1, a victim spinning on CPU 1"
    echo
    netns_up 2
    load_start 86400 0   # iperf3 refuses more than a day
    spawn "$VICTIM" --cpu 1 --ms 100000000 --summary >/dev/null 2>&1
    local vic=$!
    cost_rounds udp
    stop_pid "$vic"
    netns_down
    cost_table udp

    echo "#### (b) TCP request/response: \`sockload tcp-rr\` over loopback, 32-byte messages, client and server on CPU 1"
    echo
    spawn taskset -c 1 "$SOCKLOAD" tcp-rr 100000 >/dev/null 2>&1
    local rr=$!
    cost_rounds tcp
    stop_pid "$rr"
    cost_table tcp
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
}

# ------------------------------------------------------------------ (2) ab

bench_ab() {
    echo "### A send/receive-heavy task with nettop on: --traffic vs without"
    echo
    echo "\`taskset -c 1 sockload tcp-rr ${AB_S}\` (32-byte request/response over loopback, both ends on CPU 1; 4 send/receive calls per transaction) with no nettop (off), \`nettop -b -d 1\` (no traffic, the default) and \`nettop -b -d 1 --traffic\` started 3 s before; ${AB_ROUNDS} rounds, the order rotated each round. \`kernel.bpf_stats_enabled=0\` (as in production)."
    echo
    drop_caches
    sysctl -qw kernel.bpf_stats_enabled=0
    local r k arm arms=(off no-traffic traffic) out=$TMPD/ab.txt
    : >"$out"
    for ((r = 0; r < AB_ROUNDS; r++)); do
        for k in 0 1 2; do
            arm=${arms[$(((r + k) % 3))]}
            say "ab: round $((r + 1)): $arm"
            case $arm in
                off) NT_PID= ;;
                no-traffic) nettop_up "$TMPD/ab-nt.json" ;;
                traffic) nettop_up "$TMPD/ab-nt.json" --traffic ;;
            esac
            local res
            res=$(taskset -c 1 "$SOCKLOAD" tcp-rr "$AB_S")
            echo "$r $arm $(jq .transactions_per_s <<<"$res") $(jq .calls_per_s <<<"$res")" >>"$out"
            if [[ -n $NT_PID ]]; then stop_pid "$NT_PID"; fi
        done
    done
    echo "| arm | rounds | transactions/s (mean ± sd) | calls/s | change vs without --traffic (mean of per-round ratios ± s.e.) |"
    echo "|---|---:|---:|---:|---:|"
    awk '
      { t[$2, $1] = $3; c[$2, $1] = $4; if ($1 + 1 > n) n = $1 + 1 }
      END {
        split("off no-traffic traffic", arms, " ")
        for (k = 1; k <= 3; k++) {
          a = arms[k]; s = 0; sc = 0
          for (i = 0; i < n; i++) { s += t[a, i]; sc += c[a, i] }
          m = s / n; v = 0
          for (i = 0; i < n; i++) v += (t[a, i] - m)^2
          sd = n > 1 ? sqrt(v / (n - 1)) : 0
          sr = 0; vr = 0
          for (i = 0; i < n; i++) { d[i] = t[a, i] / t["no-traffic", i] - 1; sr += d[i] }
          mr = sr / n
          for (i = 0; i < n; i++) vr += (d[i] - mr)^2
          se = n > 1 ? sqrt(vr / (n - 1)) / sqrt(n) : 0
          printf "| %s | %d | %.0f ± %.0f | %.0f | %s |\n", a, n, m, sd, sc / n, (a == "no-traffic" ? "–" : sprintf("%+.2f %% ± %.2f", 100 * mr, 100 * se))
        }
      }' "$out"
    echo
    echo "Per round (transactions/s):"
    echo
    echo '```'
    awk '{ printf "round %d %-10s %s\n", $1 + 1, $2, $3 }' "$out"
    echo '```'
    echo
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
}

# ---------------------------------------------------------------- (3) size

bench_size() {
    echo "### Per packet or per byte: NET_RX per delivered packet, 64 vs 1400-byte datagrams"
    echo
    echo "\`sockload udp-send ${SIZE_RATE} --len L\` (tx namespace, CPU 0) → veth → \`sockload udp-sink\` (rx namespace, CPU 0), RPS → CPU 1, a victim spinning on CPU 1; \`nettop -b --json -d 1\` (default) throughout; ${ROUNDS} rounds alternating 64 and 1400 bytes, ${WIN_S} s each. Per round: CPU 1's NET_RX time per packet the sink read, and the \`delivered\` bucket's time per delivered packet."
    echo
    drop_caches
    netns_up 2
    spawn ip netns exec "$NT_NS_RX" taskset -c 0 "$SOCKLOAD" udp-sink "$NT_ADDR_RX:5300" --secs 100000 >/dev/null 2>&1
    spawn "$VICTIM" --cpu 1 --ms 100000000 --summary >/dev/null 2>&1
    local vic=$!
    nettop_up "$TMPD/size.json" --traffic
    local r len n0 n1 res out=$TMPD/size.txt
    : >"$out"
    for ((r = 1; r <= ROUNDS; r++)); do
        for len in 64 1400; do
            say "size: round $r: $len B"
            spawn ip netns exec "$NT_NS_TX" taskset -c 0 "$SOCKLOAD" udp-send "$SIZE_RATE" --len "$len" --to "$NT_ADDR_RX:5300" --secs $((WIN_S + 3)) >"$TMPD/send.json"
            local sp=$!
            sleep 2
            n0=$(wc -l <"$TMPD/size.json")
            sleep "$WIN_S"
            n1=$(wc -l <"$TMPD/size.json")
            wait "$sp" || true
            sed -n "$((n0 + 1)),${n1}p" "$TMPD/size.json" | jq -s -c --argjson len "$len" --argjson r "$r" --slurpfile send "$TMPD/send.json" '
              def m(f): (map(f) | add / length);
              {r: $r, len: $len,
               sent: $send[0].sent_per_s,
               cpu1_netrx_pct: m(.cpus[1].traced_softirq_pct[3]),
               cpu1_pkts: m(.cpus[1].packets_per_s),
               del_pct: m(.traffic.buckets[] | select(.name == "delivered") | .pct),
               del_units: m(.traffic.buckets[] | select(.name == "delivered") | .units_per_s),
               read: m([.processes[] | select(.comm == "sockload") | .traffic.rx_pkts_per_s // 0] | max)}' >>"$out"
        done
    done
    stop_pid "$NT_PID"
    stop_pid "$vic"
    netns_down
    echo "| round | datagram | sent/s | read/s (nettop) | CPU 1 NET_RX % | CPU 1 NET_RX ns per packet read | delivered bucket ns per delivered packet |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    jq -r '"| \(.r) | \(.len) B | \(.sent | round) | \(.read | round) | \(.cpu1_netrx_pct * 100 | round / 100) | \(if .read > 0 then (.cpu1_netrx_pct * 1e7 / .read | round) else "–" end) | \(if .del_units > 0 then (.del_pct * 1e7 / .del_units | round) else "–" end) |"' "$out"
    jq -r -s '
      def per(l): [.[] | select(.len == l and .del_units > 0) | .del_pct * 1e7 / .del_units] | add / length;
      def cpu(l): [.[] | select(.len == l and .read > 0) | .cpu1_netrx_pct * 1e7 / .read] | add / length;
      "", "Means: delivered bucket \(per(64) | round) ns (64 B) vs \(per(1400) | round) ns (1400 B) per delivered packet, 1400/64 = \(per(1400) / per(64) * 100 | round / 100); CPU 1 NET_RX \(cpu(64) | round) vs \(cpu(1400) | round) ns per packet read (\(cpu(1400) / cpu(64) * 100 | round / 100)), for 21.9 × the bytes."' "$out"
    echo
}

# -------------------------------------------------------------- (4) robbed

bench_robbed() {
    echo "### Who robs whom: two flows, one victim"
    echo
    echo "Two iperf3 servers (rx namespace, CPU 0, ports 5201 and 5202) and two clients (tx namespace, CPU 0), UDP 1400 B at 30 and 90 Mbit/s; RPS → CPU 1, where a victim spins. \`nettop -b --json -d 1\` (default); the \`traffic.robbed\` pairs (victim = the spinner) summed over ${ROB_S} frames."
    echo
    drop_caches
    netns_up 2
    local p port s30 s90
    for port in 5201 5202; do
        ip netns exec "$NT_NS_RX" taskset -c 0 iperf3 -s -1 -B "$NT_ADDR_RX" -p "$port" >/dev/null 2>&1 &
        BG+=($!)
        [[ $port == 5201 ]] && s30=$! || s90=$!
    done
    for p in $(seq 50); do
        sleep 0.1
        [[ $(ip netns exec "$NT_NS_RX" ss -ltn 2>/dev/null | grep -cE ':520[12] ') -ge 2 ]] && break
    done
    spawn "$VICTIM" --cpu 1 --ms 100000000 --summary >/dev/null 2>&1
    local vic=$!
    local dur=$((ROB_S + 12))
    spawn ip netns exec "$NT_NS_TX" taskset -c 0 iperf3 -c "$NT_ADDR_RX" -p 5201 -t "$dur" -i 0 -u -b 30M -l 1400 >/dev/null 2>&1
    spawn ip netns exec "$NT_NS_TX" taskset -c 0 iperf3 -c "$NT_ADDR_RX" -p 5202 -t "$dur" -i 0 -u -b 90M -l 1400 >/dev/null 2>&1
    sleep 1
    nettop_up "$TMPD/rob.json" --traffic
    say "robbed: ${ROB_S} s"
    local n0 n1
    n0=$(wc -l <"$TMPD/rob.json")
    sleep "$ROB_S"
    sleep 0.5
    n1=$(wc -l <"$TMPD/rob.json")
    stop_pid "$NT_PID"
    sed -n "$((n0 + 1)),$((n0 + ROB_S))p" "$TMPD/rob.json" >"$TMPD/rob-win.json"
    stop_pid "$vic"
    netns_down
    jq -r -s --argjson vic "$vic" --argjson a "$s30" --argjson b "$s90" '
      def pair(p): [.[] | .traffic.robbed[] | select(.victim_pid == $vic and .beneficiary_pid == p)];
      def proc(p): [.[] | .processes[] | select(.pid == p) | .traffic];
      length as $n
      | (pair($a) | map(.pct) | add / $n) as $pa | (pair($b) | map(.pct) | add / $n) as $pb
      | (pair($a) | map(.pkts_per_s) | add / $n) as $ka | (pair($b) | map(.pkts_per_s) | add / $n) as $kb
      | (proc($a) | map(.rx_pkts_per_s) | add / $n) as $ra | (proc($b) | map(.rx_pkts_per_s) | add / $n) as $rb
      | (proc($a) | map(.caused_pct) | add / $n) as $ca | (proc($b) | map(.caused_pct) | add / $n) as $cb
      | "| beneficiary | robbed % of a CPU | robbed pkts/s | read pkts/s | CAUSED % |",
        "|---|---:|---:|---:|---:|",
        "| iperf3 server, 30 Mbit/s | \($pa * 1000 | round / 1000) | \($ka | round) | \($ra | round) | \($ca * 1000 | round / 1000) |",
        "| iperf3 server, 90 Mbit/s | \($pb * 1000 | round / 1000) | \($kb | round) | \($rb | round) | \($cb * 1000 | round / 1000) |",
        "| 90 : 30 | **\($pb / $pa * 100 | round / 100)** | **\($kb / $ka * 100 | round / 100)** | \($rb / $ra * 100 | round / 100) | \($cb / $ca * 100 | round / 100) |",
        "",
        "\($n) frames; robbed ns per packet: \($pa * 1e7 / $ka | round) (30 Mbit/s flow) vs \($pb * 1e7 / $kb | round) (90 Mbit/s flow)."' "$TMPD/rob-win.json"
    echo
}

echo "Machine: $(nproc) CPUs, $(uname -r), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "nettop: $NETTOP ($("$NETTOP" --version 2>/dev/null | head -1))"
echo
case $WHAT in
    all) bench_cost; bench_ab; bench_size; bench_robbed ;;
    cost) bench_cost ;;
    ab) bench_ab ;;
    size) bench_size ;;
    robbed) bench_robbed ;;
esac
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
