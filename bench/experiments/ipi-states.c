/*
 * How often the host changes its way of delivering IPIs (BENCHMARKS.md,
 * "The host's states"). A thread on CPU 0 sends expedited membarriers
 * (~20,000 IPIs/s); the main thread spins on CPU 1 and prints, every
 * second, the quartiles of its gaps between 1.5 and 60 us: one gap per
 * IPI. No BPF, no nettop: the host's own states, nothing else.
 *
 *   gcc -O2 -pthread bench/experiments/ipi-states.c -o /tmp/ipi-states
 *   /tmp/ipi-states 240
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
static volatile int stop;
static long now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static void* sender(void*a){pin(0);while(!stop){syscall(SYS_membarrier,MEMBARRIER_CMD_PRIVATE_EXPEDITED,0,0);long t=now()+50000;while(now()<t);} return 0;}
static int cmp(const void*a,const void*b){long x=*(long*)a,y=*(long*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){int secs=atoi(argv[1]);
 syscall(SYS_membarrier,MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,0,0);
 pthread_t t;pthread_create(&t,0,sender,0);pin(1);
 static long g[200000];
 for(int s=0;s<secs;s++){int n=0;long end=now()+1000000000L,last=now();
  while(1){long x=now();long d=x-last;last=x; if(d>1500&&d<60000&&n<200000)g[n++]=d; if(x>end)break;}
  qsort(g,n,sizeof(long),cmp);
  printf("%d n=%d p25=%ld med=%ld p75=%ld\n",s,n,n?g[n/4]:0,n?g[n/2]:0,n?g[3*n/4]:0);fflush(stdout);}
 stop=1;pthread_join(t,0);}
