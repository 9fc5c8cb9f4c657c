//! Helpers shared by the integration tests: the binary, temp dirs, JSON.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A directory removed (with everything in it) when dropped.
pub struct TempDir(pub PathBuf);

static N: AtomicU32 = AtomicU32::new(0);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "storlab-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
    pub fn target(&self) -> String {
        format!("file:{}", self.0.display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary, recording runs in a results database under cargo's target
/// temp dir (not the user's).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_storlab"));
    c.env("STORLAB_DB", test_db());
    c
}

/// The results database the tests' runs go to.
pub fn test_db() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests.db")
}

/// Run storlab with `args`; returns the output.
pub fn storlab(args: &[&str]) -> Output {
    bin().args(args).output().expect("run storlab")
}

/// Exit code 2 and one line on stderr that contains every `needle`.
pub fn rejects(args: &[&str], needles: &[&str]) {
    let o = storlab(args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "args {args:?} should be refused; stderr: {err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected, got: {err}");
    for n in needles {
        assert!(err.contains(n), "error for {args:?} lacks {n:?}: {err}");
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn read_json(p: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// The points of the first job of a run document.
pub fn points(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    doc["jobs"][0]["points"].as_array().expect("points").clone()
}

/// Check the invariants every point must satisfy: per-interval bytes = I/Os x
/// block size (for a single block size), histogram counts = I/O counts, the
/// summary = the sum of the measured intervals, ramp excluded, and per-worker
/// totals adding up to the summary.
pub fn check_point(p: &serde_json::Value, bs: Option<u64>) {
    let intervals = p["intervals"].as_array().expect("intervals");
    assert!(!intervals.is_empty(), "no intervals");
    let mut measured = [0u64; 2];
    let mut measured_bytes = [0u64; 2];
    let mut ramp_ios = 0;
    for iv in intervals {
        for (i, dir) in ["read", "write"].iter().enumerate() {
            let d = &iv["stats"][dir];
            let ios = u(&d["ios"]);
            let bytes = u(&d["bytes"]);
            assert_eq!(
                u(&d["lat"]["count"]),
                ios,
                "histogram count = I/Os in {dir} of {iv}"
            );
            if let Some(bs) = bs {
                assert_eq!(bytes, ios * bs, "bytes = I/Os x bs");
            }
            if iv["phase"] == "measure" {
                measured[i] += ios;
                measured_bytes[i] += bytes;
            } else {
                ramp_ios += ios;
            }
        }
    }
    let s = &p["summary"];
    assert_eq!(
        u(&s["read"]["ios"]),
        measured[0],
        "summary read I/Os = measured intervals"
    );
    assert_eq!(
        u(&s["write"]["ios"]),
        measured[1],
        "summary write I/Os = measured intervals"
    );
    assert_eq!(
        u(&s["total"]["bytes"]),
        measured_bytes[0] + measured_bytes[1]
    );
    let _ = ramp_ios;
    let mut wsum = 0;
    for w in p["workers"].as_array().expect("workers") {
        wsum += u(&w["stats"]["read"]["ios"]) + u(&w["stats"]["write"]["ios"]);
    }
    assert_eq!(
        wsum,
        measured[0] + measured[1],
        "per-worker totals add up to the summary"
    );
}

/// The point's merged measured histograms agree with its summary.
pub fn check_measured(p: &serde_json::Value) {
    for dir in ["read", "write"] {
        let m = &p["measured"][dir];
        assert_eq!(u(&m["ios"]), u(&p["summary"][dir]["ios"]));
        assert_eq!(u(&m["lat"]["count"]), u(&m["ios"]));
    }
}
