#!/usr/bin/env python3
"""Which 64 KiB windows of a running mmo-server's executable mapping are resident.

Usage (as root, while the server runs; the pid is the server's own, `pgrep -x mmo-server`):
    python3 resident-code.py PID BINARY

Reads /proc/PID/maps for the executable (r-x) mappings of BINARY and /proc/PID/pagemap for
each of their pages (bit 63: present), then prints the resident pages per 64 KiB window of
the file (the kernel maps code around a faulting page a window at a time: fault-around) with
the first function symbol of each window (`nm -n`), so a window with no symbol is the
dynamic linker's tables before `.text` or `.rodata` after it (`readelf -SW BINARY`).
Assumes the code segment's file offsets equal its virtual addresses (true of mmo-server:
`readelf -lW`, the first LOAD segment at offset 0, address 0).
"""
import bisect
import struct
import subprocess
import sys

WINDOW = 64 * 1024
PAGE = 4096


def main() -> None:
    pid, binary = int(sys.argv[1]), sys.argv[2]
    present = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or "x" not in fields[1] or not fields[5].endswith(binary.split("/")[-1]):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            for address in range(start, end, PAGE):
                pagemap.seek(address // PAGE * 8)
                (entry,) = struct.unpack("<Q", pagemap.read(8))
                if entry >> 63:
                    present.append(address - start + offset)
    symbols = []
    nm = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTwW":
            symbols.append((int(fields[0], 16), fields[2]))
    addresses = [a for a, _ in symbols]
    windows = sorted({a // WINDOW for a in present})
    print(f"resident code pages {len(present)} = {len(present) * PAGE // 1024} KiB in {len(windows)} windows of 64 KiB")
    for w in windows:
        pages = sum(1 for a in present if a // WINDOW == w)
        i = bisect.bisect_left(addresses, w * WINDOW)
        first = symbols[i][1] if i < len(symbols) and symbols[i][0] < (w + 1) * WINDOW else "-"
        print(f"window {w * WINDOW:#08x} pages {pages:2d} first symbol {first[:100]}")


if __name__ == "__main__":
    main()
