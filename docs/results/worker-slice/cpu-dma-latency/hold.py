#!/usr/bin/env python3
"""Holds /dev/cpu_dma_latency at the given microseconds (PM QoS) until killed: at 0 the
guest's idle vCPUs poll (cpuidle state POLL) instead of halting (haltpoll's state 1, 1 us)."""
import signal
import struct
import sys
import time

qos = open('/dev/cpu_dma_latency', 'wb', buffering=0)
qos.write(struct.pack('i', int(sys.argv[1])))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(3600)
