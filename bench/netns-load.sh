# shellcheck shell=bash
# Sourced by bench scripts: a pair of network namespaces joined by veth,
# bounded iperf3 UDP traffic (1400-byte datagrams, unthrottled) between them pinned to one CPU, receive
# processing steered by RPS to another CPU. Same setup as tests/accuracy/.
# Every name carries this shell's pid; netns_down removes everything.

NT_NS_TX="nettop-b$$-tx"
NT_NS_RX="nettop-b$$-rx"
NT_VETH_TX="ntb$$t"
NT_VETH_RX="ntb$$r"
NT_ADDR_RX=10.213.0.2
NT_PIDS=()

netns_up() {   # netns_up RPS_MASK
    local mask=${1:-2}
    ip netns add "$NT_NS_TX"
    ip netns add "$NT_NS_RX"
    ip link add "$NT_VETH_TX" netns "$NT_NS_TX" type veth peer name "$NT_VETH_RX" netns "$NT_NS_RX"
    ip -n "$NT_NS_TX" addr add 10.213.0.1/24 dev "$NT_VETH_TX"
    ip -n "$NT_NS_RX" addr add "$NT_ADDR_RX/24" dev "$NT_VETH_RX"
    for ns in "$NT_NS_TX" "$NT_NS_RX"; do ip -n "$ns" link set lo up; done
    ip -n "$NT_NS_TX" link set "$NT_VETH_TX" up
    ip -n "$NT_NS_RX" link set "$NT_VETH_RX" up
    netns_rps "$mask"
}

netns_rps() {  # netns_rps MASK: hex CPU mask on the receiving veth's rx-0
    ip netns exec "$NT_NS_RX" sh -c "echo $1 > /sys/class/net/$NT_VETH_RX/queues/rx-0/rps_cpus"
}

load_start() { # load_start SECS CPU: iperf3 tx -> rx, both ends on CPU
    local secs=$1 cpu=$2
    ip netns exec "$NT_NS_RX" taskset -c "$cpu" iperf3 -s -1 -B "$NT_ADDR_RX" >/dev/null 2>&1 &
    NT_PIDS+=($!)
    local i
    for i in $(seq 50); do
        sleep 0.1
        if ip netns exec "$NT_NS_RX" ss -ltn 2>/dev/null | grep -q ":5201 "; then break; fi
    done
    ip netns exec "$NT_NS_TX" taskset -c "$cpu" iperf3 -c "$NT_ADDR_RX" -t "$secs" -i 0 -u -b 0 -l 1400 >/dev/null 2>&1 &
    NT_PIDS+=($!)
    sleep 0.5
}

load_stop() {
    local p ns
    for p in "${NT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for ns in "$NT_NS_TX" "$NT_NS_RX"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    done
    wait "${NT_PIDS[@]}" 2>/dev/null || true
    NT_PIDS=()
}

netns_down() {
    load_stop
    ip netns del "$NT_NS_TX" 2>/dev/null || true
    ip netns del "$NT_NS_RX" 2>/dev/null || true
}
