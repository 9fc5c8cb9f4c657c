use crate::common::*;
use std::time::{Duration, Instant};

#[test]
fn sigint_stops_cleanly_and_saves_everything_measured() {
    let dir = TempDir::new("sigint");
    let json = dir.join("out.json");
    let mut child = bin()
        .args([
            "run",
            "--target",
            "null:",
            "--iodepth",
            "8",
            "--runtime",
            "60",
            "--json",
            json.to_str().unwrap(),
            "-q",
        ])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: plain kill(2) on our own child's PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "storlab did not stop within 10 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let doc = read_json(&json);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["complete"], true);
    let p = &points(&doc)[0];
    assert_eq!(p["interrupted"], true);
    let n = p["intervals"].as_array().unwrap().len();
    assert!(
        (2..=4).contains(&n),
        "about 2.5 s of intervals expected, got {n}"
    );
    check_point(p, Some(4096));
    assert!(u(&p["summary"]["total"]["ios"]) > 0);
}

/// A results database that fails mid-run stops the run within an interval
/// or two, names the database, and loses nothing: the point measured so far
/// is in the JSON with the failure as its error (the Observer contract,
/// src/runner/mod.rs).
#[test]
fn a_results_database_failing_mid_run_stops_it_and_the_json_keeps_the_point() {
    let dir = TempDir::new("dbfail");
    let json = dir.join("out.json");
    let db = dir.join("results.db");
    let mut child = bin()
        .args([
            "run",
            "--target",
            "null:",
            "--iodepth",
            "8",
            "--runtime",
            "60",
        ])
        .args([
            "--db",
            db.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ])
        .arg("-q")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // Another process takes the table the intervals go to away.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    c.execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE intervals;")
        .unwrap();
    drop(c);
    let dropped = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            dropped.elapsed() < Duration::from_secs(10),
            "storlab went on for 10 s after its database failed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_ne!(status.code(), Some(0), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("results database") && err.contains("results.db"),
        "the error names the database: {err}"
    );
    let doc = read_json(&json);
    let p = &points(&doc)[0];
    let e = p["error"].as_str().unwrap_or_default();
    assert!(e.contains("results database"), "the point's error: {e}");
    let n = p["intervals"].as_array().unwrap().len();
    assert!(
        (2..=6).contains(&n),
        "about 2.5 s of intervals expected, got {n}"
    );
    assert!(u(&p["summary"]["total"]["ios"]) > 0);
}
