/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by nettop.bpf.c and src/collector/bpf.rs. The Rust side reads
 * them through the skeleton's generated types (libbpf-cargo, from this
 * object's BTF), so layouts cannot drift; the NT_* constants' meanings are
 * mirrored by hand in src/collector/bpf.rs and src/model/raw.rs.
 *
 * Every field is a __u64 (or a pair of __u32) so the layout has no padding.
 */
#ifndef __NETTOP_H
#define __NETTOP_H

#define NT_NR_SOFTIRQS 10
#define NT_NR_CTX 3
#define NT_CTX_STOLEN 0
#define NT_CTX_INLINE 1
#define NT_CTX_KSOFTIRQD 2

#define NT_MAX_CPUS 1024
#define NT_NET_RX 3

/* Interruption classes, for the calibrated hidden cost (model::hidden). */
#define NT_INTR_DEVICE 0
#define NT_INTR_TIMER 1
#define NT_INTR_IPI 2
#define NT_INTR_OTHER 3
/* Split off the IPIs by what they do: a call-function IPI that ran a
 * remote TLB flush (tlb:tlb_flush, TLB_REMOTE_SHOOTDOWN, inside it), and
 * the reschedule vector. Both still count in ipi_count. */
#define NT_INTR_TLB 4
#define NT_INTR_RESCHED 5
#define NT_NR_INTR 6

/*
 * Handlers, for the per-CPU run counts (nt_cpu.runs). bpf_stats gives each
 * program's run time and run count summed over all CPUs; each handler also
 * counts its own runs on the CPU it runs on, so user space can share a
 * program's time out over the CPUs it ran on (nettop's own cost per CPU).
 * A handler's tp_btf and raw_tp twins share an index: only one of them is
 * loaded. Mirrored by RUN_HANDLERS in src/collector/bpf/mod.rs.
 */
#define NT_RUN_IRQ_IN 0
#define NT_RUN_IRQ_OUT 1
#define NT_RUN_SYSVEC_IN 2
#define NT_RUN_SYSVEC_OUT 3
#define NT_RUN_SI_RAISE 4
#define NT_RUN_SI_IN 5
#define NT_RUN_SI_OUT 6
#define NT_RUN_NAPI_POLL 7
#define NT_RUN_TASK_EXIT 8
#define NT_RUN_TLB_FLUSH 9
#define NT_RUN_SOCK_RX 10
#define NT_RUN_SOCK_TX 11
#define NT_RUN_SK_READY 12
#define NT_RUN_SKB_DROP 13
#define NT_RUN_DEV_QUEUE 14
#define NT_RUN_XDP_REDIRECT 15
#define NT_RUN_XDP_EXCEPTION 16
#define NT_RUN_XDP_BULK_TX 17
#define NT_RUN_CSD_QUEUE 18
#define NT_NR_RUNS 19

/* Socket traffic by protocol (inet sockets only: unix and netlink sockets
 * carry no network traffic). */
#define NT_PROTO_TCP 0
#define NT_PROTO_UDP 1
#define NT_PROTO_OTHER 2
#define NT_NR_PROTO 3

/*
 * Where a NET_RX run's time went, by what the run did (see nt_rx_charge):
 * delivered to a socket some task reads, delivered to a socket nobody has
 * read yet, dropped (skb:kfree_skb), forwarded (sent on with no local
 * socket), handled by XDP (redirect, TX, exception), steered to another
 * CPU by RPS (an IPI to run it there), or a run in which none of these
 * was seen.
 */
#define NT_RX_DELIVERED 0
#define NT_RX_UNREAD 1
#define NT_RX_DROPPED 2
#define NT_RX_FORWARDED 3
#define NT_RX_XDP 4
#define NT_RX_STEERED 5
#define NT_RX_NOSOCK 6
#define NT_NR_RX 7

/* Distinct (reader, cgroup) pairs a NET_RX run keeps apart; deliveries to
 * more readers in one run are charged to no task (caused_lost_ns). */
#define NT_RUN_READERS 8

/* Socket traffic a task moved itself (sock:sock_recv_length and
 * sock_send_length, in its own context), by NT_PROTO_*. */
struct nt_sock_io {
	__u64 rx_bytes[NT_NR_PROTO];
	__u64 rx_calls[NT_NR_PROTO];
	__u64 tx_bytes[NT_NR_PROTO];
	__u64 tx_calls[NT_NR_PROTO];
};

/* Interruptions of one class and their handler time, side by side. */
struct nt_intr {
	__u64 count;
	__u64 ns;
};

/* Interrupt work charged to a task, or to a CPU. Mirrors model::raw::IrqAcct. */
struct nt_acct {
	/* Outermost interruptions by NT_INTR_* class, and their handler
	 * time. Indexed by class, an interruption's exit is two adds, not a
	 * branch per total and per class: it runs tens of thousands of times
	 * a second. User space derives the device and system-vector totals
	 * and the IPI family (collector::bpf::read::acct_from), the model's
	 * account (sample::IrqAcct says what each tells). */
	struct nt_intr intr[NT_NR_INTR];
	/* Of the interruptions above, by class: those that landed inside a
	 * stolen softirq run. Their untraced entry/exit cost lies within that
	 * run's span, so STOLEN already holds it. */
	__u64 in_softirq[NT_NR_INTR];
	/* Of the softirq runs: those in NT_CTX_STOLEN (each has an untraced
	 * entry/exit cost the task pays for someone else). */
	__u64 softirq_stolen_count;
	__u64 softirq_ns[NT_NR_CTX][NT_NR_SOFTIRQS];
	__u64 softirq_count[NT_NR_SOFTIRQS];
	/* Socket traffic the task moved itself, and the receive processing
	 * spent delivering to sockets it reads (its share of the NET_RX runs
	 * that delivered to them, wherever they ran): kept here so a
	 * thread's traffic follows the same exit and per-process path as its
	 * interrupt time. */
	struct nt_sock_io io;
	__u64 caused_ns;
	__u64 caused_pkts;
	/* Its share of the RPS IPIs that brought those packets, in
	 * thousandths of an IPI: user space adds their untraced cost (their
	 * handler time is in caused_ns). */
	__u64 caused_ipis_milli;
};

/* Value of the per-task hash, keyed by TID (and of the per-process
 * `exited` hash, keyed by TGID, where start_boottime is the group leader's). */
struct nt_task {
	/* task->start_boottime: tells a reused TID from the task we counted. */
	__u64 start_boottime;
	__u32 tgid;
	__u32 _pad;
	/* Task sampler pass that last saw this entry: entries no pass sees
	 * belong to nobody and are swept by user space. */
	__u64 seen_gen;
	struct nt_acct acct;
};

/* A thread that exited (sched_process_exit) while its process lives on,
 * kept until late batches from other CPUs' slots can no longer arrive
 * (LRU: old ones fall out). */
struct nt_tomb {
	__u64 start_boottime;
	__u64 leader_start_boottime;
	__u32 tgid;
	__u32 _pad;
};

/*
 * One task as the task sampler (iter/task) emits it: the head alone
 * (NT_REC_HEAD_LEN bytes) unless NT_REC_FULL is set, then the whole
 * record. Followed by one struct nt_acct when NT_REC_ACCT is set (the
 * thread's own interrupt accounting) and one more when NT_REC_EXITED is
 * set (interrupt accounting of the group's threads that exited; only on
 * the group leader's record).
 */
#define NT_REC_ACCT 1
#define NT_REC_EXITED 2
/* Identity and process-wide fields are filled and sent (always with
 * thread rows; otherwise only on the group leader's record). */
#define NT_REC_FULL 4
/* The mm fields are filled: a full record of a group leader that has an
 * address space (kernel threads and zombies have none). */
#define NT_REC_MM 8
#define NT_REC_MASK_WORDS 4
struct nt_task_rec {
	/* The head: what a thread adds to its process. In process mode it is
	 * all a thread other than the leader sends, a quarter of a record:
	 * at 30,000 threads each pass copies 5 MB less. */
	__u32 tgid;
	__u32 tid;
	__u32 rec_flags;
	__u32 _pad;
	__u64 start_boottime;
	/* Raw, tick-sampled ns (task->utime/stime) and the scheduler's runtime:
	 * user space scales them as cputime_adjust() does for /proc. */
	__u64 utime;
	__u64 stime;
	__u64 sum_exec_runtime;
	__u64 run_delay;
	/* NT_REC_FULL from here on. */
	__u32 ppid;
	__u32 euid;
	/* signal_struct: cumulative times of the group's exited threads. */
	__u64 sig_utime;
	__u64 sig_stime;
	__u64 sig_runtime;
	__u64 cgroup_id;
	/* mm (NT_REC_MM), in pages as /proc/PID/statm counts them: total_vm
	 * (VIRT), resident anonymous pages, resident file + shmem pages (SHR;
	 * RES is both). */
	__u64 vm_pages;
	__u64 rss_anon;
	__u64 rss_shared;
	__u64 cpus_mask[NT_REC_MASK_WORDS];
	__u32 state;
	__u32 exit_state;
	__u32 flags;
	__u32 cpu;
	__u32 nr_cpus_allowed;
	__u32 nr_threads;
	/* task->prio and ->static_prio: /proc's priority is prio - 100, its
	 * nice static_prio - 120. */
	__s32 prio;
	__s32 static_prio;
	char comm[16];
};
#define NT_REC_HEAD_LEN __builtin_offsetof(struct nt_task_rec, ppid)

/* How the last run of the open-coded task walk (walk_tasks) ended. */
#define NT_WALK_NOT_RUN 0
/* The pass is complete. */
#define NT_WALK_DONE 1
/* The ring filled: the run's records are incomplete; walk_need says how
 * much ring the run needed. */
#define NT_WALK_OVERFLOW 2
/* This kernel lacks what the walk needs (bpf_task_from_pid, 6.2), or the
 * task list's head was not found. */
#define NT_WALK_UNSUPPORTED 3
/* User space has put no ring in the slot. */
#define NT_WALK_NO_RING 4
/* The run stopped at its span budget: the next run resumes after the
 * thread in walk_resume_tid. */
#define NT_WALK_MORE 5
/* The thread to resume after has exited: the pass cannot go on. */
#define NT_WALK_LOST 6

/* Per-CPU cumulative counters (PERCPU_ARRAY, one slot). */
struct nt_cpu {
	/* runs of each handler on this CPU, by NT_RUN_* (see there) */
	__u64 runs[NT_NR_RUNS];
	/* Call-function IPIs that raised NET_RX here (RPS handing packets
	 * over) and their handler time: each is the next NET_RX run's, and
	 * shared out with it, so rx_ns adds up to net_rx_ns + rps_ipi_ns. */
	__u64 rps_ipi_ns;
	__u64 rps_ipis;
	struct nt_acct acct;
	/* NET_RX and napi, see model::raw::CpuNet */
	__u64 net_rx_actions;
	__u64 net_rx_ns;
	__u64 net_rx_restarts;
	__u64 net_rx_max_ns;
	__u64 napi_polls;
	__u64 napi_work;
	__u64 napi_budget_exhausted;
	/* health: nothing is dropped silently */
	__u64 map_full;
	__u64 map_full_ns;
	__u64 napi_map_full;
	__u64 unmatched_exits;
	/* interrupt time that hit while its slot was being flushed: counted
	 * per CPU, not per task */
	__u64 unattributed;
	__u64 unattributed_ns;
	/* a slot still busy when the sample-time flush ran (flushed next time) */
	__u64 flush_deferred;
	/* softirq runs whose raise was not seen (collector attached meanwhile) */
	__u64 unknown_raise;
	/* This CPU's NET_RX time (net_rx_ns, all contexts) split by
	 * NT_RX_*, and the units (deliveries, drops, forwards, XDP actions)
	 * it was split over; the buckets add up to net_rx_ns but for
	 * rounding. */
	__u64 rx_ns[NT_NR_RX];
	__u64 rx_units[NT_NR_RX];
	/* Of rx_ns[NT_RX_DELIVERED]: charged to no task (the reader's
	 * record was gone, or a run had more than NT_RUN_READERS readers). */
	__u64 caused_lost_ns;
};

/* Who read a socket last (sock:sock_recv_length): the task its receive
 * processing is charged to. Keyed by the struct sock address. */
struct nt_sock_owner {
	__u64 start_boottime;
	__u64 cgroup_id;	/* the socket's own cgroup (v2 id) */
	__u32 tid;
	__u32 tgid;
};

/* NET_RX time that ran in a victim's context (NT_CTX_STOLEN) delivering
 * to a beneficiary's sockets. */
struct nt_rob_key {
	__u32 victim;		/* TID */
	__u32 beneficiary;	/* TID */
};
struct nt_rob {
	__u32 victim_tgid;
	__u32 beneficiary_tgid;
	__u64 beneficiary_cgroup;
	__u64 ns;
	__u64 pkts;
};

/* NET_RX time spent delivering to a cgroup's sockets (by the socket's
 * cgroup, read or not). */
struct nt_cg_caused {
	__u64 ns;
	__u64 pkts;
	__u64 ipis_milli;	/* as nt_acct's caused_ipis_milli */
};

/*
 * The calibration's probe: traced time and interruptions on the one CPU
 * being calibrated, in a global user space maps into memory, so its spinner
 * reads them after every gap in its own execution without a system call.
 */
struct nt_probe {
	/* outermost hardirq spans + softirq spans (nested hardirqs removed) */
	__u64 traced_ns;
	/* outermost hardirqs by NT_INTR_* class, but for those inside a
	 * stolen softirq run (its span holds their whole cost, see
	 * nt_acct.in_softirq) */
	__u64 intr[NT_NR_INTR];
	__u64 softirq_runs;
};

/* Per-CPU napi counters, keyed by the napi_struct address. */
struct nt_napi {
	char dev[16];
	__u32 napi_id;
	__u32 budget;
	__u64 polls;
	__u64 work;
	__u64 budget_exhausted;
	/* The device's ifindex and network namespace inode, taken at first
	 * sight: names repeat across namespaces (every pod has an eth0). */
	__u32 ifindex;
	__u32 netns;
};

#endif /* __NETTOP_H */
