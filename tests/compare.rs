//! The protocol comparison on a real lab: the unified storage (a write through
//! one protocol is read back through every other, by storlab's own backends),
//! `storlab compare` over all five targets with the backing store restored,
//! and the two suites of WORKLOADS.md end to end. Needs root and ./setup.sh's
//! packages; the lab is always torn down by a guard.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;
use storlab::backends;
use storlab::io::{Backend, BufferPool, Io, Lane, OpenOptions};
use storlab::plan::Disk;
use storlab::target::Target;
use storlab::workload::{Content, Dir};
use support::lab::Lab;
use support::text;

static SERIAL: Mutex<()> = Mutex::new(());

/// This file's results database, under cargo's target temp dir.
fn test_db() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-tests.db")
}

fn bin() -> Command {
    let mut c = support::storlab();
    c.env("STORLAB_DB", test_db());
    c
}

/// A lab of 1 GiB (what the quick vSphere disks fill) on 127.0.0.1 for this file's tests, with their results database.
fn lab_up(tag: &str) -> Lab {
    Lab::builder(&format!("cmptest-{tag}"), "1g")
        .loopback()
        .env("STORLAB_DB", test_db())
        .up()
}

fn open(url: &str, write: bool, depth: u32) -> Box<dyn Backend> {
    let target = Target::parse(url).unwrap();
    let disk = Disk {
        target: target.to_string(),
        path: None,
        offset: 0,
        size: 0,
    };
    let opts = OpenOptions {
        direct: false,
        sync: None,
        write,
        depth,
        size_needed: 0,
        ..OpenOptions::default()
    };
    backends::open(&target, &[&disk], &opts).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// `url`'s backend with `N` buffers of `LEN` bytes.
fn lane(url: &str, write: bool) -> Lane {
    Lane::new(
        open(url, write, N),
        BufferPool::new(N as usize, LEN as usize),
    )
    .unwrap()
}

/// `N` requests of `LEN` bytes at `at(i)`, all in flight at once: writes of
/// `data[i]`, or reads checked against it.
fn io_all(l: &mut Lane, dir: Dir, data: &[Vec<u8>]) {
    let ios: Vec<Io> = (0..N)
        .map(|i| Io {
            dir,
            ..Io::read(at(i), LEN)
        })
        .collect();
    let fill = |i: usize, buf: &mut [u8]| {
        if dir == Dir::Write {
            buf.copy_from_slice(&data[i])
        }
    };
    let done = |i: usize, r: Result<u32, i32>, buf: &[u8]| {
        assert_eq!(r, Ok(LEN), "request {i} failed");
        assert!(dir == Dir::Write || buf == data[i], "block {i} differs");
        Ok(())
    };
    l.run(&ios, N as usize, Duration::from_secs(20), fill, done)
        .unwrap_or_else(|e| panic!("{e}"));
}

const N: u32 = 16;
const LEN: u32 = 64 * 1024;

/// Where request `i` goes: spread, 64 KiB aligned.
fn at(i: u32) -> u64 {
    (7 << 20) + i as u64 * 3 * LEN as u64
}

#[test]
fn a_write_through_nbd_is_read_back_through_iscsi_nfs3_and_nfs4() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab_up("unified");
    let written: Vec<Vec<u8>> = (0..N)
        .map(|i| {
            let mut b = vec![0; LEN as usize];
            storlab::workload::content::fill(&mut b, Content::Random, 99, i as u64);
            b
        })
        .collect();
    // Dropped at once: flushed and closed.
    io_all(&mut lane(&lab.url("nbd"), true), Dir::Write, &written);
    for name in ["iscsi", "nfs3", "nfs4"] {
        eprintln!("reading back through {name}");
        io_all(&mut lane(&lab.url(name), false), Dir::Read, &written);
    }
    let disk = std::fs::read(lab.backing()).unwrap();
    for i in 0..N {
        let o = at(i) as usize;
        assert!(
            disk[o..o + LEN as usize] == written[i as usize][..],
            "backing file: block {i} differs"
        );
    }
}

#[test]
fn compare_runs_every_target_relative_to_the_baseline_and_restores_the_store() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab_up("compare");
    let json = lab.dir.join("cmp.json");
    let o = bin()
        .args([
            "compare",
            "--targets",
            "local,nfs3,nfs4,iscsi,nbd",
            "--workload",
            "vsphere-shared-4k",
            "--ramp_time",
            "0",
            "--runtime",
            "1",
            "-q",
            "--json",
        ])
        .arg(&json)
        .arg("--state-dir")
        .arg(&lab.dir)
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    // One table per load point, every target a row, the baseline at 100.
    for vms in ["32 VMs", "64 VMs", "96 VMs", "128 VMs"] {
        assert!(
            out.contains(&format!("vsphere-shared-4k · {vms}")),
            "no table for {vms}:\n{out}"
        );
    }
    let local_rows: Vec<&str> = out.lines().filter(|l| l.starts_with("local ")).collect();
    assert_eq!(local_rows.len(), 4, "{out}");
    assert!(
        local_rows
            .iter()
            .all(|l| l.split_whitespace().nth(2) == Some("100")),
        "{out}"
    );
    for name in ["nfs3", "nfs4", "iscsi", "nbd"] {
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with(&format!("{name} ")))
                .count(),
            4,
            "{out}"
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["compare"]["baseline"], "local");
    // A loopback lab: recorded as such, with no link rate.
    let net = &doc["environment"]["network"];
    assert_eq!(net["net"], "loopback", "{net}");
    assert!(net["link_rate_bps"].is_null(), "{net}");
    assert_eq!(
        doc["jobs"].as_array().unwrap().len(),
        5,
        "one job record per target"
    );
    // Every protocol's server did measurable work; the local target has none.
    for c in doc["compare"]["server_cpu"].as_array().unwrap() {
        let servers = c["servers"].as_array().unwrap();
        if c["target"] == "local" {
            assert!(servers.is_empty());
        } else {
            assert!(servers[0]["cpu_s"].as_f64().unwrap() > 0.0, "{c}");
        }
    }
    // The workload wrote 25%; the store is back to its initial content.
    let disk = std::fs::read(lab.backing()).unwrap();
    let mut chunk = vec![0u8; 1 << 20];
    for i in [0u64, 1, 100, 511] {
        storlab::workload::content::fill(
            &mut chunk,
            Content::Random,
            storlab::lab::backing::SEED,
            i,
        );
        let o = (i << 20) as usize;
        assert!(
            disk[o..o + chunk.len()] == chunk[..],
            "chunk {i} not restored"
        );
    }
}

#[test]
fn both_suites_run_end_to_end_on_the_lab() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab_up("suites");
    for (suite, targets, jobs) in [
        ("vsphere-protocols", "local,nfs3,nfs4,iscsi,nbd", 3),
        ("nfs-vs-iscsi", "local,nfs3,iscsi", 3),
    ] {
        let json = lab.dir.join(format!("{suite}.json"));
        let o = bin()
            .args([
                "compare",
                "--targets",
                targets,
                "--workload",
                suite,
                "--ramp_time",
                "0",
                "--runtime",
                "1",
                "-q",
            ])
            .arg("--json")
            .arg(&json)
            .arg("--state-dir")
            .arg(&lab.dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{suite}: {}", text(&o));
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let n_targets = targets.split(',').count();
        let records = doc["jobs"].as_array().unwrap();
        assert_eq!(
            records.len(),
            n_targets * jobs,
            "{suite}: a job record per workload and target"
        );
        for r in records {
            let points = r["points"].as_array().unwrap();
            assert!(!points.is_empty());
            for p in points {
                assert!(p["error"].is_null(), "{suite}: {}", p["error"]);
                assert!(
                    p["summary"]["total"]["ios"].as_u64().unwrap() > 0,
                    "{suite}: {} did no I/O",
                    p["label"]
                );
            }
        }
    }
}

#[test]
fn a_server_killed_mid_run_ends_the_run_naming_the_target_and_keeps_what_was_measured() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (target, server) in [("nbd", "nbdkit"), ("iscsi", "tgtd"), ("nfs3", "ganesha")] {
        let lab = lab_up(&format!("kill-{target}"));
        let url = lab.url(target);
        let pid = lab.pid(server);
        let json = lab.dir.join("killed.json");
        let child = bin()
            .args([
                "run",
                "--target",
                &url,
                "--rw",
                "randread",
                "--iodepth",
                "8",
                "--runtime",
                "30",
                "-q",
                "--json",
            ])
            .arg(&json)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        // SAFETY: kill(2) on the lab's own server, by the PID the lab recorded.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let start = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "{target}: the run did not end soon after {server} died"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{target}: {err}");
        let host = url.split('/').nth(2).unwrap();
        assert!(
            err.contains(host),
            "{target}: the error must name the target: {err}"
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(
            doc["error"].as_str().is_some_and(|e| e.contains(host)),
            "{target}: {}",
            doc["error"]
        );
        let p = &doc["jobs"][0]["points"][0];
        assert!(
            p["intervals"].as_array().unwrap().len() >= 2,
            "{target}: completed intervals kept"
        );
        assert!(
            p["summary"]["read"]["ios"].as_u64().unwrap() > 0,
            "{target}: reads before the failure kept"
        );
    }
}

/// The text of the element with id `id` in a dumped DOM.
fn by_id<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let rest = &dom[at..];
    let start = rest.find('>')? + 1;
    let end = rest[start..].find('<')?;
    Some(&rest[start..start + end])
}

/// What the live page showed: the contender, the interval and its IOPS.
#[derive(Debug)]
struct Shown {
    target: String,
    index: u32,
    iops: u64,
}

fn shown(dom: &str) -> Shown {
    let target = by_id(dom, "target").expect("the page names the target");
    let index = by_id(dom, "latest-index").and_then(|s| s.parse().ok());
    let iops = dom
        .split("class=\"iops\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .and_then(|s| s.parse().ok());
    match (index, iops) {
        (Some(index), Some(iops)) => Shown {
            target: target.to_string(),
            index,
            iops,
        },
        _ => panic!("no interval on the live page:\n{dom}"),
    }
}

/// Issue 29: `--web` serves a page that headless Chromium renders during a
/// lab compare; what it shows moves with the run (another interval, then
/// the next target) and is what the run measured: the IOPS of the interval
/// it names, as the run's JSON records it.
#[test]
fn the_live_page_follows_a_lab_compare_in_chromium() {
    use std::io::{BufRead, BufReader};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    support::chromium::binary();
    let lab = lab_up("live");
    let json = lab.dir.join("live.json");
    let mut child = bin()
        .args([
            "compare",
            "--no-db",
            "--targets",
            "local,nbd",
            "--rw",
            "randread",
        ])
        .args(["--bs", "4k", "--iodepth", "4", "--rate_iops", "1500"])
        .args(["--ramp_time", "0", "--runtime", "6", "--web", "127.0.0.1:0"])
        .arg("--json")
        .arg(&json)
        .arg("--state-dir")
        .arg(&lab.dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The page's address is the first thing told on stderr.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut url = None;
    while url.is_none() && err.read_line(&mut line).unwrap() > 0 {
        url = line
            .split("live page at ")
            .nth(1)
            .map(|u| u.trim().to_string());
        line.clear();
    }
    let url = url.expect("storlab names its live page");
    let rest = std::thread::spawn(move || {
        let mut all = String::new();
        std::io::Read::read_to_string(&mut err, &mut all).unwrap();
        all
    });
    std::thread::sleep(Duration::from_millis(3500));
    let first = shown(&support::chromium::dump_url(&url, &lab.dir, 2500));
    std::thread::sleep(Duration::from_millis(5000));
    let dom = support::chromium::dump_url(&url, &lab.dir, 2500);
    let second = shown(&dom);
    let status = child.wait().unwrap();
    let stderr = rest.join().unwrap();
    assert!(status.success(), "storlab compare: {stderr}");
    assert!(
        second.target != first.target || second.index > first.index,
        "the page did not move: {first:?} then {second:?}"
    );
    // Once a point has ended, the page says what bound it.
    if second.target != first.target {
        let bound = by_id(&dom, "bound").unwrap_or("-");
        assert!(
            bound.contains(':'),
            "no bound on the page: {bound:?}\n{dom}"
        );
    }
    // Each figure shown is the run's own, for the interval it names.
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("run JSON");
    for s in [&first, &second] {
        let k = ["local", "nbd"]
            .iter()
            .position(|t| *t == s.target)
            .unwrap_or_else(|| panic!("the page names {:?}, not a contender", s.target));
        let iv = doc["jobs"][k]["points"][0]["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["index"] == s.index)
            .unwrap_or_else(|| panic!("no interval {} in the run of {}", s.index, s.target));
        let ios = ["read", "write"]
            .iter()
            .map(|d| iv["stats"][d]["ios"].as_u64().unwrap_or(0))
            .sum::<u64>() as f64;
        let iops = (ios / iv["seconds"].as_f64().unwrap()).round() as u64;
        assert_eq!(s.iops, iops, "{s:?} against the run's {iv}");
    }
}
