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
