// SPDX-License-Identifier: GPL-2.0
/*
 * nettop: who really pays for interrupt work.
 *
 * Tracepoints only (tp_btf, with raw_tp twins for kernels where tp_btf does
 * not load): fentry/kprobes are refused on lockdown=integrity kernels and
 * nettop must work there. User space enables one twin of each pair.
 *
 * What is measured, per CPU and per task that was `current`:
 *   - device hardirq time (irq_handler_entry/exit),
 *   - x86 system vectors (irq_vectors:*: local timer, IPIs incl. the RPS
 *     call_function_single, irq_work...), which device IRQ tracepoints miss,
 *   - softirq time per vector with nested hardirq time removed, split by
 *     where it ran (see "softirq provenance" below),
 *   - NET_RX actions, restarts and napi polls per CPU and per napi.
 *
 * Cost rule: no hash update per event. Each CPU keeps a slot for the task
 * that was current at its last event and adds to it; the slot is flushed
 * into the per-task hash only when the current task changes, and at sample
 * time (user space runs nettop_flush on every CPU with BPF_PROG_TEST_RUN).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "nettop.h"

char LICENSE[] SEC("license") = "GPL";

#ifndef EEXIST
#define EEXIST 17
#endif

/* TID of ksoftirqd/<cpu>, filled in by user space before load. */
const volatile __u32 ksoftirqd_tid[NT_MAX_CPUS] = {};
#ifdef NETTOP_TESTING
/* Tests drive exact timelines: with test_clock set, now() is fake_now_ns.
 * Only the test build (the `testing` feature) has them. */
const volatile bool test_clock = false;
__u64 fake_now_ns = 0;
#endif
/* Address of rps_trigger_softirq (from /proc/kallsyms, 0 if unknown):
 * the callback of the IPI by which RPS hands packets to another CPU. */
const volatile __u64 rps_callback = 0;
/* The traffic programs are loaded (`--traffic`): only then does a NET_RX
 * run keep a tally and share its time out. */
const volatile bool count_traffic = false;
/* The task sampler runs (it copies task_io into the records each pass):
 * without it, a send or receive adds to the task's record directly. */
const volatile bool io_on_task = false;
/* CPU being calibrated + 1 (0: no calibration running), set by user space. */
__u32 probe_cpu1 = 0;
struct nt_probe probe = {};

/*
 * Outermost hardirq kind: the x86 system vector's number as the
 * irq_vectors tracepoints pass it (arch/x86/include/asm/irq_vectors.h,
 * unchanged for a decade), or one of two kinds outside the vector range.
 * The vector itself is the kind, so the entry stores it as it comes and
 * only the exit classifies it (intr_class).
 */
#define NT_KIND_DEVICE 0x100
/* A call-function IPI whose handler flushed this CPU's TLB for another. */
#define NT_KIND_TLB 0x101
#define VEC_LOCAL_TIMER 0xec
#define VEC_IRQ_WORK 0xf6
#define VEC_CALL_FUNCTION_SINGLE 0xfb
#define VEC_CALL_FUNCTION 0xfc
#define VEC_RESCHEDULE 0xfd

/*
 * Per-CPU transient state. Ownership decides safety without locks:
 *   - hi_* fields are written only by hardirq-context programs. Hardirqs run
 *     with interrupts off, so those programs never interleave on one CPU.
 *   - si_* fields are written only by softirq-context programs. Softirqs do
 *     not nest on a CPU, but a hardirq can interrupt them at any instruction.
 *   - raise bookkeeping: see the fields.
 */
struct cpu_state {
	__u64 hi_start;		/* start of the outermost hardirq */
	__u64 hi_total_ns;	/* all outermost hardirq time on this CPU, ever */
	__u32 hi_depth;
	__u32 hi_kind;
	__u64 si_start;
	__u64 si_hi_base;	/* hi_total_ns when the running softirq began */
	__u32 si_vec;
	__u32 si_ctx;
	__u32 si_active;
	__u32 hi_rps;		/* the outermost hardirq is an IPI that raised NET_RX */
	__u64 si_id;		/* pid_tgid of the task the running softirq interrupted */
	/* Raise bookkeeping, each word with a single writer context so no
	 * locked instruction is needed on the hot path:
	 *   irq_raised[v]   ++ by hardirq context only,
	 *   irq_seen[v]     = irq_raised[v] at softirq_entry (softirq only),
	 *   stolen_mask     raises from inside a stolen/ksoftirqd softirq,
	 *   task_mask       raises from process context or an inline softirq;
	 * both masks are written with interrupts off or in softirq, never from
	 * hardirq, so a hardirq landing mid-update cannot corrupt them. */
	__u32 irq_raised[NT_NR_SOFTIRQS];
	__u32 irq_seen[NT_NR_SOFTIRQS];
	__u64 stolen_mask;
	__u64 task_mask;
};

/*
 * A per-CPU batch for one task. Slot 0 is used by hardirq programs, slot 1
 * by softirq programs, so each slot has a single writer context. `busy`
 * guards against the one remaining interleaving: the sample-time flush
 * (which runs in IPI context, or locally with only preemption disabled)
 * and a program touching the same slot. Whoever finds the slot busy backs
 * off and counts what it could not attribute; nothing is lost silently.
 */
struct slot {
	__u32 tid;
	__u32 valid;
	__u32 busy;
	__u32 dirty;
	struct nt_task val;	/* same layout as the hash value: inserted as is */
};

/*
 * The napi instance this CPU polled last and what it did since it was last
 * added to the napi hash. A CPU polls the same few napis over and over (an
 * RPS target always its own backlog), so the hash lookup is paid when the
 * instance changes and at sample time, not per poll. Polls run with bottom
 * halves off and never nest on a CPU; `busy` guards against the sample-time
 * flush, as for slots.
 */
struct napi_cache {
	__u64 key;		/* napi_struct address; 0: empty */
	__u32 busy;
	__u32 budget;		/* last budget seen */
	__u64 polls;
	__u64 work;
	__u64 budget_exhausted;
};

/*
 * What the running NET_RX softirq did so far, for sharing its time out
 * when it ends: units per NT_RX_* bucket, and the deliveries per reader.
 * Written only by softirq-context programs while a NET_RX run is active
 * (a hardirq landing in between touches none of it).
 */
struct rx_reader {
	__u64 start_boottime;
	__u64 cgroup_id;
	__u32 tid;		/* 0: a socket nobody has read */
	__u32 tgid;
	__u64 pkts;
};
struct rx_run {
	__u64 units[NT_NR_RX];
	__u32 n;		/* readers in use */
	__u32 _pad;
	__u64 overflow;		/* deliveries to readers beyond NT_RUN_READERS */
	struct rx_reader r[NT_RUN_READERS];
};

/* A zeroed task record to insert (the value is too big for the BPF
 * stack). A program using it can be interrupted by another that wants it,
 * so it is claimed with `busy` like a slot. */
struct task_scratch {
	__u32 busy;
	__u32 _pad;
	struct nt_task val;
};

/* The RPS IPIs (nt_cpu's rps_ipi_ns, rps_ipis) NET_RX runs have taken
 * already. The IPIs are counted in hardirq context and taken in softirq
 * context, each side writing its own words, so neither needs a lock. */
struct rps_taken {
	__u64 ns;
	__u64 n;
};

/* Everything per CPU in one value: one (inlined) lookup per event. */
struct pcpu {
	struct cpu_state st;
	struct slot slot[2];
	struct napi_cache napi;
	struct rx_run rx;
	struct rps_taken rps;
	struct task_scratch scratch;
	struct nt_cpu stats;	/* the only part user space reads */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcpu);
} pcpus SEC(".maps");

/* Per-task totals keyed by TID; user space may resize before load and
 * deletes entries of tasks that exited. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct nt_task);
} tasks SEC(".maps");

/* Interrupt accounting of a process's threads that exited, keyed by TGID
 * (value.start_boottime is the group leader's): the kernel keeps exited
 * threads' times in signal_struct, and process totals here must match. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct nt_task);
} exited SEC(".maps");

/* Recently exited threads, keyed by TID: a batch still waiting in another
 * CPU's slot when its task exited goes to `exited`, not to a new entry. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct nt_tomb);
} tombs SEC(".maps");

/* Set by user space before each task sampler pass. */
__u64 sample_gen = 0;
/* Tasks the pass sampled, either walk (user space zeroes it before). */
__u64 pass_tasks = 0;
/* Nonzero when user space wants a full record for every thread. */
__u32 thread_rows = 0;
/* Interrupt time of exited threads that could not be kept (map full). */
__u64 exited_lost = 0;
__u64 exited_lost_ns = 0;
/* Gives user space the record layout through the skeleton's types. */
const volatile struct nt_task_rec nt_task_rec_layout = {};

/* napi instances keyed by the napi_struct address (backlog napis of RPS
 * have no device: each CPU's backlog is its own entry). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct nt_napi);
} napis SEC(".maps");

/* A task's own socket traffic, kept on the task itself: found without a
 * hash on every send and receive. The task sampler and the task's exit copy
 * it into the task's record (io_on_task). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct nt_sock_io);
} task_io SEC(".maps");

/* Last reader of each socket, kept on the socket itself: found without a
 * hash (the receive paths run per call and per packet) and gone with it. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct nt_sock_owner);
} sock_reader SEC(".maps");

/* Victim x beneficiary pairs of stolen NET_RX time (LRU: bounded). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nt_rob_key);
	__type(value, struct nt_rob);
} robbed SEC(".maps");

/* Receive processing per socket cgroup. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct nt_cg_caused);
} cg_caused SEC(".maps");

#define SLOT_HARDIRQ 0
#define SLOT_SOFTIRQ 1
#define ACCT_WORDS (sizeof(struct nt_acct) / sizeof(__u64))

static __always_inline __u64 now(void)
{
#ifdef NETTOP_TESTING
	if (test_clock)
		return fake_now_ns;
#endif
	return bpf_ktime_get_ns();
}

static __always_inline struct pcpu *get_pcpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&pcpus, &zero);
}

/* Only the lost-record paths need it: global, so those paths cost the
 * verifier a call, not every word of an account. */
__noinline __u64 acct_total_ns(const struct nt_acct *a)
{
	__u64 sum = 0;

	if (!a)
		return 0;
	for (int k = 0; k < NT_NR_INTR; k++)
		sum += a->intr[k].ns;
	for (int c = 0; c < NT_NR_CTX; c++)
		for (int v = 0; v < NT_NR_SOFTIRQS; v++)
			sum += a->softirq_ns[c][v];
	return sum;
}

/* Adds the first `words` words of an account to another. Another CPU may
 * flush the same task at the same time (it migrated), hence atomic adds;
 * most words are zero, so they are skipped. A global function, checked
 * once per program: each inlined copy was ~60 branches the verifier
 * walked again in every path of every program that can flush. */
__noinline int nt_acct_add(struct nt_acct *dst, const struct nt_acct *src, __u32 words)
{
	__u64 *d = (__u64 *)dst;
	const __u64 *s = (const __u64 *)src;

	if (!dst || !src)
		return 0;
	for (__u32 i = 0; i < ACCT_WORDS && i < words; i++) {
		__u64 v = s[i];
		if (v)
			__sync_fetch_and_add(&d[i], v);
	}
	return 0;
}

/*
 * The words of an account a slot writes (count_intr, on_softirq_exit) come
 * first: a flush adds and clears those, not the socket traffic words
 * after them that only the task records get.
 */
#define ACCT_SLOT_END (__builtin_offsetof(struct nt_acct, io) / 8)
_Static_assert(__builtin_offsetof(struct nt_acct, intr) == 0 &&
		       __builtin_offsetof(struct nt_acct, in_softirq) < ACCT_SLOT_END * 8 &&
		       __builtin_offsetof(struct nt_acct, softirq_ns) < ACCT_SLOT_END * 8 &&
		       __builtin_offsetof(struct nt_acct, softirq_count) < ACCT_SLOT_END * 8,
	       "the words a slot writes must come before io");

/*
 * Adds an exited thread's accounting, its first `words` words (a slot's
 * batch has nothing after ACCT_SLOT_END), to its process's `exited` record
 * (created on the first exit; restarted when the TGID now belongs to a
 * newer process).
 */
static __always_inline void exited_add(__u32 tgid, __u64 leader_start, const struct nt_acct *a,
				       int words, struct nt_task *scratch)
{
	struct nt_task *e = bpf_map_lookup_elem(&exited, &tgid);

	if (e && e->start_boottime == leader_start) {
		nt_acct_add(&e->acct, a, words);
		return;
	}
	if (e && e->start_boottime > leader_start)
		return;
	/* `scratch` is a record about to be dropped: reuse it as the value. */
	scratch->start_boottime = leader_start;
	scratch->tgid = tgid;
	if (bpf_map_update_elem(&exited, &tgid, scratch, BPF_ANY)) {
		__sync_fetch_and_add(&exited_lost, 1);
		__sync_fetch_and_add(&exited_lost_ns, acct_total_ns(a));
	}
}

/* A batch of a task that already exited: true when a tomb names it. The
 * time goes to its process (only threads whose process lives on get a
 * tomb). `v` is the slot's record; it is lent as the new value and given
 * back unchanged. */
static __always_inline bool tomb_claims(__u32 tid, struct nt_task *v)
{
	struct nt_tomb *tb = bpf_map_lookup_elem(&tombs, &tid);
	__u64 start = v->start_boottime;
	__u32 tgid = v->tgid;

	if (!tb || tb->start_boottime != start)
		return false;
	exited_add(tb->tgid, tb->leader_start_boottime, &v->acct, ACCT_SLOT_END, v);
	v->start_boottime = start;
	v->tgid = tgid;
	return true;
}

/* Moves a slot's batch into the task hash. Caller holds s->busy. The
 * batch is added at one place only: each copy of the add is ~60 words the
 * verifier walks again in every program that can flush. */
static __always_inline void flush_slot_body(struct slot *s, struct nt_cpu *cs)
{
	struct nt_task *t;
	__u32 tid = s->tid;
	__u64 start = s->val.start_boottime;
	long err;

	if (!s->dirty)
		return;
	t = bpf_map_lookup_elem(&tasks, &tid);
	if (t && t->start_boottime == start) {
		/* The task's record: the batch is added below. */
	} else if (t && t->start_boottime > start) {
		/* The TID already belongs to a newer task: this batch is from a
		 * task that exited; its time is no longer anybody's. */
		t = NULL;
	} else if (tomb_claims(tid, &s->val)) {
		/* The task exited after this batch was taken on this CPU: its
		 * process keeps the time, as the kernel keeps exited threads'. */
		t = NULL;
	} else {
		/* First batch of this task, or the TID was reused by a newer
		 * task: (re)start the record from this batch. */
		err = bpf_map_update_elem(&tasks, &tid, &s->val, t ? BPF_EXIST : BPF_NOEXIST);
		t = NULL;
		if (err == -EEXIST) {
			/* Another CPU inserted it first: add to that. */
			t = bpf_map_lookup_elem(&tasks, &tid);
			if (t && t->start_boottime != start)
				t = NULL;
		} else if (err) {
			__sync_fetch_and_add(&cs->map_full, 1);
			__sync_fetch_and_add(&cs->map_full_ns, acct_total_ns(&s->val.acct));
		}
	}
	if (t)
		nt_acct_add(&t->acct, &s->val.acct, ACCT_SLOT_END);
	__builtin_memset(&s->val.acct, 0, ACCT_SLOT_END * sizeof(__u64));
	s->dirty = 0;
}

/*
 * The flush as a global function: the verifier checks it once per program
 * rather than once per path into it. Inlined, it made each exit program
 * ~12,000 verified instructions and start-up cost a fifth of a second.
 * It takes the slot index (a scalar, as global functions need) and finds
 * this CPU's value itself.
 */
__noinline int nt_flush_slot(__u32 idx)
{
	struct pcpu *pc = get_pcpu();

	if (!pc)
		return 0;
	flush_slot_body(&pc->slot[idx & 1], &pc->stats);
	return 0;
}

/*
 * Returns slot `idx` claimed (busy) for the current task (`id` is its
 * pid_tgid, which the caller has at hand), flushing the previous task's
 * batch first; NULL when the slot is being flushed.
 */
static __always_inline struct slot *claim_slot(struct pcpu *pc, __u32 idx, __u64 id)
{
	struct slot *s = &pc->slot[idx & 1];
	__u32 tid;

	if (s->busy)
		return NULL;
	s->busy = 1;
	asm volatile("" ::: "memory");
	tid = (__u32)id;
	if (!s->valid || s->tid != tid) {
		nt_flush_slot(idx);
		s->tid = tid;
		s->val.tgid = id >> 32;
		/* pid 0 is the per-CPU idle task: no start time. */
		s->val.start_boottime = 0;
		if (tid) {
			struct task_struct *task = (struct task_struct *)bpf_get_current_task();
			s->val.start_boottime = BPF_CORE_READ(task, start_boottime);
		}
		s->valid = 1;
	}
	s->dirty = 1;
	return s;
}

static __always_inline void release_slot(struct slot *s)
{
	asm volatile("" ::: "memory");
	s->busy = 0;
}

static __always_inline void unattributed(struct nt_cpu *cs, __u64 ns)
{
	/* Rare path, reached from hardirq and softirq programs alike. */
	__sync_fetch_and_add(&cs->unattributed, 1);
	__sync_fetch_and_add(&cs->unattributed_ns, ns);
}

/*
 * Hardirq context as seen by our own entry/exit tracking. The preempt count
 * would also catch untraced vectors, but its per-CPU symbol is not
 * resolvable on every kernel (some do not expose it to BPF), and every x86
 * vector that raises softirqs in practice has a tracepoint we attach.
 */
static __always_inline bool in_hardirq_ctx(struct cpu_state *st)
{
	return st->hi_depth != 0;
}

/* Interruption class of an outermost hardirq kind (NT_INTR_*). */
static __always_inline __u32 intr_class(__u32 kind)
{
	switch (kind) {
	case NT_KIND_DEVICE:
		return NT_INTR_DEVICE;
	case VEC_LOCAL_TIMER:
		return NT_INTR_TIMER;
	case NT_KIND_TLB:
		return NT_INTR_TLB;
	case VEC_RESCHEDULE:
		return NT_INTR_RESCHED;
	case VEC_CALL_FUNCTION:
	case VEC_CALL_FUNCTION_SINGLE:
	case VEC_IRQ_WORK:
		return NT_INTR_IPI;
	default:
		return NT_INTR_OTHER;
	}
}

/* Counts one interruption of class `cls` and its handler time `d` into an
 * account, and whether it landed in a stolen softirq run. */
static __always_inline void count_intr(struct nt_acct *a, __u32 cls, bool in_si, __u64 d)
{
	if (cls >= NT_NR_INTR)
		return;
	a->intr[cls].count++;
	a->intr[cls].ns += d;
	if (in_si)
		a->in_softirq[cls]++;
}

/*
 * Feeds the calibration probe when this CPU is the one being calibrated.
 * Off, it costs one load and compare. Hardirq and softirq programs both
 * write it, so the adds are atomic.
 */
static __always_inline void probe_add(__u64 ns, __u32 cls, bool softirq)
{
	__u32 on = probe_cpu1;

	if (!on || on != bpf_get_smp_processor_id() + 1)
		return;
	__sync_fetch_and_add(&probe.traced_ns, ns);
	if (softirq)
		__sync_fetch_and_add(&probe.softirq_runs, 1);
	else if (cls < NT_NR_INTR)
		__sync_fetch_and_add(&probe.intr[cls], 1);
}

/*
 * Counts one run of handler `h` (NT_RUN_*) on this CPU, first thing after
 * the per-CPU lookup so every path out of the handler is counted, as
 * bpf_stats counts every run. A plain add: a program never nests in
 * itself on one CPU (the kernel skips such a run as a recursion miss,
 * which bpf_stats does not count as a run either), and each handler has a
 * word of its own. One add to a line the handler touches anyway: a
 * nanosecond against the ~0.7 µs floor of a traced event.
 */
static __always_inline void count_run(struct pcpu *pc, __u32 h)
{
	if (h < NT_NR_RUNS)
		pc->stats.runs[h]++;
}

__noinline int nt_rx_charge(__u64 d);

/* ---------------------------------------------------------------- hardirq */

/*
 * Timing rule: only the outermost hardirq is timed. A nested hardirq (rare
 * on x86, where handlers run with interrupts off) is inside the outer span
 * already; counting it again would double count.
 */
static __always_inline int on_hardirq_entry(__u32 kind, __u32 run)
{
	struct pcpu *pc = get_pcpu();
	struct cpu_state *st;
	__u64 t;

	if (!pc)
		return 0;
	count_run(pc, run);
	st = &pc->st;
	t = now();
	/* No hardirq lasts 10 ms: a depth that old lost its exit (e.g. an
	 * exit program detached or attached late). Start over rather than
	 * stop accounting on this CPU forever. */
	if (st->hi_depth && t - st->hi_start > 10000000ULL) {
		st->hi_depth = 0;
		__sync_fetch_and_add(&pc->stats.unmatched_exits, 1);
	}
	if (st->hi_depth == 0) {
		st->hi_start = t;
		st->hi_kind = kind;
		st->hi_rps = 0;
	}
	/* Bound the depth so a lost exit cannot wedge accounting forever. */
	if (st->hi_depth < 8)
		st->hi_depth++;
	return 0;
}

static __always_inline int on_hardirq_exit(__u32 run)
{
	struct pcpu *pc = get_pcpu();
	struct cpu_state *st;
	struct nt_cpu *cs;
	struct slot *s;
	__u64 d;
	__u32 cls;
	bool in_si;

	if (!pc)
		return 0;
	count_run(pc, run);
	st = &pc->st;
	cs = &pc->stats;
	if (st->hi_depth == 0) {
		/* Attached between entry and exit: the span is unknown. */
		__sync_fetch_and_add(&cs->unmatched_exits, 1);
		return 0;
	}
	if (--st->hi_depth)
		return 0;
	d = now() - st->hi_start;
	cls = intr_class(st->hi_kind);
	/* The running softirq (if any) subtracts this from its own span, but
	 * only the traced part: the entry/exit around it stays in the span. In
	 * a stolen run that makes it STOLEN time, which HIDDEN~ must not
	 * charge again (in_softirq); in the task's own or ksoftirqd's run it
	 * is that task's time, and HIDDEN~ moves it out as for any other. */
	st->hi_total_ns += d;
	in_si = st->si_active && st->si_ctx == NT_CTX_STOLEN;
	/* The probe's gaps hold the softirq's whole span as traced time, so
	 * such an interruption adds no untraced cost there either. */
	probe_add(d, in_si ? NT_NR_INTR : cls, false);

	count_intr(&cs->acct, cls, in_si, d);
	if (st->hi_rps) {
		cs->rps_ipi_ns += d;
		cs->rps_ipis++;
	}

	s = claim_slot(pc, SLOT_HARDIRQ, bpf_get_current_pid_tgid());
	if (!s) {
		unattributed(cs, d);
		return 0;
	}
	count_intr(&s->val.acct, cls, in_si, d);
	release_slot(s);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(btf_irq_in, int irq)
{
	return on_hardirq_entry(NT_KIND_DEVICE, NT_RUN_IRQ_IN);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(btf_irq_out, int irq)
{
	return on_hardirq_exit(NT_RUN_IRQ_OUT);
}

SEC("raw_tp/irq_handler_entry")
int BPF_PROG(raw_irq_in, int irq)
{
	return on_hardirq_entry(NT_KIND_DEVICE, NT_RUN_IRQ_IN);
}

SEC("raw_tp/irq_handler_exit")
int BPF_PROG(raw_irq_out, int irq)
{
	return on_hardirq_exit(NT_RUN_IRQ_OUT);
}

/*
 * x86 system vectors: one raw_tp program pair, attached by user space to
 * every irq_vectors:*_entry/_exit tracepoint this kernel has. One program
 * for twelve tracepoints is verified once, not twelve times (start-up
 * cost). The kind is the tracepoint's argument, the vector number (see
 * NT_KIND_DEVICE); a vector intr_class does not know is still timed and
 * charged as a system vector, of class "other".
 */
SEC("raw_tp")
int sysvec_in(struct bpf_raw_tracepoint_args *ctx)
{
	return on_hardirq_entry((__u32)ctx->args[0] & 0xff, NT_RUN_SYSVEC_IN);
}

SEC("raw_tp")
int sysvec_out(struct bpf_raw_tracepoint_args *ctx)
{
	return on_hardirq_exit(NT_RUN_SYSVEC_OUT);
}

/*
 * TLB shootdowns: a call-function IPI is classified by what its handler
 * did. flush_tlb_func() traces tlb_flush with TLB_REMOTE_SHOOTDOWN when it
 * runs for another CPU, i.e. inside that IPI; the outermost hardirq then
 * becomes a TLB shootdown, whose cost (flush, then TLB refills: in a VM
 * two-dimensional page walks) is calibrated apart from a plain IPI's.
 * tlb_flush also fires at context switches and local flushes: those
 * return after the per-CPU lookup and the run count. Written only in hardirq context (hi_kind).
 */
static __always_inline int on_tlb_flush(int reason)
{
	struct pcpu *pc;
	__u32 kind;

	pc = get_pcpu();
	if (!pc)
		return 0;
	/* Counted before the reason test: every run costs, the context
	 * switches' flushes most of them. */
	count_run(pc, NT_RUN_TLB_FLUSH);
	if (reason != TLB_REMOTE_SHOOTDOWN || !pc->st.hi_depth)
		return 0;
	kind = pc->st.hi_kind;
	if (kind == VEC_CALL_FUNCTION || kind == VEC_CALL_FUNCTION_SINGLE)
		pc->st.hi_kind = NT_KIND_TLB;
	return 0;
}

SEC("tp_btf/tlb_flush")
int BPF_PROG(btf_tlb_flush, int reason, unsigned long pages)
{
	return on_tlb_flush(reason);
}

SEC("raw_tp/tlb_flush")
int BPF_PROG(raw_tlb_flush, int reason, unsigned long pages)
{
	return on_tlb_flush(reason);
}

/* ---------------------------------------------------------------- softirq */

/*
 * Softirq provenance (tracepoint-only): every raise goes through
 * __raise_softirq_irqoff() and fires irq:softirq_raise. A vector raised in
 * hardirq context (device IRQ, RPS IPI, timer tick) is work that arrived by
 * interrupt: when it runs in an ordinary task, that task is a victim
 * (STOLEN) -- whether it runs in the irq tail or later when the task
 * re-enables bottom halves. A vector raised in process context by the task
 * itself (veth/loopback xmit, netif_rx from a syscall) is the task's own
 * work done inline at local_bh_enable (INLINE). A raise from inside a
 * running softirq (NET_RX re-raising itself when budget or time ran out)
 * inherits that softirq's provenance. Anything run by ksoftirqd/N is
 * KSOFTIRQD: top already shows it as ksoftirqd's time.
 */
static __always_inline int on_softirq_raise(__u32 vec)
{
	struct pcpu *pc;
	struct cpu_state *st;
	__u64 bit;

	pc = get_pcpu();
	if (!pc)
		return 0;
	count_run(pc, NT_RUN_SI_RAISE);
	if (vec >= NT_NR_SOFTIRQS)
		return 0;
	st = &pc->st;
	bit = 1ULL << vec;
	if (in_hardirq_ctx(st)) {
		st->irq_raised[vec]++;
		/* RPS raises NET_RX from the call-function IPI that hands a CPU
		 * its packets: that IPI is receive work too. */
		if (count_traffic && vec == NT_NET_RX &&
		    (st->hi_kind == VEC_CALL_FUNCTION_SINGLE || st->hi_kind == VEC_CALL_FUNCTION))
			st->hi_rps = 1;
	} else if (st->si_active) {
		if (vec == NT_NET_RX && st->si_vec == NT_NET_RX)
			pc->stats.net_rx_restarts++;
		if (st->si_ctx == NT_CTX_INLINE)
			st->task_mask |= bit;
		else
			st->stolen_mask |= bit;
	} else {
		st->task_mask |= bit;
	}
	return 0;
}

/*
 * Timing rule: softirq time = exit - entry - (hardirq time that ran inside).
 * hi_total_ns is read before the entry timestamp and after the exit
 * timestamp is taken, so a hardirq landing in the few instructions between
 * the two reads can only make softirq time smaller, never count twice.
 */
static __always_inline int on_softirq_entry(__u32 vec)
{
	struct pcpu *pc;
	struct cpu_state *st;
	__u32 cpu, tid, ctx, raised;
	__u64 bit, id;

	pc = get_pcpu();
	if (!pc)
		return 0;
	count_run(pc, NT_RUN_SI_IN);
	if (vec >= NT_NR_SOFTIRQS)
		return 0;
	st = &pc->st;
	bit = 1ULL << vec;
	cpu = bpf_get_smp_processor_id();
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	/* One read: a hardirq raising again right after still counts next run. */
	raised = st->irq_raised[vec];
	if (tid && cpu < NT_MAX_CPUS && tid == ksoftirqd_tid[cpu & (NT_MAX_CPUS - 1)]) {
		ctx = NT_CTX_KSOFTIRQD;
	} else if (raised != st->irq_seen[vec] || (st->stolen_mask & bit)) {
		ctx = NT_CTX_STOLEN;
	} else if (st->task_mask & bit) {
		ctx = NT_CTX_INLINE;
	} else {
		/* Raised before we attached: assume the common case. */
		ctx = NT_CTX_STOLEN;
		pc->stats.unknown_raise++;
	}
	/* handle_softirqs() cleared the pending bit before calling us: this
	 * run consumes the raise. */
	st->irq_seen[vec] = raised;
	st->stolen_mask &= ~bit;
	st->task_mask &= ~bit;

	if (vec == NT_NET_RX && count_traffic) {
		/* A fresh tally of what this run delivers (see rx_run). */
		__builtin_memset(pc->rx.units, 0, sizeof(pc->rx.units));
		pc->rx.n = 0;
		pc->rx.overflow = 0;
	}
	st->si_vec = vec;
	st->si_ctx = ctx;
	/* A softirq runs and ends in the task it interrupted: the exit reuses
	 * this instead of asking again. */
	st->si_id = id;
	st->si_active = 1;
	st->si_hi_base = st->hi_total_ns;
	asm volatile("" ::: "memory");
	st->si_start = now();
	return 0;
}

static __always_inline int on_softirq_exit(__u32 vec)
{
	struct pcpu *pc = get_pcpu();
	struct cpu_state *st;
	struct nt_cpu *cs;
	struct slot *s;
	__u64 t1, span, nested, d;
	__u32 ctx;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_SI_OUT);
	if (vec >= NT_NR_SOFTIRQS)
		return 0;
	st = &pc->st;
	cs = &pc->stats;
	if (!st->si_active || st->si_vec != vec) {
		__sync_fetch_and_add(&cs->unmatched_exits, 1);
		st->si_active = 0;
		return 0;
	}
	t1 = now();
	asm volatile("" ::: "memory");
	nested = st->hi_total_ns - st->si_hi_base;
	span = t1 - st->si_start;
	d = span > nested ? span - nested : 0;
	ctx = st->si_ctx;
	st->si_active = 0;
	if (ctx >= NT_NR_CTX)
		return 0;
	probe_add(d, 0, true);

	cs->acct.softirq_ns[ctx][vec] += d;
	cs->acct.softirq_count[vec]++;
	if (ctx == NT_CTX_STOLEN)
		cs->acct.softirq_stolen_count++;
	if (vec == NT_NET_RX) {
		cs->net_rx_actions++;
		cs->net_rx_ns += d;
		if (d > cs->net_rx_max_ns)
			cs->net_rx_max_ns = d;
		if (count_traffic)
			nt_rx_charge(d);
	}

	s = claim_slot(pc, SLOT_SOFTIRQ, st->si_id);
	if (!s) {
		unattributed(cs, d);
		return 0;
	}
	s->val.acct.softirq_ns[ctx][vec] += d;
	s->val.acct.softirq_count[vec]++;
	if (ctx == NT_CTX_STOLEN)
		s->val.acct.softirq_stolen_count++;
	release_slot(s);
	return 0;
}

SEC("tp_btf/softirq_raise")
int BPF_PROG(btf_si_raise, unsigned int vec)
{
	return on_softirq_raise(vec);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(btf_si_in, unsigned int vec)
{
	return on_softirq_entry(vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(btf_si_out, unsigned int vec)
{
	return on_softirq_exit(vec);
}

SEC("raw_tp/softirq_raise")
int BPF_PROG(raw_si_raise, unsigned int vec)
{
	return on_softirq_raise(vec);
}

SEC("raw_tp/softirq_entry")
int BPF_PROG(raw_si_in, unsigned int vec)
{
	return on_softirq_entry(vec);
}

SEC("raw_tp/softirq_exit")
int BPF_PROG(raw_si_out, unsigned int vec)
{
	return on_softirq_exit(vec);
}

/* ------------------------------------------------------- receive charge */

/* Adds `v` to a word other CPUs may add to at the same time. */
static __always_inline void add_shared(__u64 *w, __u64 v)
{
	if (v)
		__sync_fetch_and_add(w, v);
}

/*
 * Shares a NET_RX run's time `d` out over what the run did, one equal
 * share per unit: a packet delivered to a socket, dropped, forwarded or
 * handled by XDP. Per packet, not per byte: the softirq's cost is
 * per-packet work (headers, lookups, queueing); the payload is copied
 * later, in the reader's own recvmsg (BENCHMARKS has the measurement).
 * A reader's share goes to its task record, its socket's cgroup and, when
 * the run was stolen from another task, to the victim x beneficiary pair.
 * A global function, verified once (see nt_flush_slot).
 */
/*
 * A task's record, created (zeroed) when it has none yet: its traffic is
 * counted even when nothing ever interrupted it. NULL when the TID is a
 * newer task's, the map is full or the scratch value is taken by a
 * preempted program.
 */
static __always_inline struct nt_task *own_task(struct pcpu *pc, __u32 tid, __u32 tgid,
						__u64 start)
{
	struct task_scratch *sc = &pc->scratch;
	struct nt_task *t = bpf_map_lookup_elem(&tasks, &tid);
	long err;

	if (t && t->start_boottime == start)
		return t;
	if (t && t->start_boottime > start)
		return NULL;
	if (sc->busy)
		return NULL;
	sc->busy = 1;
	asm volatile("" ::: "memory");
	__builtin_memset(&sc->val, 0, sizeof(sc->val));
	sc->val.start_boottime = start;
	sc->val.tgid = tgid;
	sc->val.seen_gen = sample_gen;
	err = bpf_map_update_elem(&tasks, &tid, &sc->val, t ? BPF_EXIST : BPF_NOEXIST);
	asm volatile("" ::: "memory");
	sc->busy = 0;
	if (err && err != -EEXIST) {
		__sync_fetch_and_add(&pc->stats.map_full, 1);
		return NULL;
	}
	t = bpf_map_lookup_elem(&tasks, &tid);
	return t && t->start_boottime == start ? t : NULL;
}

__noinline int nt_rx_charge(__u64 d)
{
	struct pcpu *pc = get_pcpu();
	struct rx_run *rx;
	struct nt_cpu *cs;
	__u64 total = 0, share, given = 0, delivered = 0;
	__u64 ipi_ns, ipis, ipis_milli, run_ns, ipi_share;
	__u32 victim, victim_tgid, n;
	bool stolen;

	if (!pc)
		return 0;
	rx = &pc->rx;
	cs = &pc->stats;
	/* The RPS IPIs since the last run brought this run's packets: their
	 * handler time is shared out with it (not to the robbed pairs, which
	 * are NET_RX time), their count for the untraced cost user space adds. */
	ipi_ns = cs->rps_ipi_ns;
	ipis = cs->rps_ipis;
	run_ns = d;
	d += ipi_ns - pc->rps.ns;
	ipis_milli = (ipis - pc->rps.n) * 1000;
	pc->rps.ns = ipi_ns;
	pc->rps.n = ipis;
	n = rx->n;
	if (n > NT_RUN_READERS)
		n = NT_RUN_READERS;
	for (int b = 0; b < NT_NR_RX; b++)
		total += rx->units[b];
	if (!total) {
		cs->rx_ns[NT_RX_NOSOCK] += d;
		cs->rx_units[NT_RX_NOSOCK]++;
		return 0;
	}
	stolen = pc->st.si_ctx == NT_CTX_STOLEN;
	victim = (__u32)pc->st.si_id;
	victim_tgid = pc->st.si_id >> 32;
	for (int i = 0; i < NT_RUN_READERS; i++) {
		struct rx_reader *r = &rx->r[i];
		struct nt_cg_caused *cg;
		struct nt_task *t;

		if (i >= n)
			break;
		share = d * r->pkts / total;
		/* A division costs; most runs had no IPI (loopback, NIC queues). */
		ipi_share = ipis_milli ? ipis_milli * r->pkts / total : 0;
		/* An unread socket's share is in the UNREAD bucket already. */
		if (r->tid)
			delivered += share;
		if (r->cgroup_id) {
			cg = bpf_map_lookup_elem(&cg_caused, &r->cgroup_id);
			if (!cg) {
				struct nt_cg_caused z = {};

				bpf_map_update_elem(&cg_caused, &r->cgroup_id, &z, BPF_NOEXIST);
				cg = bpf_map_lookup_elem(&cg_caused, &r->cgroup_id);
			}
			if (cg) {
				add_shared(&cg->ns, share);
				add_shared(&cg->pkts, r->pkts);
				if (ipi_share)
					add_shared(&cg->ipis_milli, ipi_share);
			}
		}
		if (!r->tid)
			continue;
		t = own_task(pc, r->tid, r->tgid, r->start_boottime);
		if (!t)
			continue;
		add_shared(&t->acct.caused_ns, share);
		add_shared(&t->acct.caused_pkts, r->pkts);
		if (ipi_share)
			add_shared(&t->acct.caused_ipis_milli, ipi_share);
		given += share;
		if (stolen && victim && victim != r->tid) {
			struct nt_rob_key k = { .victim = victim, .beneficiary = r->tid };
			struct nt_rob *p = bpf_map_lookup_elem(&robbed, &k);

			if (!p) {
				struct nt_rob z = {
					.victim_tgid = victim_tgid,
					.beneficiary_tgid = r->tgid,
					.beneficiary_cgroup = r->cgroup_id,
				};

				bpf_map_update_elem(&robbed, &k, &z, BPF_NOEXIST);
				p = bpf_map_lookup_elem(&robbed, &k);
			}
			if (p) {
				add_shared(&p->ns, run_ns * r->pkts / total);
				add_shared(&p->pkts, r->pkts);
			}
		}
	}
	/* Readers past the table: their share is delivered time of nobody's. */
	delivered += d * rx->overflow / total;
	for (int b = NT_RX_UNREAD; b < NT_NR_RX; b++) {
		cs->rx_ns[b] += d * rx->units[b] / total;
		cs->rx_units[b] += rx->units[b];
	}
	cs->rx_ns[NT_RX_DELIVERED] += delivered;
	cs->rx_units[NT_RX_DELIVERED] += rx->units[NT_RX_DELIVERED];
	cs->caused_lost_ns += delivered - given;
	return 0;
}

/* The running softirq is NET_RX, seen from a softirq-context program. */
static __always_inline struct rx_run *rx_run_now(struct pcpu *pc)
{
	struct cpu_state *st = &pc->st;

	if (!st->si_active || st->si_vec != NT_NET_RX || in_hardirq_ctx(st))
		return NULL;
	return &pc->rx;
}

/* A unit of bucket `b` in the running NET_RX softirq, if one runs. */
static __always_inline int rx_unit(__u32 b, __u32 run, __u64 units)
{
	struct pcpu *pc = get_pcpu();
	struct rx_run *rx;

	if (!pc)
		return 0;
	count_run(pc, run);
	rx = rx_run_now(pc);
	if (rx && b < NT_NR_RX)
		rx->units[b] += units;
	return 0;
}

#define NT_AF_INET 2
#define NT_AF_INET6 10
#define NT_MSG_PEEK 2

static __always_inline __u32 sock_proto(const struct sock *sk)
{
	__u16 p = sk->sk_protocol;

	if (p == IPPROTO_TCP)
		return NT_PROTO_TCP;
	if (p == IPPROTO_UDP)
		return NT_PROTO_UDP;
	return NT_PROTO_OTHER;
}

static __always_inline __u64 sock_cgroup(const struct sock *sk)
{
	/* A kernel without CONFIG_SOCK_CGROUP_DATA: no cgroup, still a load. */
	if (!bpf_core_field_exists(sk->sk_cgrp_data))
		return 0;
	return sk->sk_cgrp_data.cgroup->kn->id;
}

/*
 * A send or receive of `ret` bytes on `sk` by the current task, in its own
 * context. The words it adds to are written by this task only (a slot's
 * batch never carries them, and the copies into the record only read
 * them), so plain adds are safe. A receive also makes
 * the task the socket's reader: its receive processing is charged there.
 *
 * Only the tp_btf twins exist for the socket programs: the socket storage
 * is for typed programs, and the tracepoints (Linux 6.3+) are younger than
 * tp_btf. Their pointers are typed, so fields are plain loads.
 */
static __always_inline int on_sock_len(struct sock *sk, int ret, int flags, bool rx)
{
	struct pcpu *pc = get_pcpu();
	struct nt_sock_owner *o;
	struct task_struct *task;
	struct nt_sock_io *io;
	__u64 start;
	__u32 tid, tgid, p;
	__u16 family;

	if (!pc)
		return 0;
	count_run(pc, rx ? NT_RUN_SOCK_RX : NT_RUN_SOCK_TX);
	if (ret <= 0 || !sk || (rx && (flags & NT_MSG_PEEK)))
		return 0;
	family = sk->__sk_common.skc_family;
	if (family != NT_AF_INET && family != NT_AF_INET6)
		return 0;
	task = bpf_get_current_task_btf();
	tid = task->pid;
	if (!tid)
		return 0;
	tgid = task->tgid;
	start = task->start_boottime;
	p = sock_proto(sk);
	if (io_on_task) {
		io = bpf_task_storage_get(&task_io, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	} else {
		struct nt_task *t = own_task(pc, tid, tgid, start);

		io = t ? &t->acct.io : NULL;
	}
	if (io && p < NT_NR_PROTO) {
		if (rx) {
			io->rx_bytes[p] += ret;
			io->rx_calls[p]++;
		} else {
			io->tx_bytes[p] += ret;
			io->tx_calls[p]++;
		}
	}
	o = bpf_sk_storage_get(&sock_reader, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!o || (o->tid == tid && o->start_boottime == start))
		return 0;
	/* A sender becomes the reader only of a socket nobody read. */
	if (o->tid && !rx)
		return 0;
	/* Written in place: a delivery on another CPU reading meanwhile may
	 * see half of it, and its share then finds no task (counted lost). */
	o->start_boottime = start;
	o->cgroup_id = sock_cgroup(sk);
	o->tgid = tgid;
	o->tid = tid;
	return 0;
}

/*
 * A packet delivered to `sk` (sock:sk_data_ready). Inside a NET_RX run it
 * is a unit of that run, for the socket's reader; elsewhere (a TCP backlog
 * processed in the reader's own context) it is the reader's own work.
 */
static __always_inline int on_sk_data_ready(struct sock *sk)
{
	struct pcpu *pc = get_pcpu();
	struct nt_sock_owner *o;
	struct rx_run *rx;
	__u64 cg, start = 0;
	__u32 tid = 0, tgid = 0, n;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_SK_READY);
	rx = rx_run_now(pc);
	if (!rx || !sk)
		return 0;
	o = bpf_sk_storage_get(&sock_reader, sk, 0, 0);
	if (o && o->tid) {
		tid = o->tid;
		tgid = o->tgid;
		start = o->start_boottime;
		cg = o->cgroup_id;
		rx->units[NT_RX_DELIVERED]++;
	} else {
		o = NULL;
		cg = sock_cgroup(sk);
		rx->units[NT_RX_UNREAD]++;
	}
	n = rx->n;
	for (int i = 0; i < NT_RUN_READERS; i++) {
		struct rx_reader *r = &rx->r[i];

		if (i >= n)
			break;
		if (r->tid == tid && r->cgroup_id == cg) {
			r->pkts++;
			return 0;
		}
	}
	if (!o) {
		/* Unread: its share goes to the cgroup alone, and only while
		 * the table has room for it. */
		if (n >= NT_RUN_READERS)
			return 0;
	} else if (n >= NT_RUN_READERS) {
		rx->overflow++;
		return 0;
	}
	{
		struct rx_reader *r = &rx->r[n & (NT_RUN_READERS - 1)];

		r->tid = tid;
		r->tgid = tgid;
		r->start_boottime = start;
		r->cgroup_id = cg;
		r->pkts = 1;
		rx->n = n + 1;
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(btf_sock_rx, struct sock *sk, int ret, int flags)
{
	return on_sock_len(sk, ret, flags, true);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(btf_sock_tx, struct sock *sk, int ret, int flags)
{
	return on_sock_len(sk, ret, flags, false);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(btf_sk_ready, const struct sock *sk)
{
	return on_sk_data_ready((struct sock *)sk);
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(btf_skb_drop, struct sk_buff *skb)
{
	return rx_unit(NT_RX_DROPPED, NT_RUN_SKB_DROP, 1);
}

/* A packet queued for transmission inside a NET_RX run with no socket of
 * its own was forwarded (a reply the stack sends, like a TCP ACK, has
 * its socket). */
static __always_inline int on_dev_queue(struct sk_buff *skb)
{
	struct pcpu *pc = get_pcpu();
	struct rx_run *rx;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_DEV_QUEUE);
	rx = rx_run_now(pc);
	if (rx && !BPF_CORE_READ(skb, sk))
		rx->units[NT_RX_FORWARDED]++;
	return 0;
}

SEC("tp_btf/net_dev_queue")
int BPF_PROG(btf_dev_queue, struct sk_buff *skb)
{
	return on_dev_queue(skb);
}

SEC("tp_btf/xdp_redirect")
int BPF_PROG(btf_xdp_redirect, const struct net_device *dev)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_REDIRECT, 1);
}

SEC("tp_btf/xdp_exception")
int BPF_PROG(btf_xdp_exception, const struct net_device *dev)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_EXCEPTION, 1);
}

SEC("tp_btf/xdp_bulk_tx")
int BPF_PROG(btf_xdp_bulk_tx, const struct net_device *dev, int sent, int drops)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_BULK_TX, (sent > 0 ? sent : 0) + (drops > 0 ? drops : 0));
}

/* A call-function IPI queued from a NET_RX run that hands packets to
 * another CPU's backlog (RPS): the run's work for them was steering. */
static __always_inline int on_csd_queue(void *callback)
{
	struct pcpu *pc = get_pcpu();
	struct rx_run *rx;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_CSD_QUEUE);
	if (!rps_callback || (__u64)callback != rps_callback)
		return 0;
	rx = rx_run_now(pc);
	if (rx)
		rx->units[NT_RX_STEERED]++;
	return 0;
}

/* csd:csd_queue_cpu names the function the IPI will run (ipi_send_cpu
 * names only the generic handler), and fires once per handoff. The
 * function is read from the csd: tp_btf refuses a function-pointer
 * argument. */
SEC("tp_btf/csd_queue_cpu")
int BPF_PROG(btf_csd_queue, const unsigned int cpu, unsigned long callsite, void *func,
	     call_single_data_t *csd)
{
	return on_csd_queue(BPF_CORE_READ(csd, func));
}

SEC("raw_tp/csd_queue_cpu")
int BPF_PROG(raw_csd_queue, const unsigned int cpu, unsigned long callsite, void *func)
{
	return on_csd_queue(func);
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(raw_skb_drop, struct sk_buff *skb)
{
	return rx_unit(NT_RX_DROPPED, NT_RUN_SKB_DROP, 1);
}

SEC("raw_tp/net_dev_queue")
int BPF_PROG(raw_dev_queue, struct sk_buff *skb)
{
	return on_dev_queue(skb);
}

SEC("raw_tp/xdp_redirect")
int BPF_PROG(raw_xdp_redirect, const struct net_device *dev)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_REDIRECT, 1);
}

SEC("raw_tp/xdp_exception")
int BPF_PROG(raw_xdp_exception, const struct net_device *dev)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_EXCEPTION, 1);
}

SEC("raw_tp/xdp_bulk_tx")
int BPF_PROG(raw_xdp_bulk_tx, const struct net_device *dev, int sent, int drops)
{
	return rx_unit(NT_RX_XDP, NT_RUN_XDP_BULK_TX, (sent > 0 ? sent : 0) + (drops > 0 ? drops : 0));
}

/* ------------------------------------------------------------------- napi */

/* This CPU's hash record for a napi, created (with the device's name) on
 * first sight. NULL only when the table is full. */
static __always_inline struct nt_napi *napi_record(struct napi_struct *napi, __u64 key)
{
	struct nt_napi *v = bpf_map_lookup_elem(&napis, &key);
	struct nt_napi init = {};
	struct net_device *dev;

	if (v)
		return v;
	dev = BPF_CORE_READ(napi, dev);
	if (dev) {
		BPF_CORE_READ_STR_INTO(&init.dev, dev, name);
		init.ifindex = BPF_CORE_READ(dev, ifindex);
		init.netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	} else
		__builtin_memcpy(init.dev, "backlog", 8);
	init.napi_id = BPF_CORE_READ(napi, napi_id);
	/* EEXIST (another CPU inserted it) is fine; a full map shows up as
	 * the lookup below failing. */
	bpf_map_update_elem(&napis, &key, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&napis, &key);
}

/* Adds polls to a napi's hash record (this CPU's value: no other writer). */
static __always_inline void napi_add(struct nt_napi *v, __u64 polls, __u64 work,
				     __u64 exhausted, __u32 budget)
{
	v->polls += polls;
	v->work += work;
	v->budget_exhausted += exhausted;
	v->budget = budget;
}

/* Adds the cache's pending polls to its napi's record. Caller holds busy.
 * The record exists: it was made when the cache took the key. */
static __always_inline void napi_cache_flush(struct napi_cache *c, struct nt_cpu *cs)
{
	struct nt_napi *v;
	__u64 key = c->key;

	if (!key || !c->polls)
		return;
	v = bpf_map_lookup_elem(&napis, &key);
	if (v) {
		napi_add(v, c->polls, c->work, c->budget_exhausted, c->budget);
	} else {
		/* Deleted meanwhile: counted, as a full table is. */
		__sync_fetch_and_add(&cs->napi_map_full, 1);
	}
	c->polls = 0;
	c->work = 0;
	c->budget_exhausted = 0;
}

static __always_inline int on_napi_poll(struct napi_struct *napi, int work, int budget)
{
	struct pcpu *pc = get_pcpu();
	struct napi_cache *c;
	struct nt_cpu *cs;
	struct nt_napi *v;
	__u64 key = (__u64)napi;
	__u64 w = work > 0 ? work : 0;
	__u64 ex = budget > 0 && work >= budget;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_NAPI_POLL);
	cs = &pc->stats;
	cs->napi_polls++;
	cs->napi_work += w;
	cs->napi_budget_exhausted += ex;

	c = &pc->napi;
	if (c->busy) {
		/* We interrupted the sample-time flush: add directly. */
		v = napi_record(napi, key);
		if (!v) {
			__sync_fetch_and_add(&cs->napi_map_full, 1);
			return 0;
		}
		napi_add(v, 1, w, ex, budget);
		return 0;
	}
	c->busy = 1;
	asm volatile("" ::: "memory");
	if (c->key != key) {
		napi_cache_flush(c, cs);
		if (!napi_record(napi, key)) {
			__sync_fetch_and_add(&cs->napi_map_full, 1);
			c->key = 0;
			goto out;
		}
		c->key = key;
	}
	c->polls++;
	c->work += w;
	c->budget_exhausted += ex;
	c->budget = budget;
out:
	asm volatile("" ::: "memory");
	c->busy = 0;
	return 0;
}

SEC("tp_btf/napi_poll")
int BPF_PROG(btf_napi_poll, struct napi_struct *napi, int work, int budget)
{
	return on_napi_poll(napi, work, budget);
}

SEC("raw_tp/napi_poll")
int BPF_PROG(raw_napi_poll, struct napi_struct *napi, int work, int budget)
{
	return on_napi_poll(napi, work, budget);
}

/* ------------------------------------------------------------------ flush */

/*
 * Run by user space on each CPU (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU) right before reading the task hash, so batches of
 * a task that stays current (a pinned victim) reach the hash. Totals in the
 * hash only ever grow, so a read racing with a flush sees a slightly older
 * total, never a double count or a negative delta.
 */
static __always_inline void flush_one(struct pcpu *pc, __u32 idx)
{
	struct slot *s = &pc->slot[idx & 1];

	if (s->busy) {
		/* We interrupted a program using it: next sample. */
		__sync_fetch_and_add(&pc->stats.flush_deferred, 1);
		return;
	}
	s->busy = 1;
	asm volatile("" ::: "memory");
	nt_flush_slot(idx);
	release_slot(s);
}

SEC("raw_tp")
int nettop_flush(void *ctx)
{
	struct pcpu *pc = get_pcpu();

	if (!pc)
		return 0;
	flush_one(pc, SLOT_HARDIRQ);
	flush_one(pc, SLOT_SOFTIRQ);
	if (pc->napi.busy) {
		__sync_fetch_and_add(&pc->stats.flush_deferred, 1);
		return 0;
	}
	pc->napi.busy = 1;
	asm volatile("" ::: "memory");
	napi_cache_flush(&pc->napi, &pc->stats);
	asm volatile("" ::: "memory");
	pc->napi.busy = 0;
	return 0;
}

/* -------------------------------------------------------------- task exit */

/*
 * A thread's interrupt time must outlive it: the kernel keeps exited
 * threads' CPU times in signal_struct, and a process's totals here have to
 * match what top reads from /proc/PID/stat. On exit the thread's record
 * moves into its process's `exited` record and is deleted, so the task
 * hash holds only live threads and user space never deletes per thread.
 */
static __always_inline void flush_if_task(struct pcpu *pc, __u32 idx, __u32 tid)
{
	struct slot *s = &pc->slot[idx & 1];

	if (s->valid && s->tid == tid)
		flush_one(pc, idx);
}

/*
 * Copies a task's socket traffic from its storage into its record (made
 * when it has none yet), which user space and the exit path read. Only
 * typed programs reach the storage; the raw_tp flavour counts no traffic.
 */
static __always_inline struct nt_task *io_to_record(struct pcpu *pc, struct task_struct *task,
						     struct nt_task *t, __u32 tid, __u32 tgid,
						     __u64 start)
{
	struct nt_sock_io *io;

	if (!count_traffic || !io_on_task)
		return t;
	io = bpf_task_storage_get(&task_io, task, 0, 0);
	if (!io)
		return t;
	if (!t)
		t = own_task(pc, tid, tgid, start);
	if (t)
		t->acct.io = *io;
	return t;
}

extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;

/*
 * io_to_record() for a task reached by an untrusted pointer, which task
 * storage does not take: a task with storage at all is looked up by PID
 * for a trusted reference, and only if that finds this very task.
 */
static __always_inline struct nt_task *io_to_record_untrusted(struct pcpu *pc,
							      struct task_struct *v,
							      struct nt_task *t, __u32 tid,
							      __u32 tgid, __u64 start)
{
	struct task_struct *task;

	if (!count_traffic || !io_on_task || !v->bpf_storage)
		return t;
	task = bpf_task_from_pid(tid);
	if (!task)
		return t;
	if ((__u64)task == (__u64)v)
		t = io_to_record(pc, task, t, tid, tgid, start);
	bpf_task_release(task);
	return t;
}

/*
 * An untrusted view of a trusted task, for walking its pointers. For each
 * pointer loaded through a trusted one the verifier searches the whole
 * kernel BTF by name, up to four times, to learn whether the result stays
 * trusted: the sampler's 444 instructions took 9 ms to verify, a task
 * exit's 2 ms more than an interrupt exit's. Loads through the view are
 * the same single loads (fault-guarded) and are not searched. Kernels
 * without bpf_rdonly_cast (before 6.2) walk the trusted pointer.
 */
static __always_inline struct task_struct *walk_view(struct task_struct *task)
{
	if (bpf_ksym_exists(bpf_rdonly_cast))
		return bpf_core_cast(task, struct task_struct);
	return task;
}

static __always_inline int on_task_exit(struct task_struct *p, bool typed)
{
	struct pcpu *pc = get_pcpu();
	struct nt_tomb tomb = {};
	struct nt_task *t;
	__u32 tid, tgid;
	bool group_dead;

	if (!pc)
		return 0;
	count_run(pc, NT_RUN_TASK_EXIT);
	/* The typed twin's task is a trusted pointer: plain loads, where the
	 * raw twin pays a probe read per field. */
	tid = typed ? p->pid : BPF_CORE_READ(p, pid);
	tgid = typed ? p->tgid : BPF_CORE_READ(p, tgid);
	if (!tid)
		return 0;
	/* This CPU's batches of the thread reach its record first. */
	flush_if_task(pc, SLOT_HARDIRQ, tid);
	flush_if_task(pc, SLOT_SOFTIRQ, tid);

	tomb.start_boottime = typed ? p->start_boottime : BPF_CORE_READ(p, start_boottime);
	if (typed) {
		struct task_struct *v = walk_view(p);

		tomb.leader_start_boottime = v->group_leader->start_boottime;
		/* do_exit() has already dropped signal->live for this thread. */
		group_dead = v->signal->live.counter == 0;
	} else {
		tomb.leader_start_boottime = BPF_CORE_READ(p, group_leader, start_boottime);
		group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	}
	tomb.tgid = tgid;
	/* Tomb first: from here on a batch another CPU flushes finds it.
	 * Only a thread whose process lives on needs one (its late batches
	 * belong to the process): a late batch of a dead process has nobody
	 * to go to, and without a tomb it only makes a record no task sampler
	 * pass will see, which user space sweeps. The insert was about a third
	 * of a process exit's time here (BENCHMARKS "Task exit"). */
	if (!group_dead)
		bpf_map_update_elem(&tombs, &tid, &tomb, BPF_ANY);

	t = bpf_map_lookup_elem(&tasks, &tid);
	if (t && t->start_boottime != tomb.start_boottime)
		t = NULL;
	if (typed && !group_dead)
		t = io_to_record(pc, p, t, tid, tgid, tomb.start_boottime);
	if (t) {
		if (!group_dead)
			exited_add(tgid, tomb.leader_start_boottime, &t->acct, ACCT_WORDS, t);
		bpf_map_delete_elem(&tasks, &tid);
	}
	if (group_dead)
		bpf_map_delete_elem(&exited, &tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(btf_task_exit, struct task_struct *p)
{
	return on_task_exit(p, true);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(raw_task_exit, struct task_struct *p)
{
	return on_task_exit(p, false);
}

/* ----------------------------------------------------------- task sampler */

/*
 * One pass over every task (iter/task, kernel >= 5.8) emits a fixed-size
 * record per thread with everything the model needs, joined with the
 * thread's interrupt accounting, so a sample costs one read() loop instead
 * of three /proc files per thread. Fields are read with CO-RE so older
 * layouts (task->state before 5.14) load too.
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

/*
 * The mm's resident page counters, read as /proc/PID/statm reads them
 * (get_mm_counter). Since 6.2 each is a per-CPU counter whose central
 * `count` is what get_mm_counter returns (percpu_counter_read_positive);
 * before, one atomic each (struct mm_rss_stat). Both layouts are named
 * here and told apart by which one the running kernel has, so the
 * program loads on either and a kernel with neither only loses memory.
 */
struct percpu_counter___nt {
	s64 count;
} __attribute__((preserve_access_index));

struct mm_struct___pcpu {
	struct percpu_counter___nt rss_stat[4];
} __attribute__((preserve_access_index));

struct mm_rss_stat___atomic {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___atomic {
	struct mm_rss_stat___atomic rss_stat;
} __attribute__((preserve_access_index));

/* enum in include/linux/mm_types_task.h, unchanged since 4.5. */
#define NT_MM_FILEPAGES 0
#define NT_MM_ANONPAGES 1
#define NT_MM_SHMEMPAGES 3

static __always_inline __u64 positive(s64 v)
{
	return v > 0 ? (__u64)v : 0;
}

/* Fills the record's mm fields from the task's address space, if it has
 * one (kernel threads and zombies do not: the flag stays clear). */
static __always_inline void read_mm(struct task_struct *task, struct nt_task_rec *r)
{
	struct mm_struct *mm = task->mm;
	struct mm_struct___pcpu *pc = (void *)mm;
	struct mm_struct___atomic *at = (void *)mm;
	s64 file, anon, shmem;

	if (!mm)
		return;
	if (bpf_core_field_exists(pc->rss_stat[0].count)) {
		file = pc->rss_stat[NT_MM_FILEPAGES].count;
		anon = pc->rss_stat[NT_MM_ANONPAGES].count;
		shmem = pc->rss_stat[NT_MM_SHMEMPAGES].count;
	} else if (bpf_core_field_exists(at->rss_stat.count)) {
		file = BPF_CORE_READ(at, rss_stat.count[NT_MM_FILEPAGES].counter);
		anon = BPF_CORE_READ(at, rss_stat.count[NT_MM_ANONPAGES].counter);
		shmem = BPF_CORE_READ(at, rss_stat.count[NT_MM_SHMEMPAGES].counter);
	} else {
		return;
	}
	r->vm_pages = mm->total_vm;
	r->rss_anon = positive(anon);
	r->rss_shared = positive(file) + positive(shmem);
	r->rec_flags |= NT_REC_MM;
}

/*
 * Fills one task's record and finds the accounting that follows it: its
 * own (*tp) and, on a group leader's, its exited threads' (*ep). Both
 * walks below emit what this fills.
 */
static __always_inline void sample_one(struct task_struct *task, bool trusted,
				       struct nt_task_rec *r, struct nt_task **tp,
				       struct nt_task **ep)
{
	struct task_struct *v;
	struct nt_task *t, *e = NULL;
	struct signal_struct *sig;
	struct pcpu *pc;
	__u32 key;

	__builtin_memset(r, 0, sizeof(*r));
	pass_tasks++;
	/*
	 * Plain loads (CO-RE relocated through vmlinux.h's
	 * preserve_access_index) cost a few ns, fault-guarded when the task is
	 * untrusted; a bpf_probe_read_kernel() per field costs ten times that,
	 * and this runs once per thread on the host.
	 */
	r->tid = task->pid;
	r->tgid = task->tgid;
	r->start_boottime = task->start_boottime;
	r->utime = task->utime;
	r->stime = task->stime;
	r->sum_exec_runtime = task->se.sum_exec_runtime;
	r->run_delay = task->sched_info.run_delay;
	/* In process mode a thread only adds its times (and interrupt
	 * accounting, below) to its process: identity and process-wide fields
	 * come from the group leader's record, and the pointer chasing they
	 * cost is skipped for every other thread. */
	if (!thread_rows && r->tid != r->tgid)
		goto join;
	r->rec_flags |= NT_REC_FULL;
	v = walk_view(task);
	sig = v->signal;
	r->ppid = v->real_parent->tgid;
	r->euid = v->cred->euid.val;
	if (sig) {
		r->sig_utime = sig->utime;
		r->sig_stime = sig->stime;
		r->sig_runtime = sig->sum_sched_runtime;
		r->nr_threads = sig->nr_threads;
	}
	r->cgroup_id = v->cgroups->dfl_cgrp->kn->id;
	if (bpf_core_field_exists(task->__state))
		r->state = task->__state;
	else
		r->state = BPF_CORE_READ((struct task_struct___pre514 *)task, state);
	r->exit_state = task->exit_state;
	r->flags = task->flags;
	if (bpf_core_field_exists(task->thread_info.cpu))
		r->cpu = task->thread_info.cpu;
	else
		r->cpu = BPF_CORE_READ((struct task_struct___cpu *)task, cpu);
	r->nr_cpus_allowed = task->nr_cpus_allowed;
	/* The first 256 CPUs; user space asks the kernel for the rest when a
	 * larger host has a task pinned (nr_cpus_allowed says so). */
	bpf_core_read(&r->cpus_mask, sizeof(r->cpus_mask), &task->cpus_mask);
	__builtin_memcpy(r->comm, task->comm, sizeof(r->comm));
	r->prio = task->prio;
	r->static_prio = task->static_prio;
	/* Threads share their leader's address space: user space gives its
	 * figures to the group's other rows. */
	if (r->tid == r->tgid)
		read_mm(v, r);

join:
	key = r->tid;
	t = bpf_map_lookup_elem(&tasks, &key);
	if (t && t->start_boottime != r->start_boottime)
		t = NULL;
	pc = get_pcpu();
	if (pc && trusted)
		t = io_to_record(pc, task, t, r->tid, r->tgid, r->start_boottime);
	else if (pc)
		t = io_to_record_untrusted(pc, task, t, r->tid, r->tgid, r->start_boottime);
	if (t) {
		r->rec_flags |= NT_REC_ACCT;
		t->seen_gen = sample_gen;
	}
	if (r->tid == r->tgid) {
		key = r->tgid;
		e = bpf_map_lookup_elem(&exited, &key);
		if (e && e->start_boottime == r->start_boottime)
			r->rec_flags |= NT_REC_EXITED;
		else
			e = NULL;
	}
	*tp = t;
	*ep = e;
}

static __always_inline __u32 rec_len(const struct nt_task_rec *r)
{
	return r->rec_flags & NT_REC_FULL ? sizeof(*r) : NT_REC_HEAD_LEN;
}

/* The kernel's walk: one run per thread, each record into the seq_file. */
SEC("iter/task")
int sample_tasks(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct nt_task_rec r;
	struct nt_task *t, *e;

	if (!task)
		return 0;
	sample_one(task, true, &r, &t, &e);
	bpf_seq_write(seq, &r, rec_len(&r));
	if (t)
		bpf_seq_write(seq, &t->acct, sizeof(t->acct));
	if (e)
		bpf_seq_write(seq, &e->acct, sizeof(e->acct));
	return 0;
}

/*
 * The open-coded walk: one run of an iter/task link pinned to nettop's
 * leader thread follows the task list itself, under the RCU read lock the
 * iterator holds, as the kernel's for_each_process_thread() does. The
 * kernel's walk finds each next thread by PID and takes a reference on it,
 * about three quarters of its cost per thread (BENCHMARKS, "The open-coded
 * task walk").
 *
 * A run cannot be preempted on a kernel that preempts only voluntarily
 * (most distributions' default), so it stops once it has run
 * walk_budget_ns, or earlier when the kernel flags nettop's thread for
 * attention (a reschedule is due: a task woke that should run here; a
 * signal), as the kernel's walk yields when a reschedule is due. It notes
 * the last thread it sampled. User space runs the iterator again, after a
 * return to user space (a preemption point), and that run resumes after
 * the noted thread, found again by PID. When that thread has exited
 * meanwhile, its place in the list is gone and the pass is retaken by the
 * kernel's walk.
 *
 * The records go to a ring buffer, drained after every run: a seq_file
 * takes at most its 32 KiB buffer per run. The ring sits in a one-slot map
 * so user space can swap in a bigger one when a run outgrows it.
 */
struct walk_ring_t {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct walk_ring_t);
} walk_ring SEC(".maps");

/* Set by user space: the longest one run may go on, ns. */
__u64 walk_budget_ns = 0;
/* Where the next run starts: after this thread (TID and start time), or at
 * the list's head when the TID is 0. A run that stops at the budget sets
 * them; user space zeroes the TID before a pass and puts back a run's
 * values to take that run again. */
__u32 walk_resume_tid = 0;
__u64 walk_resume_start = 0;
/* How the last run ended (NT_WALK_* in nettop.h) and the ring bytes it
 * needed (all of them, also past an overflow). */
__u32 walk_status = NT_WALK_NOT_RUN;
__u64 walk_need = 0;
/* The task list's head, &init_task.tasks: found once, from the parent
 * chain (init_task is not in kallsyms without CONFIG_KALLSYMS_ALL). */
__u64 walk_head = 0;

/* The iterator numbers its steps; the kernel allows 8M, above any PID. */
#define WALK_MAX_STEPS (1 << 23)
/* Threads between two looks at the clock and the thread's flags. */
#define WALK_CLOCK_EVERY 32

/* The running thread's flags (TIF_*: a reschedule is due, a signal is
 * pending...). The bits differ by architecture and version, so a run
 * compares them with what they were when it started; 0 where the thread
 * info is not in the task. */
static __always_inline __u64 thread_flags(void)
{
	struct task_struct *me = bpf_get_current_task_btf();

	if (bpf_core_field_exists(me->thread_info.flags))
		return me->thread_info.flags;
	return 0;
}

/* A ring buffer record: the data rounded up to 8 bytes, plus its header. */
static __always_inline __u64 ring_bytes(__u32 len)
{
	return ((len + 7) & ~7ULL) + 8;
}

/*
 * One task of the open-coded walk, at kernel address addr. A global
 * function: the verifier checks it once, on its own, where a loop body is
 * checked once per state the loop reaches (inlined, an earlier walk took
 * 96 ms to verify; as a static function, 14 ms).
 */
__noinline int walk_one(__u64 addr)
{
	struct task_struct *task = bpf_core_cast((void *)addr, struct task_struct);
	struct nt_task_rec r;
	struct nt_task *t, *e;
	__u32 zero = 0;
	long failed;
	void *ring;

	sample_one(task, false, &r, &t, &e);
	walk_need += ring_bytes(rec_len(&r));
	if (t)
		walk_need += ring_bytes(sizeof(t->acct));
	if (e)
		walk_need += ring_bytes(sizeof(e->acct));
	/* Past an overflow the walk only counts, so user space sizes the
	 * next ring once. */
	if (walk_status != NT_WALK_DONE)
		return 0;
	ring = bpf_map_lookup_elem(&walk_ring, &zero);
	if (!ring) {
		walk_status = NT_WALK_NO_RING;
		return 0;
	}
	failed = bpf_ringbuf_output(ring, &r, rec_len(&r), BPF_RB_NO_WAKEUP);
	if (t)
		failed |= bpf_ringbuf_output(ring, &t->acct, sizeof(t->acct), BPF_RB_NO_WAKEUP);
	if (e)
		failed |= bpf_ringbuf_output(ring, &e->acct, sizeof(e->acct), BPF_RB_NO_WAKEUP);
	if (failed)
		walk_status = NT_WALK_OVERFLOW;
	return 0;
}

/*
 * The list is walked by address, held as numbers: a pointer loaded from a
 * task's list links is untrusted, and a global function takes no
 * untrusted pointer. Each link is one fault-guarded probe read.
 */
static __always_inline __u64 read_addr(const void *at)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), at);
	return v;
}

/* The address of the head of the thread list of process p. */
static __always_inline __u64 threads_head(__u64 p)
{
	__u64 sig = read_addr(&((struct task_struct *)p)->signal);

	return sig ? sig + bpf_core_field_offset(struct signal_struct, thread_head) : 0;
}

/* The thread whose thread_node is at next, in a process whose list head
 * is head; 0 at the head (past the last thread). */
static __always_inline __u64 thread_at(__u64 next, __u64 head)
{
	if (!next || next == head)
		return 0;
	return next - bpf_core_field_offset(struct task_struct, thread_node);
}

/* The thread after t in its process (whose list head is head), 0 past the
 * last. */
static __always_inline __u64 thread_after(__u64 t, __u64 head)
{
	return thread_at(read_addr(&((struct task_struct *)t)->thread_node.next), head);
}

/* The process after p on the task list, 0 past the last. */
static __always_inline __u64 process_after(__u64 p)
{
	__u64 next = read_addr(&((struct task_struct *)p)->tasks.next);

	if (!next || next == walk_head)
		return 0;
	return next - bpf_core_field_offset(struct task_struct, tasks);
}

/* Finds walk_head: every task's parent chain ends at init_task, the
 * parent of init and kthreadd. */
static __always_inline bool find_head(void)
{
	__u64 p = read_addr(&bpf_get_current_task_btf()->group_leader);
	int i;

	bpf_for(i, 0, 4096) {
		if (!p)
			return false;
		if (BPF_CORE_READ((struct task_struct *)p, pid) == 0) {
			walk_head = p + bpf_core_field_offset(struct task_struct, tasks);
			return true;
		}
		p = read_addr(&((struct task_struct *)p)->real_parent);
	}
	return false;
}

/* Where a run resumes: the process (*proc) and thread (*pos) after the
 * thread the previous run noted; false when that thread has exited. */
static __always_inline bool resume(__u64 *proc, __u64 *pos)
{
	struct task_struct *t = bpf_task_from_pid(walk_resume_tid);
	__u64 leader, next;
	bool same;

	if (!t)
		return false;
	same = BPF_CORE_READ(t, start_boottime) == walk_resume_start;
	leader = read_addr(&t->group_leader);
	next = read_addr(&t->thread_node.next);
	bpf_task_release(t);
	if (!same || !leader)
		return false;
	*proc = leader;
	*pos = thread_at(next, threads_head(leader));
	return true;
}

SEC("iter/task")
int walk_tasks(struct bpf_iter__task *ctx)
{
	__u64 start, flags, proc, pos, head, last = 0;
	struct task_struct *lv;
	int i;

	if (!ctx->task)
		return 0;
	if (!bpf_ksym_exists(bpf_task_from_pid) || !bpf_ksym_exists(bpf_rdonly_cast)) {
		walk_status = NT_WALK_UNSUPPORTED;
		return 0;
	}
	start = bpf_ktime_get_ns();
	flags = thread_flags();
	walk_need = 0;
	walk_status = NT_WALK_DONE;
	if (!walk_head && !find_head()) {
		walk_status = NT_WALK_UNSUPPORTED;
		return 0;
	}
	if (!walk_resume_tid) {
		/* The idle task heads the list; /proc and iter/task skip it. */
		proc = process_after(walk_head - bpf_core_field_offset(struct task_struct, tasks));
		pos = proc;
	} else if (!resume(&proc, &pos)) {
		walk_status = NT_WALK_LOST;
		return 0;
	}
	head = proc ? threads_head(proc) : 0;
	bpf_for(i, 0, WALK_MAX_STEPS) {
		if (!pos) {
			if (!proc)
				break;
			proc = process_after(proc);
			pos = proc;
			head = proc ? threads_head(proc) : 0;
			continue;
		}
		walk_one(pos);
		last = pos;
		pos = thread_after(pos, head);
		if (i % WALK_CLOCK_EVERY == WALK_CLOCK_EVERY - 1 &&
		    (bpf_ktime_get_ns() - start > walk_budget_ns || thread_flags() & ~flags))
			break;
	}
	if ((pos || proc) && last) {
		lv = bpf_core_cast((void *)last, struct task_struct);
		walk_resume_tid = lv->pid;
		walk_resume_start = lv->start_boottime;
		if (walk_status == NT_WALK_DONE)
			walk_status = NT_WALK_MORE;
	}
	return 0;
}
