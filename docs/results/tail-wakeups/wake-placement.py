#!/usr/bin/env python3
"""How long each wake-up of the server's workers waited for a CPU, and where it was placed.

Reads `perf script -F comm,tid,cpu,time,event,trace` of a `perf sched record` taken during a
load test, and for each sched_waking of a worker thread until its sched_switch in: the delay,
the waker, whether the wakee was queued on the waker's own CPU, and what the other CPU ran.

usage: wake-placement.py SCHED.txt TID [TID...]   (the worker threads' ids)
"""
import collections
import re
import sys

LINE = re.compile(r"\s*(.+?)\s+(\d+) \[(\d+)\] ([\d.]+):\s+sched:(\w+): (.*)")


def main(path, workers):
    waking = {}  # tid -> (time, target cpu, waker comm, waker cpu, what each cpu ran then)
    running = {}  # cpu -> comm of the task switched in last
    delays = []
    long_by_kind = collections.Counter()
    short_by_kind = collections.Counter()
    idle_other = 0
    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        comm, _tid, cpu, t, event, trace = m.groups()
        cpu, t = int(cpu), float(t)
        if event == "sched_waking":
            tid = re.search(r" pid=(\d+)", trace).group(1)
            target = int(re.search(r"target_cpu=(\d+)", trace).group(1))
            if tid in workers:
                waking[tid] = (t, target, comm.split("/")[0], cpu, dict(running))
        elif event == "sched_migrate_task":
            tid = re.search(r" pid=(\d+)", trace).group(1)
            if tid in waking:
                w = waking[tid]
                waking[tid] = (w[0], int(re.search(r"dest_cpu=(\d+)", trace).group(1)), w[2], w[3], w[4])
        elif event == "sched_switch":
            # A waking that reached a task still on its CPU (about to sleep) ends no wait.
            waking.pop(re.search(r"prev_pid=(\d+)", trace).group(1), None)
            nxt = re.search(r"next_comm=(.+?) next_pid=(\d+)", trace)
            running[cpu] = nxt.group(1)
            tid = nxt.group(2)
            if tid in waking:
                tw, target, waker, waker_cpu, ran = waking.pop(tid)
                delay_us = (t - tw) * 1e6
                delays.append(delay_us)
                kind = (waker, "queued on the waker's CPU" if target == waker_cpu else "queued on another CPU")
                if delay_us > 400:
                    long_by_kind[kind] += 1
                    others = [c for c in ran if c != target]
                    if others and all(ran[c].startswith("swapper") for c in others):
                        idle_other += 1
                else:
                    short_by_kind[kind] += 1
    delays.sort()
    n = len(delays)
    if n == 0:
        print("no wake-ups of those threads")
        return
    print(f"wake-ups {n}: delay p50 {delays[n // 2]:.0f} us, p90 {delays[int(n * 0.9)]:.0f}, "
          f"p99 {delays[int(n * 0.99)]:.0f}, max {delays[-1]:.0f}")
    longs = sum(long_by_kind.values())
    print(f"delays over 400 us: {longs}; in {idle_other} of them every other CPU was idle")
    for (waker, where), count in long_by_kind.most_common():
        print(f"  {count:6d}  woken by {waker}, {where}")
    print("delays up to 400 us:")
    for (waker, where), count in short_by_kind.most_common(6):
        print(f"  {count:6d}  woken by {waker}, {where}")


if __name__ == "__main__":
    main(sys.argv[1], set(sys.argv[2:]))
