#!/usr/bin/env python3
"""Per-core scaling: storlab and fio side by side at 1, 2, ... and all cores.

Cases (4 KiB random reads, queue depth 32 per worker):
  null   storlab's null: target       vs fio's null engine
  cache  a page-cache file (buffered)   vs fio io_uring, buffered (registered files and buffers)

At N cores both tools run pinned to CPUs 0..N-1 (taskset) with N workers, one per core:
storlab `--numjobs N --threads N`, fio `--numjobs=N --thread`; every worker has its own queue of
32. The cache case shares one file, warmed before each run (fio's invalidate=0 keeps it cached).
Each run alternates the tools; the median of --repeat runs is reported with IOPS, the storlab/fio
IOPS ratio, CPU microseconds per I/O (user + system of the whole process, from getrusage of the
child) and the speed-up over 1 core. Run from the repository root after ./setup.sh:

    python3 bench/scaling.py [--runtime 10] [--repeat 3] [--cores 1,2,all] [--cases null,cache]
                             [--dir /var/tmp/storlab-bench] [--size 1g]

Figures mean something only on an otherwise idle machine: the script prints the load average
before and after and warns when it is 1 or more per core at the start.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_fio import STORLAB, timed, warm  # noqa: E402

DEPTH = 32


def pin(cores):
    return ["taskset", "-c", f"0-{cores - 1}"]


def run_storlab(case, cores, args, path, out):
    cmd = pin(cores) + [STORLAB, "run", "--rw", "randread", "--bs", "4k", "--iodepth", str(DEPTH),
                        "--numjobs", str(cores), "--threads", str(cores), "--runtime", str(args.runtime),
                        "--json", out, "-q", "--no-db"]
    if case == "null":
        cmd += ["--target", "null:", "--size", "1g"]
    else:
        cmd += ["--target", f"file:{path}", "--size", args.size]
    _, cpu = timed(cmd)
    with open(out) as f:
        doc = json.load(f)
    p = doc["jobs"][0]["points"][0]
    if p["threads"] != cores:
        sys.exit(f"bench: storlab ran {p['threads']} engine threads for --threads {cores}")
    s = p["summary"]
    return {"iops": s["total"]["iops"], "ios": s["total"]["ios"], "cpu": cpu, "threads": p["threads"]}


def run_fio(case, cores, args, path):
    cmd = pin(cores) + ["fio", "--name=bench", "--rw=randread", "--bs=4k", f"--iodepth={DEPTH}",
                        f"--numjobs={cores}", "--thread", "--time_based", f"--runtime={args.runtime}",
                        "--output-format=json", "--group_reporting"]
    if case == "null":
        cmd += ["--ioengine=null", "--size=1g"]
    else:
        # invalidate=0: fio would otherwise drop the file's page cache before the run.
        cmd += ["--ioengine=io_uring", "--registerfiles", "--fixedbufs", "--invalidate=0", f"--filename={path}",
                f"--size={args.size}", "--direct=0"]
    stdout, cpu = timed(cmd)
    job = json.loads(stdout)["jobs"][0]["read"]
    return {"iops": job["iops"], "ios": job["total_ios"], "cpu": cpu, "threads": cores}


def core_counts(spec):
    n = os.cpu_count() or 1
    out = []
    for c in spec.split(","):
        k = n if c.strip() == "all" else int(c)
        if not 1 <= k <= n:
            sys.exit(f"bench: --cores {c}: this machine has {n} CPUs (allowed: 1..={n} or all)")
        if k not in out:
            out.append(k)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per tool; the median is reported")
    ap.add_argument("--cores", default="1,2,all", help="core counts, 'all' = every CPU (default 1,2,all)")
    ap.add_argument("--cases", default="null,cache")
    ap.add_argument("--dir", default="/var/tmp/storlab-bench", help="directory for the page-cache file")
    ap.add_argument("--size", default="1g", help="page-cache file size (default 1g)")
    args = ap.parse_args()
    for tool, hint in ((STORLAB, "run ./setup.sh first"), ("fio", "run ./setup.sh first (Debian's fio)"),
                       ("taskset", "install util-linux")):
        if shutil.which(tool) is None and not os.access(tool, os.X_OK):
            sys.exit(f"bench: {tool} not found: {hint}")
    cores = core_counts(args.cores)
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, "bench.dat")
    tmp = tempfile.mkdtemp(prefix="storlab-scaling-")
    fio_version = subprocess.run(["fio", "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    load = os.getloadavg()
    print(f"storlab vs {fio_version}: 4k random read, QD{DEPTH} per worker, one worker per core, "
          f"{args.runtime} s x {args.repeat} runs each (median), {os.cpu_count()} CPUs, "
          f"kernel {os.uname().release}; load average {load[0]:.2f} at the start")
    if load[0] >= (os.cpu_count() or 1):
        print("bench: warning: the machine is busy; these figures are not a measurement", file=sys.stderr)
    rows = []
    for case in args.cases.split(","):
        if case not in ("null", "cache"):
            sys.exit(f"bench: --cases {case}: unknown case (allowed: null, cache)")
        if case == "cache":
            # storlab prepares (creates and fills) the file once; fio then reads the same file.
            timed([STORLAB, "run", "--target", f"file:{path}", "--rw", "randread", "--size", args.size,
                   "--runtime", "1", "-q", "--no-db"])
        for n in cores:
            results = {"storlab": [], "fio": []}
            for i in range(args.repeat):
                for tool in ("storlab", "fio") if i % 2 == 0 else ("fio", "storlab"):
                    if case == "cache":
                        warm(path)
                    out = os.path.join(tmp, f"{case}-{n}-{i}.json")
                    r = run_storlab(case, n, args, path, out) if tool == "storlab" else run_fio(case, n, args, path)
                    results[tool].append(r)
            med = {}
            for tool, rs in results.items():
                m = {k: statistics.median(r[k] for r in rs) for k in ("iops", "ios", "cpu")}
                m["cpu_us_per_io"] = m["cpu"] / m["ios"] * 1e6 if m["ios"] else 0
                med[tool] = m
            rows.append((case, n, med))
    base = {(case, tool): med[tool]["iops"] for case, n, med in rows if n == cores[0] for tool in med}
    print()
    print(f"{'case':<6} {'cores':>5} {'storlab IOPS':>13} {'fio IOPS':>11} {'IOPS ratio':>10} "
          f"{'CPU us/IO storlab':>17} {'CPU us/IO fio':>13} {'scale storlab':>13} {'scale fio':>9}")
    for case, n, med in rows:
        s, f = med["storlab"], med["fio"]
        print(f"{case:<6} {n:>5} {s['iops']:>13.0f} {f['iops']:>11.0f} {s['iops'] / f['iops']:>10.2f} "
              f"{s['cpu_us_per_io']:>17.3f} {f['cpu_us_per_io']:>13.3f} "
              f"{s['iops'] / base[(case, 'storlab')]:>12.2f}x {f['iops'] / base[(case, 'fio')]:>8.2f}x")
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} at the end (the runs' own load included)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
