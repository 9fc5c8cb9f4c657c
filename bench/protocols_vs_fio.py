#!/usr/bin/env python3
"""storlab's protocol backends vs fio's engines for the same protocol, same server, same job.

Brings up storlab's lab (RAM backing: ganesha, tgtd, nbdkit in a storage-host
namespace), then for each protocol runs storlab and fio alternately on the same
target URL:
  4k random read, QD32      and      64k sequential read, QD8
and reports IOPS, MB/s, client CPU per I/O (getrusage of the child), server CPU
per I/O (/proc/PID/stat of the server process) and the storlab / fio ratios.

fio engines: nbd (Debian's fio has it); nfs and libiscsi are not in Debian's fio
build, so --build-fio builds fio from Debian's own source package
(`apt-get source fio`, configure --enable-libnfs --enable-libiscsi) under
/var/tmp/storlab-fio, adding a deb-src entry in
/etc/apt/sources.list.d/storlab-bench-src.sources. fio's code is never
committed. Without such a fio, NFS and iSCSI rows show storlab alone.

fio's nfs engine takes the export in nfs_url and the file as --filename; with
Debian 12's libnfs 4.0.0 some attempts failed with "Failed NFS operation
(code:-14)" at iodepth > 1: such runs are reported on stderr and left out.

    python3 bench/protocols_vs_fio.py [--build-fio] [--runtime 10] [--repeat 2] [--protocols nbd,nbd-sr,iscsi,nfs3,nfs4]

nbd is storlab's default (simple replies, as the kernel's NBD client); nbd-sr is storlab with
?replies=structured, the format fio's engine gets from libnbd's default: the like-for-like row.

--pin puts the client (storlab or fio) on CPU 0 and every thread of the serving process on
CPU 1 (taskset), as separate client and server hosts would have them; without it the scheduler
places both on the machine's cores as it likes, and on 2 cores that placement moves the figures.
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
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "target", "release", "storlab")
FIO_SRC = "/var/tmp/storlab-fio"
FIO_BUILT = os.path.join(FIO_SRC, "fio-3.33", "fio")
SERVER = {"nbd": "nbdkit", "nbd-sr": "nbdkit", "iscsi": "tgtd", "nfs3": "ganesha", "nfs4": "ganesha"}
ENGINE = {"nbd": "nbd", "nbd-sr": "nbd", "iscsi": "libiscsi", "nfs3": "nfs", "nfs4": "nfs"}
# "nbd-sr": storlab asking for structured replies, as libnbd (and so fio's nbd engine) does by
# default; plain "nbd" is storlab's default, simple replies (what the kernel's NBD client speaks).
BASE = {"nbd-sr": "nbd"}
JOBS = [("4k randread QD32", "randread", "4k", 32), ("64k read QD8", "read", "64k", 8),
        ("4k randread QD1", "randread", "4k", 1)]


def sh(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def build_fio():
    """Build fio with the libnfs and libiscsi engines from Debian's source package."""
    if os.access(FIO_BUILT, os.X_OK):
        return FIO_BUILT
    os.makedirs(FIO_SRC, exist_ok=True)
    src_list = "/etc/apt/sources.list.d/storlab-bench-src.sources"
    if not os.path.exists(src_list):
        with open(src_list, "w") as f:
            f.write("Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "dpkg-dev", "libnfs-dev",
                                                 "libiscsi-dev"]):
        if sh(cmd).returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} failed")
    if not os.path.isdir(os.path.join(FIO_SRC, "fio-3.33")):
        if sh(["apt-get", "source", "-qq", "fio"], cwd=FIO_SRC).returncode != 0:
            sys.exit("bench: apt-get source fio failed")
    d = os.path.join(FIO_SRC, "fio-3.33")
    for cmd in (["./configure", "--enable-libnfs", "--enable-libiscsi"], ["make", "-j2"]):
        p = sh(cmd, cwd=d)
        if p.returncode != 0:
            sys.exit(f"bench: building fio failed at {' '.join(cmd)}:\n{p.stderr[-2000:]}")
    return FIO_BUILT


def fio_engines(fio):
    out = sh([fio, "--enghelp"]).stdout
    return {line.strip() for line in out.splitlines()[1:]}


def cpu_of(pid):
    """User + system seconds of a process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The client's prefix: `taskset -c 0` with --pin, else nothing.
CLIENT = []


def pin_server(pid):
    """Every thread of the serving process (and those it starts later) on CPU 1."""
    p = sh(["taskset", "-a", "-p", "-c", "1", str(pid)])
    if p.returncode != 0:
        sys.exit(f"bench: --pin: taskset on server pid {pid} failed: {p.stderr.strip()}")


def timed(cmd, server_pid):
    cmd = CLIENT + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = cpu_of(server_pid)
    p = sh(cmd)
    s1 = cpu_of(server_pid)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-1500:]}")
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, client, s1 - s0


def run_storlab(url, job, args, server_pid, tmp):
    _, rw, bs, qd = job
    out = os.path.join(tmp, "s.json")
    cmd = [STORLAB, "run", "--target", url, "--rw", rw, "--bs", bs, "--iodepth", str(qd), "--runtime",
           str(args.runtime), "--size", "512m", "--threads", "1", "--json", out, "-q"]
    _, client, server = timed(cmd, server_pid)
    with open(out) as f:
        s = json.load(f)["jobs"][0]["points"][0]["summary"]["total"]
    return {"iops": s["iops"], "mb_s": s["mb_s"], "ios": s["ios"], "client": client, "server": server}


def fio_target(proto, lab):
    t = lab["targets"]
    # Where the lab serves NFS: 127.0.0.1 (--net loopback) or the storage namespace (--net netns).
    host = urllib.parse.urlsplit(t["nfs4"]).hostname
    nfs = next(s for s in lab["servers"] if s["name"] == "ganesha")["ports"]
    if proto in ("nbd", "nbd-sr"):
        return ["--ioengine=nbd", f"--uri={t['nbd']}"]
    if proto == "iscsi":
        return ["--ioengine=libiscsi", "--filename=" + t["iscsi"].replace(":", "\\:")]
    version = 3 if proto == "nfs3" else 4
    # fio's nfs engine takes the export in nfs_url and the file as filename.
    url = f"nfs://{host}/storlab?version={version}&nfsport={nfs[0]}"
    if version == 3 and len(nfs) > 1:
        url += f"&mountport={nfs[1]}"
    return ["--ioengine=nfs", f"--nfs_url={url}", "--filename=disk.img", "--allow_file_create=0"]


def run_fio(fios, proto, lab, job, args, server_pid):
    fio = fios[ENGINE[proto]]
    _, rw, bs, qd = job
    cmd = [fio, "--name=bench", f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", "--numjobs=1", "--time_based",
           f"--runtime={args.runtime}", "--size=512m", "--output-format=json"] + fio_target(proto, lab)
    stdout, client, server = timed(cmd, server_pid)
    doc = json.loads(stdout[stdout.index("{"):])["jobs"][0]
    r = doc["read"]
    if doc.get("error") or r["total_ios"] == 0:
        raise RuntimeError(f"fio did no I/O (error {doc.get('error')}): {' '.join(cmd)}")
    return {"iops": r["iops"], "mb_s": r["bw_bytes"] / 1e6, "ios": r["total_ios"], "client": client,
            "server": server}


def median(rs):
    m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
    ios = max(m["ios"], 1)
    m["client_us"] = m["client"] * 1e6 / ios
    m["server_us"] = m["server"] * 1e6 / ios
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--protocols", default="nbd,nbd-sr,iscsi,nfs3,nfs4")
    ap.add_argument("--build-fio", action="store_true", help="build fio with nfs/libiscsi from Debian's source")
    ap.add_argument("--fio", default=None, help="fio binary (default: the built one if present, else Debian's)")
    ap.add_argument("--pin", action="store_true",
                    help="client on CPU 0, the server's threads on CPU 1 (needs 2 CPUs or more)")
    args = ap.parse_args()
    if args.pin:
        if (os.cpu_count() or 1) < 2:
            sys.exit("bench: --pin needs 2 CPUs or more (one for the client, one for the server)")
        CLIENT.extend(["taskset", "-c", "0"])
    if not os.access(STORLAB, os.X_OK):
        sys.exit(f"bench: {STORLAB} not found: run ./setup.sh first")
    built = args.fio or (build_fio() if args.build_fio else (FIO_BUILT if os.access(FIO_BUILT, os.X_OK) else None))
    # Each engine from the first fio that has it: the source build (nfs, libiscsi), else Debian's (nbd).
    fios = {}
    for f in [b for b in (built, shutil.which("fio")) if b]:
        for e in fio_engines(f):
            fios.setdefault(e, f)
    state = tempfile.mkdtemp(prefix="storlab-bench-lab-", dir="/var/tmp")
    tmp = tempfile.mkdtemp(prefix="storlab-bench-")
    up = sh([STORLAB, "lab", "up", "--backing", "ram", "--media", "ram", "--size", "1g", "--state-dir", state])
    if up.returncode != 0:
        sys.exit(f"bench: lab up failed: {up.stderr}")
    rows = []
    try:
        lab = json.loads(sh([STORLAB, "lab", "status", "--json", "--state-dir", state]).stdout)
        version = sh([shutil.which("fio") or built, "--version"]).stdout.strip()
        where = ("servers on 127.0.0.1" if lab.get("net") == "loopback"
                 else "veth to a storage-host namespace")
        print(f"storlab vs {version} ({', '.join(sorted(set(fios.values())))}) on storlab's lab (RAM backing, {where}), "
              f"{args.runtime} s x {args.repeat} runs each, median; {os.cpu_count()} CPUs"
              + ("; client on CPU 0, server on CPU 1" if args.pin else ""))
        for proto in args.protocols.split(","):
            url = lab["targets"][BASE.get(proto, proto)]
            if proto == "nbd-sr":
                url += "?replies=structured"
            pid = next(s for s in lab["servers"] if s["name"] == SERVER[proto])["pid"]
            if args.pin:
                pin_server(pid)
            engine = ENGINE[proto]
            for job in JOBS:
                res = {"storlab": [], "fio": []}
                for i in range(args.repeat):
                    order = ("storlab", "fio") if i % 2 == 0 else ("fio", "storlab")
                    for tool in order:
                        if tool == "fio" and engine not in fios:
                            continue
                        try:
                            r = run_storlab(url, job, args, pid, tmp) if tool == "storlab" else \
                                run_fio(fios, proto, lab, job, args, pid)
                            res[tool].append(r)
                        except RuntimeError as e:
                            print(f"note: {tool} {proto} {job[0]}: {str(e).splitlines()[0]}", file=sys.stderr)
                rows.append((proto, job[0], {t: median(r) for t, r in res.items() if r}))
    finally:
        down = sh([STORLAB, "lab", "down", "--state-dir", state])
        if down.returncode != 0:
            print(f"bench: lab down failed: {down.stderr}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    print()
    print(f"{'protocol':<8} {'job':<17} {'tool':<8} {'IOPS':>9} {'MB/s':>8} {'client us/IO':>13} {'server us/IO':>13}")
    for proto, job, m in rows:
        for tool, r in m.items():
            print(f"{proto:<8} {job:<17} {tool:<8} {r['iops']:>9.0f} {r['mb_s']:>8.1f} {r['client_us']:>13.2f} "
                  f"{r['server_us']:>13.2f}")
    print()
    print(f"{'protocol':<8} {'job':<17} {'IOPS ratio':>10} {'client CPU/IO ratio':>20} {'server CPU/IO ratio':>20}"
          "   (storlab / fio)")
    for proto, job, m in rows:
        if "fio" in m and "storlab" in m:
            s, f = m["storlab"], m["fio"]
            ratio = lambda a, b: f"{a / b:.2f}" if b else "-"
            print(f"{proto:<8} {job:<17} {ratio(s['iops'], f['iops']):>10} {ratio(s['client_us'], f['client_us']):>20} "
                  f"{ratio(s['server_us'], f['server_us']):>20}")
        else:
            print(f"{proto:<8} {job:<17} {'no fio engine':>10}")


if __name__ == "__main__":
    main()
