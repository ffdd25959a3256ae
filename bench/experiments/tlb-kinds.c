/*
 * What a TLB shootdown costs a spinning thread, by how it was made
 * (BENCHMARKS.md, "TLB shootdowns by kind"). The main thread sends from
 * CPU 0, one round every PERIOD ns; a thread on CPU 1 spins on the clock
 * and sums its gaps over 1.5 us. No BPF, no nettop.
 *
 *   mode 0  mmap a page, the spinner touches it, munmap it
 *   mode 1  mprotect one page read-only and back (the calibration's way)
 *   mode 4  mmap a page, munmap it, the spinner never touching it
 *   mode 3  nothing (the host's own gaps)
 *
 *   gcc -O2 -pthread bench/experiments/tlb-kinds.c -o /tmp/tlb-kinds
 *   for m in 1 0 4; do /tmp/tlb-kinds $m 1 50000; done   # MODE SECONDS PERIOD_NS
 *
 * With bench/experiments/tlb-kinds.bt running meanwhile, the flushes'
 * flush_tlb_info shows what each mode made the kernel do.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

/* The page handed to the spinner and its round: a new mapping can reuse
 * the last one's address, so the round says it is new. */
static _Atomic(char *) cur;
static atomic_long cur_round;
static atomic_long ack_round;
static atomic_int stop;
static int mode;
static long rounds, gaps;
static double gap_ns, wall_ns;

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static long long now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *spinner(void *unused)
{
	long long t0, prev, t;
	long last = 0, r;

	(void)unused;
	pin(1);
	t0 = prev = now();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		t = now();
		if (t - prev > 1500) {
			gaps++;
			gap_ns += t - prev;
		}
		prev = t;
		r = atomic_load_explicit(&cur_round, memory_order_acquire);
		if (r != last) {
			if (mode != 4)
				*(volatile char *)atomic_load(&cur) = 2;
			atomic_store(&ack_round, r);
			last = r;
		}
	}
	wall_ns = now() - t0;
	return NULL;
}

static char *page(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	*p = 1;
	return p;
}

int main(int argc, char **argv)
{
	double secs;
	long period;
	long long start, r0;
	pthread_t t;
	char *keep, *p;

	if (argc != 4) {
		fprintf(stderr, "usage: %s MODE SECONDS PERIOD_NS\n", argv[0]);
		return 2;
	}
	mode = atoi(argv[1]);
	secs = atof(argv[2]);
	period = atol(argv[3]);
	pthread_create(&t, NULL, spinner, NULL);
	pin(0);
	keep = page();
	start = now();
	while (now() - start < secs * 1e9) {
		r0 = now();
		if (mode == 0 || mode == 4) {
			p = page();
			atomic_store(&cur, p);
			atomic_store(&cur_round, rounds + 1);
			while (atomic_load(&ack_round) != rounds + 1)
				;
			munmap(p, 4096);
		} else if (mode == 1) {
			mprotect(keep, 4096, PROT_READ);
			mprotect(keep, 4096, PROT_READ | PROT_WRITE);
		}
		rounds++;
		while (now() - r0 < period)
			;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("mode %d rounds %ld (%.0f/s) gaps %ld loss %.1f%% per-gap %.0f ns\n", mode, rounds,
	       rounds / secs, gaps, 100 * gap_ns / wall_ns, gap_ns / (gaps ? gaps : 1));
	return 0;
}
