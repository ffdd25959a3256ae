// SPDX-License-Identifier: GPL-2.0
/*
 * Two walks over every thread, for bench/programs/walk.rs: the kernel's
 * iter/task walk (one program run per thread, a PID lookup and a task
 * reference each), and the open-coded task iterator (Linux 6.7+) run once
 * from an iter/task program pinned to one task. Both read the fields a
 * process-mode sampler record's head holds and fold them into one sum, so
 * the two differ only in how they reach each thread.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;

__u64 threads;
__u64 sum;

static __always_inline void fold(struct task_struct *t)
{
	threads++;
	sum += t->pid + t->tgid + t->start_boottime + t->utime + t->stime +
	       t->se.sum_exec_runtime + t->sched_info.run_delay;
}

SEC("iter/task")
int walk_kernel(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;

	if (t)
		fold(t);
	return 0;
}

SEC("iter/task")
int walk_open_coded(struct bpf_iter__task *ctx)
{
	struct task_struct *pos;

	if (!ctx->task)
		return 0;
	bpf_for_each(task, pos, NULL, BPF_TASK_ITER_ALL_THREADS)
		fold(pos);
	return 0;
}
