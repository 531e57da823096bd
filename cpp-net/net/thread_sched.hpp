// thread_sched.hpp: how the server's threads ask the kernel's scheduler for what they need:
// a name each (top -H, perf, /proc/PID/task/*/comm), and for the workers a short scheduler
// slice, so a worker woken by a datagram runs at once on a core where another thread of the
// fair class is running.
//
// Why a slice and not a niceness: Linux 6.6+ schedules the fair class by EEVDF. A task that
// wakes runs ahead of the running one only once that one has used the slice it was picked
// for (RUN_TO_PARITY), whatever the two tasks' niceness; the default slice is 0.7 ms times
// (1 + log2 of the CPUs, at most 8), 1.4 ms on two CPUs. A task may ask for a slice of its own
// (sched_setattr's sched_runtime on a SCHED_OTHER thread, Linux 6.12+: 0.1-100 ms), and a
// woken task whose slice is shorter than the running task's preempts it at once
// (PREEMPT_SHORT). Older kernels accept the call and ignore the slice.
#pragma once

#include <cstdint>
#include <string>

namespace mmo::net {

// Names the calling thread (at most 15 bytes are kept; longer names are cut). Never fails
// the caller: a name is for people.
void name_this_thread(const std::string& name);

// Asks for a scheduler slice of `slice_us` microseconds for the calling thread (0: the
// kernel's default again), keeping its policy (SCHED_OTHER) and niceness. Returns 0, or the
// errno of the refusal (EPERM under a seccomp filter or a container that forbids
// sched_setattr, ENOSYS on a kernel without it). The kernel clamps the slice to
// 100..100,000 us; a kernel older than 6.12 accepts the call and ignores the slice.
int request_thread_slice_us(uint32_t slice_us);

// The scheduler slice thread `tid` (0: the calling thread) holds now, in microseconds, as
// the kernel reports it (sched_getattr's sched_runtime: Linux 6.12+); 0 where the kernel
// reports none (older kernels) or refuses to say.
uint32_t thread_slice_us(int tid = 0);

}  // namespace mmo::net
