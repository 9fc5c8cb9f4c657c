//! The steady-state gate on a real target whose rate drops mid-run (issue
//! 15, part 5): a store behind storlab's FUSE media server with a fixed
//! service time settles within the first seconds of a long ramp, so the gate
//! ends the ramp early; then the media server is paused (SIGSTOP) for a
//! second and a half inside the measured period, and the result flags the
//! intervals that dropped out of the band. Needs root (mount, /dev/fuse).

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::media::Dirs;
use support::storlab;

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the media server this test started and still holds.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

#[test]
fn the_gate_ends_the_ramp_early_and_flags_a_drop_in_the_measured_period() {
    let d = Dirs::new("steady");
    let server = d.start("fixed:1000");
    let json = d.0.join("run.json");
    let mut child = storlab()
        .args(["run", "--no-db", "--target"])
        .arg(format!("file:{}", d.mnt().join("disk.img").display()))
        .args([
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--iodepth",
            "1",
            "--size",
            "16m",
        ])
        .args(["--interval", "0.5", "--ramp_time", "20", "--runtime", "5"])
        .args(["--steadystate", "iops:30%", "--steadystate_duration", "1"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Wait for the gate's note that the ramp ended, then pause the medium.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while !seen.contains("ramp ended") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("the run ended without settling:\n{seen}");
        }
        seen.push_str(&line);
    }
    let settled = started.elapsed();
    assert!(
        settled < Duration::from_secs(15),
        "settled only after {settled:?}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    signal(server.pid(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1500));
    signal(server.pid(), libc::SIGCONT);
    // Drain stderr so the run never blocks on a full pipe.
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let status = child.wait().unwrap();
    let rest = rest.join().unwrap();
    assert!(status.success(), "{seen}{rest}");

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let point = &doc["jobs"][0]["points"][0];
    let steady = &point["steady"];
    let at = steady["settled_at_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("never settled: {steady}"));
    assert!(at < 20.0, "the ramp was not ended early: {steady}");
    let flags = steady["flags"].as_array().expect("flags");
    assert!(
        !flags.is_empty(),
        "a 1.5 s pause in the measured period went unflagged: {steady}"
    );
    // The measured period is the runtime after the settled ramp, not the
    // ramp the user allowed.
    let measured: Vec<_> = point["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["phase"] == "measure")
        .collect();
    assert_eq!(measured.len(), 10, "5 s of 0.5 s intervals: {steady}");
    server.stop().unwrap();
}
