#!/usr/bin/env python3
"""The run.sh reports' figures (figures.txt): usage: figures.py [DIR] (default: this folder)."""
import glob
import json
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
print("run                 steal ms  update p99  update p99.9  service p99.9  rtt p99 during raids  server CPU/update")
for f in sorted(glob.glob(os.path.join(folder, '*.json'))):
    d = json.load(open(f))
    s = d['server_delta']
    cpu_us = (s['cpu_user_us'] + s['cpu_system_us']) / s['engine_moves_applied']
    print(f"{os.path.basename(f)[:-5]:18} {d['host_steal']['steal_ms']:8}  {s['update_latency_us_p99']:10}  "
          f"{s['update_latency_us_p999']:12}  {s['update_service_us_p999']:13}  {d['rtt_us_during_raid']['p99']:20}  {cpu_us:14.1f} us")
