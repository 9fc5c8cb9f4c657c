#!/usr/bin/env python3
"""storlab's random_distribution against fio's, side by side on one target.

For each distribution both tools run the same 4 KiB random reads (iodepth 4,
one worker, a 64 MiB region) against one nbdkit memory export on 127.0.0.1
that logs every request (nbdkit's log filter): storlab through its NBD
client, fio through its nbd engine. The script reads the offsets from the
log and prints, for both tools and as the ratio storlab / fio, the share of
I/Os on the hottest 1% and 10% of the 4 KiB blocks, and on the region's
first 10% and middle 20% (where normal's and the zones' bands lie).

Run from the repository root after ./setup.sh:

    python3 bench/skew_vs_fio.py [--ios 40000] [--dists zipf:1.1,pareto:0.2,...]

nbdkit is started and stopped by PID; its log is kept in a temporary directory
that is removed at the end.
"""

import argparse
import collections
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "target", "release", "storlab")
SIZE = 64 << 20
BS = 4096
DISTS = "zipf:1.1,zipf:0.8,pareto:0.2,normal:10,zoned:60/10:30/20:10/70"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(log):
    """nbdkit's memory plugin behind the log filter; (process, port)."""
    port = free_port()
    p = subprocess.Popen(
        ["nbdkit", "-f", "-i", "127.0.0.1", "-p", str(port), "--filter=log",
         "memory", str(SIZE), f"logfile={log}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    sys.exit("bench: nbdkit did not start: " + p.stderr.read().decode())


def offsets(log):
    """The read offsets the log filter recorded."""
    pat = re.compile(r"Read id=\d+ offset=(0x[0-9a-f]+|\d+) count=")
    out = []
    with open(log) as f:
        for line in f:
            m = pat.search(line)
            if m and "..." in line:
                out.append(int(m.group(1), 0))
    return out


def run(tool, dist, ios, tmp):
    log = os.path.join(tmp, f"{tool}.log")
    p, port = serve(log)
    try:
        if tool == "storlab":
            cmd = [STORLAB, "run", "--target", f"nbd://127.0.0.1:{port}/", "--rw", "randread",
                   "--bs", "4k", "--iodepth", "4", "--size", str(SIZE), "--random_distribution",
                   dist, "--io_size", str(ios * BS), "--runtime", "0", "--ramp_time", "0",
                   "-q", "--no-db"]
        else:
            cmd = ["fio", "--name=skew", "--ioengine=nbd", f"--uri=nbd://127.0.0.1:{port}/",
                   "--rw=randread", "--bs=4k", "--iodepth=4", f"--size={SIZE}",
                   f"--random_distribution={dist}", f"--io_size={ios * BS}", "--norandommap",
                   "--output-format=terse"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"bench: {tool} failed on {dist}: {r.stderr.strip()}")
    finally:
        p.terminate()
        p.wait()
    return offsets(log)


def figures(offs):
    counts = collections.Counter(o // BS for o in offs)
    n = len(offs)
    blocks = SIZE // BS
    hot = sorted(counts.values(), reverse=True)
    top = lambda share: sum(hot[: int(blocks * share)]) / n
    band = lambda lo, hi: sum(1 for o in offs if lo * SIZE <= o < hi * SIZE) / n
    return {"hottest 1%": top(0.01), "hottest 10%": top(0.10),
            "first 10%": band(0.0, 0.1), "middle 20%": band(0.4, 0.6)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ios", type=int, default=40000)
    ap.add_argument("--dists", default=DISTS)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="storlab-skew-")
    try:
        print(f"{'distribution':<26} {'figure':<12} {'storlab':>8} {'fio':>8} {'ratio':>6}")
        for dist in a.dists.split(","):
            ours = figures(run("storlab", dist, a.ios, tmp))
            theirs = figures(run("fio", dist, a.ios, tmp))
            for k in ours:
                ratio = ours[k] / theirs[k] if theirs[k] else float("nan")
                print(f"{dist:<26} {k:<12} {ours[k]:>8.3f} {theirs[k]:>8.3f} {ratio:>6.2f}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
