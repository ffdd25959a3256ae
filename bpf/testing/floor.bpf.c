// SPDX-License-Identifier: GPL-2.0
/*
 * The floor under nettop's per-interruption BPF cost, for the benchmark
 * (bench/collector.sh floor, examples/bpf_floor.rs): on each tracepoint an
 * RPS interruption fires, a program that does nothing, and on the four
 * that nettop timestamps, one that only reads the clock into a per-CPU
 * slot. Measured with bpf_stats under the same load as nettop, the first
 * is what any program costs there (dispatch and bpf_stats' own clock
 * reads), the difference between the two is one bpf_ktime_get_ns().
 * The socket traffic tracepoints (every send and receive call, every
 * delivered, dropped or transmitted packet, every call-function IPI
 * queued) get an empty program too: the floor under nettop's traffic
 * handlers (bench/traffic.sh).
 * Not part of nettop: loaded only by the benchmark.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[4]);
} clk SEC(".maps");

/* A per-CPU slot, so no cache line is shared between CPUs. */
static __always_inline int stamp(int i)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&clk, &zero);

	if (v)
		v[i & 3] = bpf_ktime_get_ns();
	return 0;
}

/* System vectors: raw_tp pairs that user space attaches to every
 * irq_vectors entry/exit nettop attaches its own pair to, so the floor
 * averages over the same mix of vectors (RPS IPIs, reschedules, timers). */
SEC("raw_tp")
int empty_ipi_in(struct bpf_raw_tracepoint_args *ctx) { return 0; }
SEC("raw_tp")
int empty_ipi_out(struct bpf_raw_tracepoint_args *ctx) { return 0; }
SEC("tp_btf/softirq_raise")
int BPF_PROG(empty_raise) { return 0; }
SEC("tp_btf/softirq_entry")
int BPF_PROG(empty_si_in) { return 0; }
SEC("tp_btf/softirq_exit")
int BPF_PROG(empty_si_out) { return 0; }
SEC("tp_btf/napi_poll")
int BPF_PROG(empty_napi) { return 0; }

SEC("raw_tp")
int clock_ipi_in(struct bpf_raw_tracepoint_args *ctx) { return stamp(0); }
SEC("raw_tp")
int clock_ipi_out(struct bpf_raw_tracepoint_args *ctx) { return stamp(1); }
SEC("tp_btf/softirq_entry")
int BPF_PROG(clock_si_in) { return stamp(2); }
SEC("tp_btf/softirq_exit")
int BPF_PROG(clock_si_out) { return stamp(3); }

SEC("tp_btf/sock_recv_length")
int BPF_PROG(empty_sock_rx) { return 0; }
SEC("tp_btf/sock_send_length")
int BPF_PROG(empty_sock_tx) { return 0; }
SEC("tp_btf/sk_data_ready")
int BPF_PROG(empty_sk_ready) { return 0; }
SEC("tp_btf/kfree_skb")
int BPF_PROG(empty_skb_drop) { return 0; }
SEC("tp_btf/net_dev_queue")
int BPF_PROG(empty_dev_queue) { return 0; }
SEC("tp_btf/csd_queue_cpu")
int BPF_PROG(empty_csd_queue) { return 0; }
