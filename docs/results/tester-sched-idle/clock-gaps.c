// clock-gaps.c: how long a CPU is taken away from a thread that never yields. Pinned to one CPU
// at SCHED_FIFO 50 (root), it reads CLOCK_MONOTONIC in a loop for SECONDS and counts the gaps
// between two reads by length: on a virtual machine at rest, gaps of a millisecond or more are
// the hypervisor running something else (steal); the ~50 ms ones about once a second are the
// kernel's real-time throttling (sched_rt_runtime_us), not the host.
// build: gcc -O2 -o clock-gaps clock-gaps.c; run: (./clock-gaps 0 10 & ./clock-gaps 1 10; wait)
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
static uint64_t now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int main(int c,char**v){int cpu=atoi(v[1]);double secs=atof(v[2]);
 cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);sched_setaffinity(0,sizeof s,&s);
 struct sched_param p={.sched_priority=50}; if(sched_setscheduler(0,SCHED_FIFO,&p))perror("fifo");
 uint64_t start=now(),prev=start,end=start+(uint64_t)(secs*1e9); uint64_t hist[8]={0}; uint64_t lost=0;
 while(1){uint64_t t=now(); uint64_t g=t-prev; prev=t; if(t>end)break;
  if(g>20000){lost+=g; int b=g<50000?0:g<100000?1:g<250000?2:g<500000?3:g<1000000?4:g<2000000?5:g<5000000?6:7; hist[b]++;}}
 printf("cpu%d: time in gaps>20us %.2f%% | gaps 20-50us %lu 50-100 %lu 100-250 %lu 250-500 %lu 0.5-1ms %lu 1-2ms %lu 2-5ms %lu >5ms %lu\n",cpu,100.0*lost/(end-start),hist[0],hist[1],hist[2],hist[3],hist[4],hist[5],hist[6],hist[7]);}
