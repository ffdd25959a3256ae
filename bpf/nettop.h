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
#define NT_NR_RUNS 10

/* Interrupt work charged to a task, or to a CPU. Mirrors model::raw::IrqAcct. */
struct nt_acct {
	__u64 hardirq_ns;
	__u64 hardirq_count;
	__u64 sysvec_ns;
	__u64 sysvec_count;
	__u64 softirq_ns[NT_NR_CTX][NT_NR_SOFTIRQS];
	__u64 softirq_count[NT_NR_SOFTIRQS];
	/* Of sysvec_count: local timer, and IPIs (reschedule, call_function*,
	 * irq_work). What is left is "other"; device is hardirq_count. */
	__u64 timer_count;
	__u64 ipi_count;
	/* Of the softirq runs: those in NT_CTX_STOLEN (each has an untraced
	 * entry/exit cost the task pays for someone else). */
	__u64 softirq_stolen_count;
	/* Of the interruptions above, by NT_INTR_* class: those that landed
	 * inside a stolen softirq run. Their untraced entry/exit cost lies
	 * within that run's span, so STOLEN already holds it. */
	__u64 in_softirq[NT_NR_INTR];
	/* Of ipi_count: TLB shootdowns and reschedule IPIs (their own
	 * calibrated costs; the rest of ipi_count is the plain IPI class). */
	__u64 tlb_count;
	__u64 resched_count;
	/* Handler time of the plain IPIs (ipi_count less tlb_count and
	 * resched_count): per IPI, it tells the host's way of delivering
	 * interrupts apart (on the development VM ~270 ns in one state,
	 * ~480 ns in the other, where each IPI hides ~1.3 us more). */
	__u64 ipi_ns;
	/* Handler time of the TLB shootdowns (tlb_count): the same sign for a
	 * task whose IPIs are nearly all shootdowns (~470 and ~870 ns). */
	__u64 tlb_ns;
	/* Handler time of the local timer interrupts (timer_count): with the
	 * hypervisor slowed down, handler and untraced cost grow together. */
	__u64 timer_ns;
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

/* A thread that exited (sched_process_exit), kept until late batches
 * from other CPUs' slots can no longer arrive (LRU: old ones fall out). */
struct nt_tomb {
	__u64 start_boottime;
	__u64 leader_start_boottime;
	__u32 tgid;
	__u32 group_dead;
};

/*
 * One task as the task sampler (iter/task) emits it (see NT_REC_FULL for
 * which fields are filled). Followed by one
 * struct nt_acct when NT_REC_ACCT is set (the thread's own interrupt
 * accounting) and one more when NT_REC_EXITED is set (interrupt accounting
 * of the group's threads that exited; only on the group leader's record).
 */
#define NT_REC_ACCT 1
#define NT_REC_EXITED 2
/* Identity and process-wide fields are filled (always with thread rows;
 * otherwise only on the group leader's record). */
#define NT_REC_FULL 4
/* The mm fields are filled: a full record of a group leader that has an
 * address space (kernel threads and zombies have none). */
#define NT_REC_MM 8
#define NT_REC_MASK_WORDS 4
struct nt_task_rec {
	__u32 tgid;
	__u32 tid;
	__u32 ppid;
	__u32 euid;
	__u64 start_boottime;
	/* Raw, tick-sampled ns (task->utime/stime) and the scheduler's runtime:
	 * user space scales them as cputime_adjust() does for /proc. */
	__u64 utime;
	__u64 stime;
	__u64 sum_exec_runtime;
	__u64 run_delay;
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
	__u32 rec_flags;
	/* task->prio and ->static_prio: /proc's priority is prio - 100, its
	 * nice static_prio - 120. */
	__s32 prio;
	__s32 static_prio;
	__u32 _pad;
	char comm[16];
};

/* Per-CPU cumulative counters (PERCPU_ARRAY, one slot). */
struct nt_cpu {
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
	/* runs of each handler on this CPU, by NT_RUN_* (see there) */
	__u64 runs[NT_NR_RUNS];
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
