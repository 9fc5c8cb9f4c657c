//! Results database and reports: snapshot tests of every output format from a
//! fixed fixture, the store's round trip and refusals, and the HTML report in
//! headless Chromium.
//!
//! `STORLAB_BLESS=1 cargo test --test report` rewrites the fixture JSON and
//! the expected outputs in tests/fixtures/ (review the diff before committing).

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use storlab::model::{CompareInfo, JobRecord, PointServerCpu, RunRecord, ServerCpu};
use storlab::model::{IntervalRecord, PointResult};
use storlab::report::markdown::{self, ReportOptions};
use storlab::report::relative::{Comparison, Source};
use storlab::report::vocab::Metric;
use storlab::report::{csv, html};
use storlab::runner::Observer;
use storlab::stats::{CpuSample, Recorder, Snapshot, Summary};
use storlab::store::{RunWriter, Store, StoreError};
use storlab::workload::Dir;

const FC: &str = "file:/mnt/fc-4g";
const NFS: &str = "nfs://10.99.1.2/export";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn blessing() -> bool {
    std::env::var_os("STORLAB_BLESS").is_some_and(|v| v == "1")
}

/// Compare `actual` with the committed file, or rewrite it when blessing.
fn snapshot(name: &str, actual: &str) {
    let path = fixtures().join("expected").join(name);
    if blessing() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run STORLAB_BLESS=1 cargo test --test report)",
            path.display()
        )
    });
    if expected != actual {
        let new = path.with_extension("actual");
        std::fs::write(&new, actual).unwrap();
        panic!(
            "{} differs from the output (written to {}); if the change is intended, run STORLAB_BLESS=1 cargo test --test report",
            path.display(),
            new.display()
        );
    }
}

/// A deterministic pseudo-random stream.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One interval: `ios` I/Os, 75% reads, latency around `lat_us` with a tail.
fn interval_stats(rng: &mut Lcg, ios: u64, lat_us: f64) -> Snapshot {
    interval_stats_bs(rng, ios, lat_us, 4096)
}

/// [`interval_stats`] with `bs`-byte I/Os.
fn interval_stats_bs(rng: &mut Lcg, ios: u64, lat_us: f64, bs: u64) -> Snapshot {
    let mut r = Recorder::new();
    for _ in 0..ios {
        let u = rng.next();
        let tail = if u > 0.985 { 3.0 } else { 1.0 };
        // Whole 50 µs steps keep the histograms (and the fixture files) small.
        let lat = (lat_us * (0.5 + rng.next()) * tail / 50.0).round() * 50.0;
        let dir = if rng.next() < 0.75 {
            Dir::Read
        } else {
            Dir::Write
        };
        r.record(dir, bs, (lat * 1000.0) as u64);
    }
    r.take()
}

fn spec(label: &str, vms: u32, depth: u32) -> Value {
    json!({
        "label": label,
        "groups": [{ "name": "vm", "vms": vms, "workers_per_vm": 1, "disks_per_vm": 1,
            "access": { "bs": [[4096, 100]], "read_pct": 75, "random_pct": 100,
                        "align": null, "iodepth": depth, "rate": null } }],
        "offset": 0, "size": 67108864, "content": "random", "direct": true, "sync": "none",
        "ramp": 2.0, "runtime": 4.0, "interval": 1.0, "io_limit": null, "seed": 7
    })
}

/// A point of 2 ramp + 4 measured 1 s intervals.
fn point(target: &str, label: &str, vms: u32, iops: f64, lat_us: f64, seed: u64) -> Value {
    let mut rng = Lcg(seed);
    let mut intervals = Vec::new();
    let mut measured = Vec::new();
    for i in 0..6u32 {
        let wobble = 1.0 + 0.04 * (rng.next() - 0.5);
        let ramp = i < 2;
        let n = (iops * wobble * if ramp { 0.6 } else { 1.0 }) as u64;
        let stats = interval_stats(&mut rng, n, lat_us);
        let cpu = CpuSample {
            proc_user_s: 0.05 + n as f64 * 2e-6,
            proc_sys_s: 0.02 + n as f64 * 3e-6,
            host_busy_pct: 10.0 + n as f64 / 1000.0,
            cores: 2,
            ctx: 0,
        };
        if !ramp {
            measured.push((stats.clone(), 1.0, cpu.clone()));
        }
        intervals.push(json!({
            "index": i, "phase": if ramp { "ramp" } else { "measure" },
            "start_s": i as f64, "seconds": 1.0, "stats": stats, "cpu": cpu,
        }));
    }
    let summary = Summary::compute(&measured);
    let total: Snapshot = measured.iter().map(|m| &m.0).sum();
    json!({
        "label": label, "spec": spec(label, vms, 2), "targets": [target],
        "backend": "fixture: hand-built", "threads": 2, "started_unix": 1763750000.0 + seed as f64,
        "prepared": [], "intervals": intervals,
        "workers": [{ "id": { "group": "vm", "vm": 0, "worker": 0 }, "stats": total.clone() }],
        "measured": total, "summary": summary, "interrupted": false, "error": null,
    })
}

/// One run on `target`: a 4-step VM sweep and an OLTP point repeated 3 times.
/// `speed` scales IOPS, `slow` scales latency.
fn run(target: &str, speed: f64, slow: f64, seed: u64) -> RunRecord {
    let sweep: Vec<Value> = [
        (32u32, 4000.0, 900.0),
        (64, 6500.0, 1300.0),
        (96, 7600.0, 2600.0),
        (128, 7900.0, 5200.0),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(vms, iops, lat))| {
        point(
            target,
            &format!("{vms} VMs"),
            vms,
            iops * speed,
            lat * slow,
            seed + i as u64,
        )
    })
    .collect();
    let oltp: Vec<Value> = (0..3)
        .map(|r| {
            point(
                target,
                "1 VM",
                1,
                3000.0 * speed,
                640.0 * slow,
                seed + 10 + r,
            )
        })
        .collect();
    let v = json!({
        "schema": "storlab.run", "schema_version": 1,
        "command": ["storlab", "run", "--suite", "fixture", "--target", target, "--json", "run.json"],
        "started_unix": 1763750000.0 + seed as f64,
        "environment": { "hostname": "lab-1", "kernel": "6.1.0-fixture", "os": "Debian GNU/Linux 12 (bookworm)",
            "cpu_model": "Fixture CPU @ 2.0GHz", "cores": 2, "memory_bytes": 8589934592u64, "storlab_version": "0.1.0" },
        "jobs": [
            { "name": "vsphere-shared-4k", "description": "4K 75/25 random, VM sweep", "profile": "quick", "points": sweep },
            { "name": "oltp-8k", "description": "single-VM OLTP, repeated", "profile": null, "points": oltp }
        ],
        "interrupted": false, "error": null, "complete": true
    });
    serde_json::from_value(v).expect("fixture is a valid run")
}

/// The two fixture runs: the baseline (4 Gb FC) and an NFS run.
fn fixture_runs() -> Vec<RunRecord> {
    vec![run(FC, 1.0, 1.0, 100), run(NFS, 0.9, 1.25, 200)]
}

/// One point of a fleet run on two hosts: 1 ramp + 4 measured 1 s intervals
/// of 32 KiB I/Os per host; the second host is slower. The point's intervals
/// are the hosts' sums, as the runner merges them.
fn fleet_point(label: &str, vms: u32, iops_per_host: f64, seed: u64) -> Value {
    let hosts = [("10.99.1.11:7070", 1.0, 1.0), ("10.99.1.12:7070", 0.8, 1.3)];
    let mut merged: Vec<(Snapshot, CpuSample)> = Vec::new();
    let mut host_docs = Vec::new();
    for (h, &(name, speed, slow)) in hosts.iter().enumerate() {
        let mut rng = Lcg(seed * 10 + h as u64);
        let mut intervals = Vec::new();
        let mut measured = Vec::new();
        for i in 0..5u32 {
            let ramp = i == 0;
            let wobble = 1.0 + 0.06 * (rng.next() - 0.5);
            let n = (iops_per_host * speed * wobble * if ramp { 0.5 } else { 1.0 }) as u64;
            let stats = interval_stats_bs(&mut rng, n, 700.0 * slow, 32768);
            let cpu = CpuSample {
                proc_user_s: 0.03 + n as f64 * 2e-6,
                proc_sys_s: 0.01 + n as f64 * 4e-6,
                host_busy_pct: 20.0 + n as f64 / 200.0,
                cores: 2,
                ctx: 0,
            };
            if !ramp {
                measured.push((stats.clone(), 1.0, cpu.clone()));
            }
            match merged.get_mut(i as usize) {
                Some((s, c)) => {
                    *s += &stats;
                    c.proc_user_s += cpu.proc_user_s;
                    c.proc_sys_s += cpu.proc_sys_s;
                    c.host_busy_pct = (c.host_busy_pct + cpu.host_busy_pct) / 2.0;
                }
                None => merged.push((stats.clone(), cpu.clone())),
            }
            intervals.push(json!({
                "index": i, "phase": if ramp { "ramp" } else { "measure" },
                "start_s": i as f64, "seconds": 1.0, "stats": stats, "cpu": cpu,
            }));
        }
        let vm_list: Vec<u32> = (0..vms).filter(|v| *v as usize % 2 == h).collect();
        host_docs.push(json!({
            "host": name, "vms": vm_list, "threads": 2, "backend": "fixture: hand-built",
            "clock_offset_ms": 0.2 * h as f64, "intervals": intervals,
            "measured": measured.iter().map(|m| &m.0).sum::<Snapshot>(),
            "summary": Summary::compute(&measured), "lost": false, "error": null,
        }));
    }
    let measured: Vec<(Snapshot, f64, CpuSample)> = merged
        .iter()
        .skip(1)
        .map(|(s, c)| (s.clone(), 1.0, c.clone()))
        .collect();
    let total: Snapshot = measured.iter().map(|m| &m.0).sum();
    let intervals: Vec<Value> = merged
        .iter()
        .enumerate()
        .map(|(i, (s, c))| {
            json!({
                "index": i, "phase": if i == 0 { "ramp" } else { "measure" },
                "start_s": i as f64, "seconds": 1.0, "stats": s, "cpu": c,
            })
        })
        .collect();
    let mut sp = spec(label, vms, 4);
    sp["groups"][0]["access"]["bs"] = json!([[32768, 100]]);
    sp["ramp"] = json!(1.0);
    json!({
        "label": label, "spec": sp, "targets": [NFS],
        "backend": "fixture: hand-built", "threads": 4, "started_unix": 1763760000.0 + seed as f64,
        "prepared": [], "intervals": intervals,
        "workers": [{ "id": { "group": "vm", "vm": 0, "worker": 0 }, "stats": total.clone() }],
        "measured": total, "summary": Summary::compute(&measured), "interrupted": false,
        "error": null, "hosts": host_docs,
    })
}

/// A fleet run: two agents in a lab with a 1 Gb/s link at MTU 9000.
fn fleet_run() -> RunRecord {
    let points = vec![
        fleet_point("8 VMs", 8, 1200.0, 300),
        fleet_point("16 VMs", 16, 1500.0, 301),
    ];
    let v = json!({
        "schema": "storlab.run", "schema_version": 1,
        "command": ["storlab", "run", "--job", "fleet.toml", "--target", NFS, "--hosts",
                    "10.99.1.11:7070,10.99.1.12:7070", "--token-file", "token"],
        "started_unix": 1763760000.0,
        "environment": { "hostname": "lab-1", "kernel": "6.1.0-fixture", "os": "Debian GNU/Linux 12 (bookworm)",
            "cpu_model": "Fixture CPU @ 2.0GHz", "cores": 2, "memory_bytes": 8589934592u64, "storlab_version": "0.1.0",
            "network": { "lab": "/var/tmp/storlab-lab", "link": "1gbe", "link_rate_bps": 1000000000u64,
                         "mtu": 9000, "hosts": ["storlab1-h1", "storlab1-h2"] } },
        "jobs": [
            { "name": "fleet-32k", "description": "32K 75/25 random over two hosts", "profile": null, "points": points }
        ],
        "interrupted": false, "error": null, "complete": true
    });
    serde_json::from_value(v).expect("fleet fixture is a valid run")
}

/// The fixture as committed in tests/fixtures/ (the input of
/// `storlab report tests/fixtures/run-fc.json tests/fixtures/run-nfs.json`):
/// rewritten when blessing, checked equal to the builder otherwise.
#[test]
fn fixture_files_match_the_builder() {
    let runs = fixture_runs();
    for (name, r) in ["run-fc.json", "run-nfs.json"].iter().zip(&runs) {
        let path = fixtures().join(name);
        // Compact: pretty-printed histograms would make the files 4x larger.
        let text = serde_json::to_string(r).unwrap() + "\n";
        if blessing() {
            std::fs::create_dir_all(fixtures()).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let stored = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with STORLAB_BLESS=1)", path.display()));
        let back = RunRecord::from_json(&stored, &path.display().to_string()).unwrap();
        assert!(
            &back == r,
            "{} is not what the fixture builder makes",
            path.display()
        );
    }
}

/// tests/fixtures/run-fleet.json is the fleet builder's run.
#[test]
fn fleet_fixture_file_matches_the_builder() {
    let r = fleet_run();
    let path = fixtures().join("run-fleet.json");
    let text = serde_json::to_string(&r).unwrap() + "\n";
    if blessing() {
        std::fs::write(&path, &text).unwrap();
    }
    let stored = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with STORLAB_BLESS=1)", path.display()));
    let back = RunRecord::from_json(&stored, &path.display().to_string()).unwrap();
    assert!(
        back == r,
        "{} is not what the builder makes",
        path.display()
    );
}

fn fleet_comparison() -> Comparison {
    let sources = vec![Source {
        name: "run-fleet.json".into(),
        run: fleet_run(),
    }];
    Comparison::new(sources, None).unwrap()
}

#[test]
fn fleet_snapshots() {
    let c = fleet_comparison();
    snapshot(
        "report-fleet.html",
        &html::render(&c, &ReportOptions::default()),
    );
    snapshot(
        "report-fleet.md",
        &markdown::render(&c, &ReportOptions::default()),
    );
    snapshot("report-fleet.csv", &storlab::report::csv::comparison(&c));
}

/// Per-host figures and "% of link" come from the run, and only from it.
#[test]
fn per_host_and_link_figures() {
    let c = fleet_comparison();
    let run = &c.sources[0].run;
    let hosts = storlab::report::hosts::host_table(&c);
    // Two points, two hosts each.
    assert_eq!(hosts.rows.len(), 4);
    assert_eq!(hosts.rows[0][3], "10.99.1.11:7070");
    assert_eq!(hosts.rows[1][3], "10.99.1.12:7070");
    // The hosts' IOPS add up to the point's (the merge is a sum).
    let p = &run.jobs[0].points[1];
    let sum: f64 = p.hosts.iter().map(|h| h.summary.total.iops).sum();
    assert!((sum - p.summary.total.iops).abs() < 1e-6 * sum);
    // % of link = Gb/s / 1 Gb/s.
    let (avg, peak) = storlab::report::hosts::link_pct(&c, 1, 0).expect("a link rate");
    assert!((avg[0] - p.summary.total.gbit_s * 100.0).abs() < 1e-9);
    assert!((peak[0] - p.summary.peak_gbit_s * 100.0).abs() < 1e-9);
    assert!(avg[0] > 10.0 && avg[0] <= peak[0], "{avg:?} {peak:?}");
    let md = markdown::render(&c, &ReportOptions::default());
    assert!(
        md.contains("## Per host") && md.contains("1gbe (1.000 Gb/s)") && md.contains("| 9000 |")
    );
    let page = html::render(&c, &ReportOptions::default());
    assert!(page.contains("IOPS per interval per host"));
    // A run without a recorded network shows no link figures at all.
    let plain = comparison();
    assert!(storlab::report::hosts::link_pct(&plain, 0, 0).is_none());
    assert!(storlab::report::hosts::host_table(&plain).rows.is_empty());
    assert!(!markdown::render(&plain, &ReportOptions::default()).contains("## Per host"));
}

fn comparison() -> Comparison {
    let sources = fixture_runs()
        .into_iter()
        .zip(["run-fc.json", "run-nfs.json"])
        .map(|(run, name)| Source {
            name: name.to_string(),
            run,
        })
        .collect();
    Comparison::new(sources, Some(FC)).unwrap()
}

#[test]
fn html_snapshot() {
    snapshot(
        "report.html",
        &html::render(&comparison(), &ReportOptions::default()),
    );
}

#[test]
fn markdown_snapshot() {
    snapshot(
        "report.md",
        &markdown::render(&comparison(), &ReportOptions::default()),
    );
}

#[test]
fn csv_snapshot() {
    snapshot(
        "report.csv",
        &storlab::report::csv::comparison(&comparison()),
    );
}

#[test]
fn export_snapshots() {
    let runs = fixture_runs();
    snapshot("export-fc.csv", &csv::intervals(&runs[0]));
    // The JSON export is the run document itself: it must read back equal.
    let text = serde_json::to_string_pretty(&runs[0]).unwrap();
    assert!(RunRecord::from_json(&text, "export").unwrap() == runs[0]);
}

#[test]
fn relative_figures_and_repeats() {
    let c = comparison();
    assert_eq!(c.targets, [FC, NFS]);
    let t = c.table(Metric::Iops);
    let oltp = t.rows.iter().find(|r| r.label == "1 VM").unwrap();
    let (fc, nfs) = (
        oltp.cells[0].as_ref().unwrap(),
        oltp.cells[1].as_ref().unwrap(),
    );
    assert_eq!(fc.relative, Some(100.0));
    assert_eq!(fc.est.n, 3);
    assert!(fc.est.ci95.is_some());
    let rel = nfs.relative.unwrap();
    assert!((85.0..95.0).contains(&rel), "NFS relative IOPS {rel}");
    assert_eq!(nfs.within_noise, Some(false));
    let curves = c.curves();
    assert_eq!(curves.len(), 1);
    assert_eq!(curves[0].curves.len(), 2);
    let err = Comparison::new(c.sources.clone(), Some("iscsi:x")).unwrap_err();
    assert!(
        err.contains("--baseline") && err.contains(FC) && err.contains(NFS),
        "{err}"
    );
}

/// The fixture as one `storlab compare` run: a job record per target, the
/// NFS server's CPU recorded around every point (a different figure per
/// repeat), none for the local FC target.
fn compare_run() -> RunRecord {
    let mut runs = fixture_runs();
    let nfs = runs.pop().unwrap();
    let mut run = runs.pop().unwrap();
    let mut server_cpu = Vec::new();
    for (name, r) in [("fc", &run), ("nfs", &nfs)] {
        for job in &r.jobs {
            for (i, p) in job.points.iter().enumerate() {
                let servers = if name == "nfs" {
                    vec![ServerCpu {
                        name: "ganesha".into(),
                        cpu_s: 0.5 + i as f64 * 0.1,
                    }]
                } else {
                    Vec::new()
                };
                server_cpu.push(PointServerCpu {
                    target: name.into(),
                    job: job.name.clone(),
                    point: p.label.clone(),
                    servers,
                });
            }
        }
    }
    run.jobs.extend(nfs.jobs);
    run.compare = Some(CompareInfo {
        baseline: "fc".into(),
        targets: vec![("fc".into(), FC.into()), ("nfs".into(), NFS.into())],
        server_cpu,
        lab: None,
    });
    run
}

/// CPU per I/O is named by side, and the server's is the CPU recorded for
/// that very repeat over every I/O of the point.
#[test]
fn server_cpu_is_compared_by_side() {
    let run = compare_run();
    let c = Comparison::new(
        vec![Source {
            name: "cmp.json".into(),
            run: run.clone(),
        }],
        Some(FC),
    )
    .unwrap();
    assert!(c.has_server_cpu());
    let metrics = c.metrics();
    for m in [
        Metric::ClientCpuPerIo,
        Metric::ServerCpuPerIo,
        Metric::BothCpuPerIo,
    ] {
        assert!(metrics.contains(&m), "{m:?} missing from {metrics:?}");
    }
    let k = c.keys.iter().position(|(_, l)| l == "1 VM").unwrap();
    // The third OLTP repeat on NFS: 0.5 + 2 × 0.1 s over every I/O of it.
    let nfs_points = c.points(k, 1);
    assert_eq!(nfs_points.len(), 3);
    let ios: u64 = nfs_points[2]
        .intervals
        .iter()
        .map(|i| i.stats.total_ios())
        .sum();
    let server = c.values(Metric::ServerCpuPerIo, k, 1);
    assert!((server[2] - 0.7e6 / ios as f64).abs() < 1e-9, "{server:?}");
    let client = c.values(Metric::ClientCpuPerIo, k, 1);
    let both = c.values(Metric::BothCpuPerIo, k, 1);
    assert!((both[2] - client[2] - server[2]).abs() < 1e-9);
    // FC has no server process: no server figure, "both" is the client's.
    assert!(c.values(Metric::ServerCpuPerIo, k, 0).is_empty());
    assert_eq!(
        c.values(Metric::BothCpuPerIo, k, 0),
        c.values(Metric::ClientCpuPerIo, k, 0)
    );
    let md = markdown::render(&c, &ReportOptions::default());
    for title in [
        "## client CPU per I/O (µs)",
        "## server CPU per I/O (µs)",
        "## client + server CPU per I/O (µs)",
    ] {
        assert!(md.contains(title), "{title} missing");
    }
    assert!(!md.contains("## CPU per I/O"));
    // `storlab compare`'s tables: the same cells, every side its column.
    let tables = storlab::report::text::comparison_tables(&c);
    for col in ["client µs/IO", "server µs/IO", "client+server µs/IO"] {
        assert!(tables.contains(col), "{col} missing:\n{tables}");
    }
    let iops = c.table(Metric::Iops);
    let row = &iops.rows[k];
    let nfs = row.cells[1].as_ref().unwrap();
    let nfs_line = tables
        .lines()
        .skip_while(|l| !l.starts_with("oltp-8k · 1 VM"))
        .find(|l| l.starts_with(NFS))
        .unwrap();
    assert!(
        nfs_line.contains(&nfs.fmt(Metric::Iops)) && nfs_line.contains(&nfs.fmt_relative()),
        "{nfs_line}"
    );
    // Runs without server CPU show the client's alone.
    assert!(!comparison().has_server_cpu());
    assert!(!comparison().metrics().contains(&Metric::BothCpuPerIo));
}

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("storlab-report-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn store_round_trip() {
    let dir = TempDir::new("roundtrip");
    let db = dir.0.join("sub/results.db");
    let store = Store::open(&db).unwrap();
    let runs = fixture_runs();
    let ids: Vec<_> = runs.iter().map(|r| store.begin_run(r).unwrap()).collect();
    for (id, r) in ids.iter().zip(&runs) {
        assert!(
            &store.load_run(*id).unwrap() == r,
            "run {id} differs after the round trip"
        );
    }
    drop(store);
    // Reopening keeps everything; the listing names both targets.
    let store = Store::open(&db).unwrap();
    let list = store.list_runs().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1].targets, [NFS]);
    assert_eq!(list[0].points, 7);
    assert_eq!(list[0].jobs, ["vsphere-shared-4k", "oltp-8k"]);
    assert!(matches!(
        store.load_run(storlab::store::RunId(99)),
        Err(StoreError::NoRun { .. })
    ));
}

/// Drive the writer as `storlab run` would, then stop mid-point.
#[test]
fn run_written_as_measured_keeps_an_interrupted_point() {
    let dir = TempDir::new("observer");
    let db = dir.0.join("results.db");
    let store = Store::open(&db).unwrap();
    let full = &fixture_runs()[0];
    let mut rec = RunRecord {
        jobs: Vec::new(),
        complete: false,
        ..full.clone()
    };
    let mut w = RunWriter::begin(&store, &rec, vec![FC.to_string()]).unwrap();
    let job = &full.jobs[0];
    let empty_job = JobRecord {
        points: Vec::new(),
        ..job.clone()
    };
    w.job(&empty_job).unwrap();
    rec.jobs.push(empty_job);
    // First point: measured completely.
    let p: &PointResult = &job.points[0];
    w.point_started(&p.spec, p.intervals.len() as u32);
    for iv in &p.intervals {
        w.interval(&p.spec, iv, p.intervals.len() as u32);
    }
    w.point_done(p).unwrap();
    rec.jobs[0].points.push(p.clone());
    // Second point: storlab dies after three intervals (no point_done, no finish).
    let q = &job.points[1];
    w.point_started(&q.spec, 6);
    let saved: Vec<IntervalRecord> = q.intervals[..3].to_vec();
    for iv in &saved {
        w.interval(&q.spec, iv, 6);
    }
    let id = w.run_id();
    drop(w);
    let back = store.load_run(id).unwrap();
    assert!(!back.complete);
    assert!(back.jobs[0].points[0] == *p, "the finished point differs");
    let partial = &back.jobs[0].points[1];
    assert!(partial.interrupted);
    assert!(partial.intervals == saved, "the saved intervals differ");
    assert_eq!(partial.targets, [FC]);
    assert_eq!(partial.measured.total_ios(), saved[2].stats.total_ios());
    assert!(partial.summary.total.iops > 0.0);
    let list = store.list_runs().unwrap();
    assert_eq!(list[0].status.as_str(), "incomplete");
}

/// Opening `path` fails with an error naming it, and leaves its bytes alone.
fn refused(path: &Path, needles: &[&str]) -> StoreError {
    let before = std::fs::read(path).unwrap();
    let err = match Store::open(path) {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    for n in needles {
        assert!(msg.contains(n), "{msg:?} lacks {n:?}");
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{} was changed",
        path.display()
    );
    err
}

#[test]
fn refuses_foreign_corrupt_and_newer_databases() {
    let dir = TempDir::new("refuse");
    let text = dir.0.join("notes.txt");
    std::fs::write(&text, "not a database at all\n".repeat(100)).unwrap();
    assert!(matches!(
        refused(&text, &["not a storlab results database", "SQLite header"]),
        StoreError::NotSqlite { .. }
    ));

    // SQLite's header followed by garbage.
    let corrupt = dir.0.join("corrupt.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend((0..8192u32).map(|i| (i * 7919 % 251) as u8));
    std::fs::write(&corrupt, &bytes).unwrap();
    assert!(matches!(
        refused(&corrupt, &[]),
        StoreError::NotSqlite { .. }
    ));

    // Someone else's SQLite database.
    let foreign = dir.0.join("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch(
            "CREATE TABLE photos (id INTEGER, name TEXT); INSERT INTO photos VALUES (1, 'cat');",
        )
        .unwrap();
    }
    assert!(matches!(
        refused(&foreign, &["photos"]),
        StoreError::Foreign { .. }
    ));

    // A storlab database from the future.
    let newer = dir.0.join("newer.db");
    drop(Store::open(&newer).unwrap());
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute("UPDATE schema_version SET version = 42", [])
            .unwrap();
    }
    let err = refused(
        &newer,
        &[
            "42",
            &storlab::store::schema::VERSION.to_string(),
            "newer storlab",
        ],
    );
    assert!(matches!(err, StoreError::Newer { found: 42, .. }));
}

#[test]
fn older_database_is_migrated() {
    let dir = TempDir::new("migrate");
    let db = dir.0.join("v0.db");
    {
        // A version-0 database: only the version table.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE schema_version (app TEXT NOT NULL, version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES ('storlab', 0);",
        )
        .unwrap();
    }
    let s = Store::open(&db).unwrap();
    assert!(s.list_runs().unwrap().is_empty());
    drop(s);
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: u32 = c
        .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, storlab::store::schema::VERSION);
}

/// Render the fixture report in headless Chromium: it must draw (a screenshot
/// well above a blank page's size) without any console error, and its DOM
/// holds the charts and tables (nothing fetched from the network).
#[test]
fn html_report_renders_in_chromium() {
    support::chromium::binary();
    let dir = TempDir::new("chromium");
    for (name, c) in [
        ("report.html", comparison()),
        ("report-fleet.html", fleet_comparison()),
    ] {
        let page = dir.0.join(name);
        std::fs::write(&page, html::render(&c, &ReportOptions::default())).unwrap();
        let dom = support::chromium::render(&page, &dir.0);
        assert!(
            dom.matches("<svg").count() >= 8,
            "charts missing from the DOM"
        );
        assert!(dom.contains("baseline"));
    }
}

#[test]
fn report_is_self_contained() {
    let page = html::render(&comparison(), &ReportOptions::default());
    for bad in ["<script", "http://", "https://", "@import", "url("] {
        let allowed = bad == "http://"
            && page.matches(bad).count() == page.matches("http://www.w3.org/2000/svg").count();
        assert!(allowed || !page.contains(bad), "report contains {bad:?}");
    }
    assert!(page.contains("<title>"));
}

/// Issue 29: every chart takes its share of the page's width (an SVG with a
/// viewBox and no fixed size, in a figure) and its caption names where it
/// was measured and what bound its points.
#[test]
fn charts_fit_the_page_and_their_captions_name_the_bound() {
    use storlab::model::{Bound, Limit};
    let mut runs = fixture_runs();
    let bound = |by| Bound {
        by,
        detail: "test".into(),
        machine: false,
        shares: Vec::new(),
    };
    for p in &mut runs[1].jobs[0].points {
        p.bound = Some(bound(Limit::Link));
    }
    runs[1].jobs[0].points[0].bound = Some(Bound {
        machine: true,
        ..bound(Limit::Medium)
    });
    let sources = runs
        .into_iter()
        .zip(["run-fc.json", "run-nfs.json"])
        .map(|(run, name)| Source {
            name: name.to_string(),
            run,
        })
        .collect();
    let c = Comparison::new(sources, Some(FC)).unwrap();
    let page = html::render(&c, &ReportOptions::default());
    let charts = page.matches("<svg ").count();
    assert!(charts > 5, "{charts} charts");
    assert_eq!(page.matches("<figure class=\"fig\"><svg ").count(), charts);
    assert_eq!(page.matches("</svg><figcaption>").count(), charts);
    for svg in page.split("<svg ").skip(1) {
        let open = &svg[..svg.find('>').unwrap()];
        assert!(
            open.contains("viewBox") && !open.contains("width=") && !open.contains("height="),
            "a chart of fixed size: <svg {open}>"
        );
    }
    // The relative charts cover every row: NFS's bounds counted, the
    // saturated machine flagged.
    let links = c.keys.iter().filter(|k| k.0 == "vsphere-shared-4k").count() - 1;
    let want = format!("Bound: {NFS} medium, link ×{links} (machine saturated).");
    assert!(page.contains(&want), "no caption says {want:?}");
}
