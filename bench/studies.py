#!/usr/bin/env python3
"""The five reference studies on their quick profiles, timed, each run twice.

For every study: `storlab study NUMBER --no-db -q --out DIR/NUMBER-rK` K = 1..repeat,
its wall time, how many of its findings it reproduced (the report's last table),
and how far its relative figures moved between the runs: for every (lab run,
job, load point, target) the IOPS relative to that lab run's own baseline = 100
(every lab run of a study has one), and the largest difference between two runs,
in points of the relative figure and as a share of it. Issue 24 asks for the
five studies together in under 30 minutes and repeated runs within 5%.

Run from the repository root after ./setup.sh, as root (the labs need it), on a
machine doing nothing else:

    python3 bench/studies.py [--studies 000,001,002,003,004] [--repeat 2] [--out DIR]
                             [--markdown FILE]

At the end it counts the findings reproduced over all the studies in each run
(each study's findings.json), and with --markdown writes the side-by-side of
every finding (published, storlab's figure in run 1, the verdict in every run,
why) as a Markdown table, for docs/studies.md.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "target", "release", "storlab")


def relative_figures(out_dir):
    """{(lab, job, label, target): IOPS relative to the lab run's baseline}."""
    rel = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "run-*.json"))):
        lab = os.path.basename(path)[len("run-"):-len(".json")]
        with open(path) as f:
            run = json.load(f)
        compare = run.get("compare") or {}
        names = {url: name for name, url in compare.get("targets", [])}
        baseline = compare.get("baseline")
        iops = {}
        for job in run.get("jobs", []):
            for p in job.get("points", []):
                target = names.get(p["targets"][0], p["targets"][0])
                iops[(job["name"], p["label"], target)] = p["summary"]["total"]["iops"]
        for (job, label, target), v in iops.items():
            base = iops.get((job, label, baseline))
            if base:
                rel[(lab, job, label, target)] = 100.0 * v / base
    return rel


def reproduced(out_dir):
    """The report's "(N of M reproduced)", or None."""
    try:
        with open(os.path.join(out_dir, "report.txt")) as f:
            m = re.search(r"\((\d+) of (\d+) reproduced\)", f.read())
    except OSError:
        return None
    return (int(m.group(1)), int(m.group(2))) if m else None


def findings(out_dir):
    """The study's findings.json checks, or []."""
    try:
        with open(os.path.join(out_dir, "findings.json")) as f:
            return json.load(f)["findings"]
    except (OSError, ValueError, KeyError):
        return []


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(path, studies, out, repeat):
    """Every finding of run 1 beside its verdict in each run."""
    lines = [
        "| id | kind | published | storlab (run 1) | verdict, run 1..%d | why |" % repeat,
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in studies:
        runs = [{c["id"]: c for c in findings(os.path.join(out, f"{s}-r{k}"))}
                for k in range(1, repeat + 1)]
        for fid, c in runs[0].items():
            verdicts = " / ".join(r[fid]["verdict"] if fid in r else "-" for r in runs)
            lines.append("| " + " | ".join(cell(x) for x in [
                fid, c["kind"], c["published"], c["measured"], verdicts, c["why"]]) + " |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", default="000,001,002,003,004")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="/var/tmp/storlab-studies-bench")
    ap.add_argument("--markdown", help="write every finding's side-by-side here")
    a = ap.parse_args()
    if not os.access(STORLAB, os.X_OK):
        sys.exit(f"{STORLAB} not found: run ./setup.sh first")
    studies = [s.strip() for s in a.studies.split(",") if s.strip()]
    os.makedirs(a.out, exist_ok=True)
    total = {}
    rows = []
    for k in range(1, a.repeat + 1):
        for s in studies:
            out_dir = os.path.join(a.out, f"{s}-r{k}")
            subprocess.run(["rm", "-rf", out_dir], check=True)
            t0 = time.monotonic()
            p = subprocess.run(
                [STORLAB, "study", s, "--no-db", "-q", "--out", out_dir],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            secs = time.monotonic() - t0
            total[k] = total.get(k, 0.0) + secs
            rows.append((s, k, secs, p.returncode, reproduced(out_dir)))
            print(
                f"study {s} run {k}: {secs:.0f} s, exit {p.returncode}, "
                f"findings reproduced {reproduced(out_dir)}",
                flush=True,
            )
            if p.returncode != 0:
                print(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "", flush=True)
    print()
    for k, secs in total.items():
        checks = [c for s in studies for c in findings(os.path.join(a.out, f"{s}-r{k}"))]
        held = sum(1 for c in checks if c["verdict"] == "reproduced")
        print(
            f"run {k}: the {len(studies)} studies took {secs / 60:.1f} min; "
            f"{held} of {len(checks)} findings reproduced"
        )
    if a.markdown:
        markdown(a.markdown, studies, a.out, a.repeat)
        print(f"findings side by side in {a.markdown}")
    if a.repeat < 2:
        return
    print("\nrelative figures (IOPS, each lab run's baseline = 100), run 1 against run 2:")
    for s in studies:
        r1 = relative_figures(os.path.join(a.out, f"{s}-r1"))
        r2 = relative_figures(os.path.join(a.out, f"{s}-r2"))
        common = [key for key in r1 if key in r2]
        if not common:
            print(f"  study {s}: no figures in common")
            continue
        worst = max(common, key=lambda key: abs(r1[key] - r2[key]) / max(r1[key], 1e-9))
        share = abs(r1[worst] - r2[worst]) / max(r1[worst], 1e-9)
        within = sum(1 for key in common if abs(r1[key] - r2[key]) <= 0.05 * r1[key])
        print(
            f"  study {s}: {within} of {len(common)} within 5%; largest change "
            f"{100 * share:.1f}% at {worst}: {r1[worst]:.1f} -> {r2[worst]:.1f}"
        )


if __name__ == "__main__":
    main()
