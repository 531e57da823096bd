#!/usr/bin/env python3
"""The workers' scheduling delays in `perf sched timehist` tables (run.sh): for each table,
the delay from each wake-up of an `mmo-worker-*` thread to its running (timehist's "sch
delay"), its percentiles, and for the delays of 0.5 ms or more, what ran on that CPU just
before the worker did (`<idle>`: the CPU was idle, so the wait was the wake-up itself)."""
import collections
import re
import sys

for path in sys.argv[1:]:
    last_on_cpu = {}  # CPU -> the task whose row came last on it: the one that ran before
    delays = []
    behind = collections.Counter()
    for line in open(path):
        p = line.split()
        if len(p) < 6 or not p[1].startswith('['):
            continue
        try:
            delay_ms = float(p[-2])
            float(p[0]), float(p[-1])
        except ValueError:
            continue
        cpu, name = p[1], ' '.join(p[2:-3])
        if name.startswith('mmo-worker'):
            delays.append(delay_ms)
            if delay_ms >= 0.5:
                behind[re.sub(r'\[\d+(/\d+)?\]', '', last_on_cpu.get(cpu, '?'))] += 1
        last_on_cpu[cpu] = name
    delays.sort()
    n = len(delays)
    q = lambda x: delays[min(n - 1, int(x * n))] if n else 0.0
    print(f"{path.split('/')[-1]:26} wake-ups {n:6}  sch delay ms p50 {q(.5):.3f} p99 {q(.99):.3f} "
          f"p99.9 {q(.999):.3f} max {delays[-1] if n else 0:.3f}  >=0.5 ms {sum(d >= 0.5 for d in delays):4}  "
          f"ran before: {dict(behind.most_common(5))}")
