//! vdbench-style curves (`--curve`) and open-loop pacing (`--rate_mode open`):
//! points in order with their target rates, and latency measured from each
//! I/O's scheduled time so queueing behind a slow target is not hidden.

use crate::common::*;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn curve_runs_the_max_then_each_percentage_open_loop() {
    let dir = TempDir::new("curve");
    let json = dir.join("curve.json");
    let o = storlab(&[
        "run",
        "--target",
        "null:",
        "--curve",
        "10,50,100",
        "--runtime",
        "1",
        "--iodepth",
        "1",
        "--threads",
        "1",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let doc = read_json(&json);
    let pts = points(&doc);
    for p in &pts {
        check_point(p, Some(4096));
    }
    let max = f(&pts[0]["summary"]["total"]["iops"]);
    assert!(max > 1000.0, "null target max {max} IOPS");
    let labels: Vec<&str> = pts.iter().map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "curve max".to_string(),
            "curve 10%".to_string(),
            "curve 50%".to_string(),
            "curve 100%".to_string(),
        ]
    );
    // The max run is unthrottled; the others are open loop at their share.
    let access = |p: &serde_json::Value| p["spec"]["groups"][0]["access"].clone();
    assert!(access(&pts[0])["rate"].is_null());
    assert_eq!(access(&pts[0])["rate_mode"], "closed");
    for (p, pct) in pts[1..].iter().zip([10.0, 50.0, 100.0]) {
        let a = access(p);
        assert_eq!(a["rate_mode"], "open", "{}", p["label"]);
        let target = f(&a["rate"]["iops"]);
        assert!(
            (target - max * pct / 100.0).abs() <= 1.0,
            "{}: target {target} IOPS for {pct}% of {max}",
            p["label"]
        );
        let got = f(&p["summary"]["total"]["iops"]);
        // Open loop never runs ahead of its schedule; at low fractions the
        // null target keeps up with it. The machine is shared, so the bounds
        // are loose where the target rate is millions of IOPS.
        let low = match pct as u32 {
            10 => 0.9,
            50 => 0.6,
            _ => 0.5,
        };
        assert!(
            got <= target * 1.02 && got >= target * low,
            "{}: {got} IOPS for a target of {target}",
            p["label"]
        );
    }
    // The 100% point comes close to the measured maximum.
    let full = f(&pts[3]["summary"]["total"]["iops"]);
    assert!(
        full >= 0.5 * max && full <= 1.02 * max,
        "{full} IOPS at 100% of {max}"
    );
}

#[test]
fn curve_and_rate_mode_errors_name_the_option() {
    for bad in ["0,50", "10,10", "ten", "101"] {
        let o = storlab(&["run", "--target", "null:", "--curve", bad, "--no-db"]);
        assert_eq!(o.status.code(), Some(2), "--curve {bad}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("invalid --curve = {bad} (allowed: percentages")),
            "{e}"
        );
    }
    let o = storlab(&["run", "--target", "null:", "--rate_mode", "sideways"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("invalid --rate_mode = sideways (allowed: closed, open)"),
        "{e}"
    );
    let o = storlab(&["run", "--target", "null:", "--rate_mode", "open"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid rate_mode = open"),
        "{}",
        stderr(&o)
    );
    let dir = TempDir::new("curve-job");
    let job = dir.join("bad.toml");
    std::fs::write(&job, "curve = [10, 150]\n").unwrap();
    let o = storlab(&["run", "--target", "null:", "-j", job.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("invalid curve = [10, 150] (allowed: percentages"),
        "{e}"
    );
}

/// nbdkit's memory plugin behind its delay filter (every read takes `rdelay`),
/// on a Unix socket in a temp dir; killed by its PID on drop.
struct SlowNbd {
    child: Child,
    dir: TempDir,
}

impl SlowNbd {
    fn start(rdelay: &str) -> SlowNbd {
        let dir = TempDir::new("slow-nbd");
        let sock = dir.join("nbd.sock");
        let child = Command::new("nbdkit")
            .args(["-f", "-e", "store", "--unix"])
            .arg(&sock)
            .args(["--filter=delay", "memory", "64M"])
            .arg(format!("rdelay={rdelay}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("nbdkit.log")).unwrap())
            .spawn()
            .expect("nbdkit (Debian package nbdkit) runs");
        let mut s = SlowNbd { child, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            if let Some(st) = s.child.try_wait().unwrap() {
                let log = std::fs::read_to_string(s.dir.join("nbdkit.log")).unwrap_or_default();
                panic!("nbdkit exited ({st}) before it was ready: {log}");
            }
            assert!(Instant::now() < deadline, "nbdkit not ready after 20 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("nbd.sock")
    }

    fn target(&self) -> String {
        format!("nbd+unix:///store?socket={}", self.socket().display())
    }
}

impl Drop for SlowNbd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Coordinated omission: a target that serves one read per 5 ms asked for 400
/// reads a second at queue depth 1. Closed loop (fio's rate) waits for the
/// target and reports ~5 ms; open loop counts from when each read was due and
/// reports the queue that builds up behind the schedule.
#[test]
fn open_loop_latency_counts_the_queueing_closed_loop_hides() {
    let nbd = SlowNbd::start("5ms");
    let dir = TempDir::new("co");
    let run = |mode: &str| {
        let json = dir.join(&format!("{mode}.json"));
        let o = storlab(&[
            "run",
            "--target",
            &nbd.target(),
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "16m",
            "--iodepth",
            "1",
            "--rate_iops",
            "400",
            "--rate_mode",
            mode,
            "--runtime",
            "2",
            "--json",
            json.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let p = points(&read_json(&json))[0].clone();
        check_point(&p, Some(4096));
        p
    };
    let closed = run("closed");
    let open = run("open");
    assert_eq!(closed["spec"]["groups"][0]["access"]["rate_mode"], "closed");
    assert_eq!(open["spec"]["groups"][0]["access"]["rate_mode"], "open");
    let t = |p: &serde_json::Value, k: &str| f(&p["summary"]["total"][k]);
    // Both are held to what the target can do (~200 reads/s), well under 400.
    for p in [&closed, &open] {
        let iops = t(p, "iops");
        assert!((10.0..=300.0).contains(&iops), "{iops} IOPS");
    }
    // Closed loop: each read's own service time, about the 5 ms delay.
    let closed_p50 = t(&closed, "p50_us");
    assert!(
        (4_000.0..50_000.0).contains(&closed_p50),
        "closed p50 {closed_p50} us"
    );
    // Open loop: after 2 s at twice the target's rate, reads due late in the
    // run waited about a second behind the schedule.
    let open_p50 = t(&open, "p50_us");
    let open_max = t(&open, "lat_max_us");
    assert!(
        open_p50 > 10.0 * closed_p50,
        "open p50 {open_p50} us vs closed {closed_p50} us"
    );
    assert!(open_max > 500_000.0, "open max {open_max} us");
    assert!(
        t(&open, "lat_mean_us") > 5.0 * t(&closed, "lat_mean_us"),
        "open mean vs closed mean"
    );
}
