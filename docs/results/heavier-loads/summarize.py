#!/usr/bin/env python3
"""Medians (and min-max) of interleaved load-test runs, by row, from `mmo-loadtest --json` files.

A figure some report lacks (the update service time, before the server reported it) is left out.

usage: summarize.py FILE.json...   (a file's row is its name without the trailing -N.json)
"""
import json
import re
import statistics
import sys
from collections import defaultdict

FIGURES = [
    # (label, how to read it from one run's report)
    ("server update p99, µs", lambda d: d["server"]["update_latency_us_p99"]),
    ("server update p99.9, µs", lambda d: d["server"]["update_latency_us_p999"]),
    ("server update service time p50, µs", lambda d: d["server"]["update_service_us_p50"]),
    ("server update service time p99, µs", lambda d: d["server"]["update_service_us_p99"]),
    ("server update service time p99.9, µs", lambda d: d["server"]["update_service_us_p999"]),
    ("move round trip p99 during raids, µs", lambda d: d["rtt_us_during_raid"]["p99"]),
    ("server CPU per applied move, µs",
     lambda d: (d["server_delta"]["cpu_user_us"] + d["server_delta"]["cpu_system_us"]) / d["server_delta"]["engine_moves_applied"]),
    ("peak RSS, KiB", lambda d: d["server"]["peak_rss_kb"]),
    ("raid spawn median, ms", lambda d: d["server"]["raid_spawn_us_median"] / 1000),
    ("raid bursts spawned / triggered", lambda d: d["server"]["raid_spawns"] / max(1, d["server"]["raid_triggers"])),
    ("checks passed", lambda d: 1.0 if d["passed"] else 0.0),
]


def main(paths):
    runs = defaultdict(list)
    for path in paths:
        row = re.sub(r"-\d+\.json$", "", path.rsplit("/", 1)[-1])
        with open(path) as f:
            runs[row].append(json.load(f))
    rows = sorted(runs)
    print("| figure | " + " | ".join(f"{r} ({len(runs[r])} runs)" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for label, read in FIGURES:
        try:
            every = {r: [read(d) for d in runs[r]] for r in rows}
        except KeyError:
            continue  # a figure these reports do not have (the server before it reported it)
        cells = []
        for r in rows:
            values = every[r]
            med = statistics.median(values)
            cells.append(f"{med:,.1f} ({min(values):,.1f}-{max(values):,.1f})" if len(set(values)) > 1 else f"{med:,.1f}")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
