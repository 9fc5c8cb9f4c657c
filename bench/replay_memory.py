#!/usr/bin/env python3
"""Trace replay streams: storlab's peak memory against the trace's length.

For each size (bytes of trace text) the script writes a fio version 3 iolog
of 4 KiB and 64 KiB reads and writes at random 4 KiB-aligned offsets of a
1 GiB device, one every microsecond of trace time, then replays it with

    storlab run --replay TRACE --target null: --replay-speed S --no-db -q

under /usr/bin/time -v, and prints the trace's size and I/O count, the run's
wall time and storlab's peak resident set (the kernel's high-water mark,
"Maximum resident set size"). A reader that held the trace would grow with
it; storlab's reader holds one line, so the peak should not.

Run from the repository root after `cargo build --release --locked`:

    python3 bench/replay_memory.py [--sizes 10M,100M,1G] [--speed 1000] [--dir /var/tmp]

The traces are written in a temporary directory under --dir and removed at
the end (1 GB of trace needs 1 GB free there).
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "target", "release", "storlab")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text):
    text = text.strip().upper()
    if text[-1] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def write_trace(path, nbytes, seed=27):
    """A v3 iolog of at least `nbytes`; returns its I/O count."""
    rng = random.Random(seed)
    ios = 0
    written = 0
    with open(path, "w", buffering=1 << 20) as f:
        head = "fio version 3 iolog\n0 /dev/vdb add\n0 /dev/vdb open\n"
        f.write(head)
        written += len(head)
        lines = []
        while written < nbytes:
            # Batches of lines, so Python is not the bottleneck.
            lines.clear()
            for _ in range(10_000):
                ios += 1
                action = "write" if rng.random() < 0.3 else "read"
                length = 65536 if rng.random() < 0.1 else 4096
                offset = rng.randrange(0, (1 << 30) // 4096 - 16) * 4096
                lines.append(f"{ios} /dev/vdb {action} {offset} {length}\n")
            chunk = "".join(lines)
            f.write(chunk)
            written += len(chunk)
        f.write(f"{ios + 1} /dev/vdb close\n")
    return ios


def replay(path, speed):
    cmd = [
        "/usr/bin/time", "-v", STORLAB, "run", "--replay", path, "--target", "null:",
        "--replay-speed", str(speed), "--no-db", "-q",
    ]
    t = time.monotonic()
    o = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    if o.returncode != 0:
        sys.exit(f"storlab failed ({o.returncode}): {o.stderr.strip()}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", o.stderr)
    lag = re.search(r"issued behind the trace's times by (.*)", o.stdout)
    return wall, int(rss.group(1)), lag.group(1) if lag else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10M,100M,1G")
    ap.add_argument("--speed", type=float, default=1000.0,
                    help="replay speed (1000: the trace's µs spacing becomes 1 ns)")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    if not os.path.exists(STORLAB):
        sys.exit(f"{STORLAB} not found: cargo build --release --locked first")
    print(f"storlab run --replay TRACE --target null: --replay-speed {args.speed:g} --no-db -q")
    print(f"{'trace':>10} {'I/Os':>12} {'wall s':>8} {'peak RSS MiB':>13}  issue lag")
    with tempfile.TemporaryDirectory(prefix="storlab-replay-", dir=args.dir) as d:
        for s in args.sizes.split(","):
            path = os.path.join(d, f"trace-{s}.log")
            ios = write_trace(path, size(s))
            real = os.path.getsize(path)
            wall, rss_kb, lag = replay(path, args.speed)
            print(f"{real / (1 << 20):>8.0f} MiB {ios:>12,} {wall:>8.1f} {rss_kb / 1024:>13.1f}  {lag}")
            os.remove(path)


if __name__ == "__main__":
    main()
