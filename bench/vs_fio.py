#!/usr/bin/env python3
"""storlab vs fio, side by side in one run, on the same targets.

Cases (4 KiB random reads, queue depth 32, one worker, each tool alternately):
  null   storlab's null backend   vs fio's null engine
  cache  a page-cache file        vs fio io_uring (buffered, registered files and buffers)
  direct O_DIRECT on a disk file  vs fio io_uring (O_DIRECT, registered files and buffers)
  zram   O_DIRECT on a RAM block device the script makes (zram, filled with random data, removed
         at the end): a device faster than one engine thread, so the engine is the limit
  psync-shm    4 KiB random reads at queue depth 1 with fio's psync engine (storlab --ioengine
               psync) from a page-cached file in /dev/shm (tmpfs: io_uring punts those reads to a
               worker thread; psync, fio's default engine, reads them on the caller's thread)
  psync-write  4 KiB buffered random writes at queue depth 1 with psync on the disk file

Reports IOPS, CPU seconds per million I/Os (user + system of the whole process,
from getrusage of the child) and mean latency for both, and the ratio of IOPS per
CPU-second. Run from the repository root after ./setup.sh:

    python3 bench/vs_fio.py [--runtime 10] [--repeat 3] [--dir /var/tmp/storlab-bench]
                            [--cases null,cache,direct,zram,psync-shm,psync-write]
                            [--batch N]   # iodepth_batch_complete_min N for both tools
                            [--submit N]  # iodepth_batch_submit N for both tools (default: each tool's own)
                            [--sqpoll]    # file cases: SQPOLL for both (storlab --sqpoll, fio --sqthread_poll=1)
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "target", "release", "storlab")


def timed(cmd):
    """Run cmd; return (stdout, cpu seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"bench: command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, cpu


def warm(path):
    """Read a file once so its pages are cached."""
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def parse_size(text):
    """'1g', '512m', '4096' -> bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    return int(t[:-1]) * units[t[-1]] if t[-1] in units else int(t)


def make_zram(size):
    """Make a zram block device of `size` bytes for this run and fill it with random data; its number."""
    ctl = "/sys/class/zram-control/hot_add"
    if not os.path.exists(ctl):
        sys.exit(f"bench: zram case: {ctl} not found (needs root and the zram module: modprobe zram)")
    with open(ctl) as f:
        n = int(f.read())
    with open(f"/sys/block/zram{n}/disksize", "w") as f:
        f.write(str(size))
    # Random data does not compress: zram keeps each page as it is and a read copies 4 KiB.
    with open(f"/dev/zram{n}", "wb", buffering=0) as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
    return n


def remove_zram(n):
    """Remove the zram device this run made. The last tool's close can leave it busy for a moment
    (EBUSY), so try for up to 10 s, then say how to remove it by hand."""
    for _ in range(50):
        try:
            with open("/sys/class/zram-control/hot_remove", "w") as f:
                f.write(str(n))
            return
        except OSError:
            time.sleep(0.2)
    print(f"bench: /dev/zram{n} is still busy and was left in place; remove it with "
          f"`echo {n} > /sys/class/zram-control/hot_remove`", file=sys.stderr)


PSYNC = ("psync-shm", "psync-write")
CASES = ("null", "cache", "direct", "zram") + PSYNC


def run_storlab(case, args, path, out):
    rw, qd = ("randwrite", "1") if case == "psync-write" else ("randread", "1" if case in PSYNC else "32")
    cmd = [STORLAB, "run", "--rw", rw, "--bs", "4k", "--iodepth", qd, "--runtime", str(args.runtime),
           "--threads", "1", "--json", out, "-q"]
    if case in PSYNC:
        cmd += ["--target", f"file:{path}", "--size", args.size, "--ioengine", "psync"]
    elif case == "null":
        cmd += ["--target", "null:", "--size", "1g"]
    elif case == "zram":
        cmd += ["--target", f"file:{path}", "--direct", "1"]
    else:
        cmd += ["--target", f"file:{path}", "--size", args.size]
        if case == "direct":
            cmd += ["--direct", "1"]
    if args.batch > 1:
        cmd += ["--iodepth_batch_complete_min", str(args.batch)]
    if args.submit:
        cmd += ["--iodepth_batch_submit", str(args.submit)]
    if args.sqpoll and case not in ("null",) + PSYNC:
        cmd += ["--sqpoll"]
    _, cpu = timed(cmd)
    with open(out) as f:
        doc = json.load(f)
    s = doc["jobs"][0]["points"][0]["summary"]
    return {"iops": s["total"]["iops"], "ios": s["total"]["ios"], "cpu": cpu, "lat_us": s["total"]["lat_mean_us"],
            "backend": doc["jobs"][0]["points"][0]["backend"]}


def run_fio(case, args, path):
    rw, qd = ("randwrite", "1") if case == "psync-write" else ("randread", "1" if case in PSYNC else "32")
    cmd = ["fio", "--name=bench", f"--rw={rw}", "--bs=4k", f"--iodepth={qd}", "--numjobs=1", "--time_based",
           f"--runtime={args.runtime}", "--output-format=json", "--group_reporting"]
    if case in PSYNC:
        cmd += ["--ioengine=psync", "--invalidate=0", f"--filename={path}", f"--size={args.size}"]
    elif case == "null":
        cmd += ["--ioengine=null", "--size=1g"]
    elif case == "zram":
        cmd += ["--ioengine=io_uring", "--registerfiles", "--fixedbufs", f"--filename={path}", "--direct=1"]
    else:
        # invalidate=0: fio would otherwise drop the file's page cache before the run.
        cmd += ["--ioengine=io_uring", "--registerfiles", "--fixedbufs", "--invalidate=0", f"--filename={path}",
                f"--size={args.size}", "--direct=" + ("1" if case == "direct" else "0")]
    if args.batch > 1:
        cmd += [f"--iodepth_batch_complete_min={args.batch}"]
    if args.submit:
        cmd += [f"--iodepth_batch_submit={args.submit}"]
    if args.sqpoll and case not in ("null",) + PSYNC:
        cmd += ["--sqthread_poll=1"]
    stdout, cpu = timed(cmd)
    job = json.loads(stdout)["jobs"][0]["write" if case == "psync-write" else "read"]
    return {"iops": job["iops"], "ios": job["total_ios"], "cpu": cpu, "lat_us": job["lat_ns"]["mean"] / 1000.0,
            "backend": "fio " + ("null" if case == "null" else "psync" if case in PSYNC else "io_uring")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per tool; the median is reported")
    ap.add_argument("--dir", default="/var/tmp/storlab-bench", help="directory on a real disk for the file cases")
    ap.add_argument("--size", default="1g", help="file size for the file cases (default 1g)")
    ap.add_argument("--cases", default="null,cache,direct",
                    help="comma-separated: null, cache, direct, zram (zram needs root; default null,cache,direct)")
    ap.add_argument("--batch", type=int, default=1,
                    help="iodepth_batch_complete_min for both tools: completions gathered before refilling "
                         "(default 1, both tools' default)")
    ap.add_argument("--submit", type=int, default=0,
                    help="iodepth_batch_submit for both tools: requests submitted together (default: each "
                         "tool's own, fio 1, storlab each request on a device queue, else one submit per refill)")
    ap.add_argument("--sqpoll", action="store_true",
                    help="file cases: a kernel thread polls the submission queue for both tools "
                         "(its CPU counts: it is a thread of the process)")
    args = ap.parse_args()
    if not os.access(STORLAB, os.X_OK):
        sys.exit(f"bench: {STORLAB} not found: run ./setup.sh first")
    if shutil.which("fio") is None:
        sys.exit("bench: fio not found: run ./setup.sh first (it installs Debian's fio)")
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "bench.dat")
    tmp = tempfile.mkdtemp(prefix="storlab-bench-")
    fio_version = subprocess.run(["fio", "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    print(f"storlab vs {fio_version}: 4k random read, QD32 (psync cases: QD1, psync), "
          f"iodepth_batch_complete_min {args.batch}, "
          f"{f'iodepth_batch_submit {args.submit}, ' if args.submit else ''}"
          f"{'sqpoll, ' if args.sqpoll else ''}1 worker, "
          f"{args.runtime} s x {args.repeat} runs each "
          f"(median), {os.cpu_count()} CPUs, kernel {os.uname().release}")
    for case in args.cases.split(","):
        if case not in CASES:
            sys.exit(f"bench: --cases: unknown case {case!r} (allowed: {', '.join(CASES)})")
    zram = make_zram(parse_size(args.size)) if "zram" in args.cases.split(",") else None
    # psync-shm's file lives in tmpfs, made for this run and removed with it.
    shm = tempfile.mkdtemp(prefix="storlab-bench-", dir="/dev/shm") if "psync-shm" in args.cases.split(",") else None
    try:
        report(measure(args, path, tmp, zram, shm))
    finally:
        if zram is not None:
            remove_zram(zram)
        if shm is not None:
            shutil.rmtree(shm, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)


def measure(args, path, tmp, zram, shm):
    """Every case, the tools alternating; per case the median of each tool's runs."""
    rows = []
    for case in args.cases.split(","):
        target = f"/dev/zram{zram}" if case == "zram" else path
        if case == "psync-shm":
            target = os.path.join(shm, "bench.dat")
        if case in ("cache", "direct") + PSYNC:
            # storlab prepares (creates and fills) the file once; fio then reads the same file.
            _ = timed([STORLAB, "run", "--target", f"file:{target}", "--rw", "randread", "--size", args.size,
                       "--runtime", "1", "-q"])
        results = {"storlab": [], "fio": []}
        for i in range(args.repeat):
            for tool in ("storlab", "fio") if i % 2 == 0 else ("fio", "storlab"):
                if case in ("cache", "psync-shm"):
                    warm(target)
                out = os.path.join(tmp, f"{case}-{i}.json")
                r = run_storlab(case, args, target, out) if tool == "storlab" else run_fio(case, args, target)
                results[tool].append(r)
        med = {}
        for tool, rs in results.items():
            med[tool] = {k: statistics.median(r[k] for r in rs) for k in ("iops", "ios", "cpu", "lat_us")}
            med[tool]["cpu_per_mio"] = med[tool]["cpu"] / (med[tool]["ios"] / 1e6) if med[tool]["ios"] else 0
            med[tool]["iops_per_cpu_s"] = med[tool]["ios"] / med[tool]["cpu"] if med[tool]["cpu"] else 0
        rows.append((case, med))
    return rows


def report(rows):
    """Print each tool's medians and the ratios."""
    print()
    print(f"{'case':<11} {'tool':<8} {'IOPS':>10} {'CPU s/MIO':>10} {'I/O per CPU-s':>14} {'mean lat us':>12}")
    for case, med in rows:
        for tool in ("storlab", "fio"):
            m = med[tool]
            print(f"{case:<11} {tool:<8} {m['iops']:>10.0f} {m['cpu_per_mio']:>10.3f} {m['iops_per_cpu_s']:>14.0f} "
                  f"{m['lat_us']:>12.2f}")
    print()
    print(f"{'case':<11} {'IOPS ratio':>11} {'I/O per CPU-s ratio':>20} {'latency ratio':>14}   (storlab / fio)")
    for case, med in rows:
        s, f = med["storlab"], med["fio"]
        print(f"{case:<11} {s['iops'] / f['iops']:>11.2f} {s['iops_per_cpu_s'] / f['iops_per_cpu_s']:>20.2f} "
              f"{s['lat_us'] / f['lat_us']:>14.2f}")


if __name__ == "__main__":
    main()
