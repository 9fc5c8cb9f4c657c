//! Exit codes and error lines (docs/guide/output.md, "Exit codes"): the storage failing is 1
//! even before the start, bad input is 2, a run's error is told once, and a run
//! both interrupted and failed says both and exits 130. The storage here is
//! real: a small tmpfs (needs root, as the suite does) and nbdkit (Debian's
//! package) on loopback, started and stopped by PID in guards.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A tmpfs of `size` mounted on a fresh directory; unmounted (and the
/// directory removed) when dropped.
struct Tmpfs {
    dir: TempDir,
}

impl Tmpfs {
    fn mount(tag: &str, size: &str) -> Tmpfs {
        let dir = TempDir::new(tag);
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            o.status.success(),
            "mount -t tmpfs on {} (these tests need root): {}",
            dir.path().display(),
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// nbdkit serving a 64 MiB RAM export on loopback (plus `extra` arguments:
/// filters and their parameters), killed by PID when dropped.
struct Nbdkit {
    child: Child,
    url: String,
}

impl Nbdkit {
    fn serve(filters: &[&str], params: &[&str]) -> Nbdkit {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("nbdkit")
            .args(["-f", "--exit-with-parent", "-i", "127.0.0.1", "-e", "x"])
            .args(["-p", &port.to_string()])
            .args(filters.iter().map(|f| format!("--filter={f}")))
            .args(["memory", "64M"])
            .args(params)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nbdkit (Debian package nbdkit)");
        let nbd = Nbdkit {
            child,
            url: format!("nbd://127.0.0.1:{port}/x"),
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "nbdkit did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        nbd
    }
    fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's PID.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn both(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

#[test]
fn a_prepare_that_runs_out_of_space_exits_1_and_a_refused_one_2() {
    let fs = Tmpfs::mount("nospc-prep", "1m");
    let out = TempDir::new("nospc-prep-out");
    let json = out.join("run.json");
    let file: PathBuf = fs.path().join("data.dat");
    let target = format!("file:{}", file.display());
    let o = storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "write",
        "--size",
        "4m",
        "--runtime",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--no-db",
        "-q",
    ]);
    let e = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the storage failed, not the input: {e}"
    );
    assert!(e.contains("No space left on device"), "{e}");
    assert!(
        e.contains(&file.display().to_string()),
        "names the file: {e}"
    );
    assert_eq!(
        both(&o).matches("No space left").count(),
        1,
        "told once: {e}"
    );
    let doc = read_json(&json);
    let saved = doc["error"].as_str().unwrap_or_default();
    assert!(saved.contains("No space left on device"), "{doc}");

    // The same step refused for what the user asked (writing into a file
    // storlab did not create) is bad input.
    let foreign = out.join("theirs.dat");
    std::fs::write(&foreign, vec![7u8; 1 << 20]).unwrap();
    let target = format!("file:{}", foreign.display());
    let o = storlab(&[
        "run",
        "--target",
        &target,
        "--rw",
        "write",
        "--size",
        "1m",
        "--runtime",
        "1",
        "--no-db",
        "-q",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("refusing") && e.contains(&foreign.display().to_string()),
        "{e}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), vec![7u8; 1 << 20]);
}

#[test]
fn a_failed_runs_error_is_printed_once_by_run_and_by_compare() {
    // Every read fails with EIO.
    let nbd = Nbdkit::serve(&["error"], &["error=EIO", "error-rate=100%"]);
    let dir = TempDir::new("failed-once");
    let json = dir.join("run.json");
    let o = storlab(&[
        "run",
        "--target",
        &nbd.url,
        "--rw",
        "randread",
        "--runtime",
        "10",
        "--json",
        json.to_str().unwrap(),
        "--no-db",
        "-q",
    ]);
    let all = both(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    // The one line names the load point, the target and the offset.
    error_line_says(
        &o,
        &[
            "load point cli",
            nbd.url.as_str(),
            "at offset",
            "Input/output error",
        ],
        "Input/output error",
    );
    assert!(!stdout(&o).contains("ended by an error"), "{all}");
    let doc = read_json(&json);
    assert!(
        doc["error"].as_str().is_some_and(|s| s.contains(&nbd.url)),
        "{doc}"
    );

    let o = storlab(&[
        "compare",
        "--targets",
        &format!("e={}", nbd.url),
        "--rw",
        "randread",
        "--runtime",
        "10",
        "--no-db",
        "-q",
    ]);
    let all = both(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains(&nbd.url) && all.contains("at offset"), "{all}");
    assert_eq!(
        all.matches("Input/output error").count(),
        1,
        "told once: {all}"
    );
}

#[test]
fn a_run_interrupted_and_failed_says_both_and_exits_130() {
    let nbd = Nbdkit::serve(&[], &[]);
    let dir = TempDir::new("interrupted-failed");
    let json = dir.join("run.json");
    let mut child = bin()
        .args([
            "run",
            "--target",
            &nbd.url,
            "--rw",
            "randread",
            "--runtime",
            "30",
        ])
        .args(["--io-timeout", "2", "--no-db", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // The server stops answering, then the user stops the run: the I/O in
    // flight never comes back, so the stop also fails (after --io-timeout).
    nbd.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: plain kill(2) on our own child's PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("storlab did not stop within 15 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let all = both(&o);
    assert_eq!(o.status.code(), Some(130), "interrupt wins: {all}");
    error_line_says(
        &o,
        &[
            "interrupted",
            "failed",
            nbd.url.as_str(),
            "still in flight",
            "saved",
        ],
        "still in flight",
    );
    let doc = read_json(&json);
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert!(
        doc["error"]
            .as_str()
            .is_some_and(|s| s.contains("still in flight")),
        "the run's error is saved: {doc}"
    );
    let p = &points(&doc)[0];
    assert_eq!(p["interrupted"], true);
    assert!(
        u(&p["summary"]["total"]["ios"]) > 0,
        "what was measured is kept"
    );
}

/// The run's one `storlab: error:` line holds every one of `must`, and
/// `once` appears exactly once in all the output (the error is told once).
fn error_line_says(o: &Output, must: &[&str], once: &str) {
    let all = both(o);
    let e = stderr(o);
    let line = e
        .lines()
        .find(|l| l.starts_with("storlab: error: "))
        .unwrap_or_else(|| panic!("no error line: {all}"));
    for m in must {
        assert!(line.contains(m), "{m:?} missing: {line}");
    }
    assert_eq!(all.matches(once).count(), 1, "told once: {all}");
}
