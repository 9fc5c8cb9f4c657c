#!/usr/bin/env python3
"""Fleet scale benchmark (issue 4): one controller, 8 lab hosts, 128 workers.

    python3 bench/fleet_scale.py [--storlab target/release/storlab] [--hosts 8]
        [--vms 128] [--runtime 10] [--keep-json out.json]

Brings up `storlab lab up --hosts N --link 10gbe --size 64m` in a temporary
state directory, runs

    storlab run --hosts A1,...,AN --token-file STATE/agent.token --target null:
        --vms 128 --iodepth 2 --rw randread --bs 4k --ramp_time 1 --runtime 10
        --no-db --json out.json

and reports:

* controller CPU: rusage of the `storlab run` child (os.wait4), user + sys
  seconds over its wall seconds, as % of one core (target < 5 %);
* start spread across hosts (target < 10 ms). Nothing in the result records
  the instant each host really began: `points[].started_unix` is the one
  planned instant, and every `end_ns` is relative to each host's own start
  (so the first interval ends at ~1 s on every host, whenever it began). What
  this measures instead:
    - clock offsets: all lab namespaces share one kernel clock, so the true
      offset is 0 and `hosts[].clock_offset_ms` is pure measurement error;
      the controller shifts each host's start by it, so its max-min is the
      planning part of the spread;
    - lateness: each agent logs "run R starts in X ms" when the start request
      arrives (X < 0: it arrived late, the host starts at once, late);
    - observed start (the real one): a sampler reads
      /proc/AGENT/task/TID/schedstat (on-CPU ns) of every `storlab-engine-*`
      thread of every agent every ~0.5 ms; a thread's start is the first
      sample, within [planned - 50 ms, planned + 1 s], where its CPU time grew
      (it was asleep until then); it started at the latest that sample's time
      minus the CPU it gained since the previous sample (and after the
      previous sample). A host's start is its earliest thread. The sampler
      thread runs SCHED_FIFO 1 so it keeps sampling once 16 engine threads
      saturate the 2 cores; its period is reported.
* total IOPS and per-host IOPS (measured intervals).

`storlab lab down` always runs (finally), and the sampler only reads /proc.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def netns_pids(name):
    r = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def engine_tids(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().startswith("storlab-engine"):
                        out.append(int(tid))
            except OSError:
                pass
    except OSError:
        pass
    return out


class Sampler(threading.Thread):
    """Samples the on-CPU time of every agent's engine threads."""

    def __init__(self, agent_pids, window_s=4.0):
        super().__init__(daemon=True)
        self.agent_pids = agent_pids  # host index -> [pids in the namespace]
        self.window_s = window_s
        self.samples = {}  # (host, tid) -> [(unix_ns, runtime_ns)]
        self.periods = []
        self.halt = threading.Event()

    def run(self):
        try:  # root: keep sampling while 2 cores are saturated (this thread only)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except (OSError, AttributeError):
            pass
        files = {}
        first_seen = None
        last_scan = 0.0
        prev = time.time_ns()
        while not self.halt.is_set():
            now = time.monotonic()
            if now - last_scan > 0.05 and (first_seen is None or now - first_seen < 0.5):
                # Engine threads appear at prepare; rescan until they are all there.
                for host, pids in self.agent_pids.items():
                    for pid in pids:
                        for tid in engine_tids(pid):
                            if (host, tid) not in files:
                                try:
                                    files[(host, tid)] = open(
                                        f"/proc/{pid}/task/{tid}/schedstat", "rb", buffering=0
                                    )
                                except OSError:
                                    pass
                last_scan = now
                if files and first_seen is None:
                    first_seen = now
            if first_seen is not None and now - first_seen > self.window_s:
                break
            t = time.time_ns()
            for key, f in files.items():
                try:
                    f.seek(0)
                    rt = int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
                self.samples.setdefault(key, []).append((t, rt))
            self.periods.append(t - prev)
            prev = t
            time.sleep(0.0005)
        for f in files.values():
            f.close()

    def starts(self, planned_ns):
        """host -> [start ns of each engine thread]."""
        lo, hi = planned_ns - 50_000_000, planned_ns + 1_000_000_000
        out = {}
        for (host, _tid), s in self.samples.items():
            for (t0, r0), (t1, r1) in zip(s, s[1:]):
                if lo <= t1 <= hi and r1 > r0:
                    # It ran r1 - r0 ns of CPU by t1, so it started no later
                    # than t1 - (r1 - r0), and after the previous sample t0.
                    out.setdefault(host, []).append(max(t0, t1 - (r1 - r0)))
                    break
        return out


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--storlab", default="target/release/storlab")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--vms", type=int, default=128)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--link", default="10gbe")
    ap.add_argument("--no-sampler", action="store_true", help="skip the /proc start sampler")
    ap.add_argument("--keep-json", help="copy the result JSON here")
    a = ap.parse_args()
    storlab = os.path.abspath(a.storlab)
    state = tempfile.mkdtemp(prefix="storlab-fleet-scale-")
    try:
        t = time.monotonic()
        sh([storlab, "lab", "up", "--hosts", str(a.hosts), "--link", a.link,
            "--media", "ram", "--size", "64m", "--state-dir", state])
        print(f"lab up: {time.monotonic() - t:.1f} s", file=sys.stderr)
        st = json.loads(sh([storlab, "lab", "status", "--json", "--state-dir", state]).stdout)
        agents = [h["agent"] for h in st["hosts"]]
        names = {h["agent"]: h["name"] for h in st["hosts"]}
        out = os.path.join(state, "out.json")
        cmd = [storlab, "run", "--hosts", ",".join(agents), "--token-file", st["token_file"],
               "--target", "null:", "--vms", str(a.vms), "--iodepth", "2",
               "--rw", "randread", "--bs", "4k", "--ramp_time", "1",
               "--runtime", str(a.runtime), "--no-db", "--json", out]
        print("$ " + " ".join(cmd), file=sys.stderr)
        sampler = None
        if not a.no_sampler:
            sampler = Sampler({i: netns_pids(names[ag]) for i, ag in enumerate(agents)})
            sampler.start()
        t0 = time.monotonic()
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # wait4 gives this child's own rusage; read stderr on a thread so it cannot block.
        err = []
        rd = threading.Thread(target=lambda: err.append(child.stderr.read()), daemon=True)
        rd.start()
        _, status, ru = os.wait4(child.pid, 0)
        wall = time.monotonic() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        rd.join(5)
        if sampler:
            sampler.halt.set()
            sampler.join()
        if child.returncode != 0:
            sys.stderr.write(err[0].decode() if err else "")
            raise SystemExit(f"storlab run exited {child.returncode}")
        res = json.load(open(out))
        if a.keep_json:
            shutil.copy(out, a.keep_json)
        if "points" not in res:  # a results document: jobs[].points[]
            res = res["jobs"][0]
        pt = res["points"][0]
        cpu_s = ru.ru_utime + ru.ru_stime
        print(f"controller: user {ru.ru_utime:.3f} s + sys {ru.ru_stime:.3f} s over "
              f"{wall:.2f} s wall = {100 * cpu_s / wall:.2f} % of one core "
              f"(maxrss {ru.ru_maxrss / 1024:.0f} MiB)  [target < 5 %]")
        planned = int(round(pt["started_unix"] * 1e9))
        hosts = pt["hosts"]
        offs = [h["clock_offset_ms"] for h in hosts]
        print(f"clock offsets (true offset 0: one kernel clock): min {min(offs):.3f} ms, "
              f"max {max(offs):.3f} ms, spread {max(offs) - min(offs):.3f} ms")
        late = []
        for i, h in enumerate(hosts):
            log = os.path.join(state, f"agent-h{i + 1}.log")
            try:
                lines = [ln for ln in open(log) if " starts in " in ln]
                late.append(int(lines[-1].rsplit(" starts in ", 1)[1].split()[0]))
            except (OSError, IndexError, ValueError):
                late.append(None)
        print(f"agents' 'starts in' at the start request (ms, <0 = late): {late}")
        if sampler:
            starts = sampler.starts(planned)
            per = sorted(sampler.periods[1:])
            print(f"sampler period: median {pct(per, 50) / 1e6:.2f} ms, "
                  f"p99 {pct(per, 99) / 1e6:.2f} ms ({len(per)} samples)")
            hs = {i: min(v) for i, v in starts.items()}
            if len(hs) == len(hosts):
                rel = [(hs[i] - planned) / 1e6 for i in range(len(hosts))]
                print("observed host start - planned (ms): "
                      + ", ".join(f"{r:+.2f}" for r in rel))
                print(f"start spread across hosts (first engine thread of each): "
                      f"{max(rel) - min(rel):.2f} ms  [target < 10 ms]")
                allt = [(x - planned) / 1e6 for v in starts.values() for x in v]
                print(f"every engine thread ({len(allt)}): {min(allt):+.2f} .. "
                      f"{max(allt):+.2f} ms after planned")
            else:
                print(f"sampler saw engine threads of {len(hs)}/{len(hosts)} hosts only")
        tot = pt["summary"]["total"]["iops"]
        print(f"total IOPS {tot:,.0f}  ({pt['threads']} engine threads over {len(hosts)} hosts)")
        for h in hosts:
            print(f"  {h['host']:>18}  vms {len(h['vms']):3d}  IOPS "
                  f"{h['summary']['total']['iops']:>11,.0f}  first interval "
                  f"{h['intervals'][0]['seconds']:.4f} s  offset {h['clock_offset_ms']:+.3f} ms"
                  f"{'  LOST' if h['lost'] else ''}")
    finally:
        r = subprocess.run([storlab, "lab", "down", "--state-dir", state],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"lab down failed: {r.stderr}", file=sys.stderr)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
