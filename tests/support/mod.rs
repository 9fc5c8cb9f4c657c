//! Test harness shared by the integration test crates: a lab brought up in
//! its own state directory and taken down on drop ([`lab`]), an agent process
//! killed by PID on drop ([`agent`]), headless Chromium ([`chromium`]), a
//! temporary directory removed on drop, and small helpers. Each test crate includes it with `mod support;`; it is
//! not a test crate itself (it has no top-level file in tests/).

// Each test crate uses a different subset of these helpers; the rest would be
// reported as dead code in that crate.
#![allow(dead_code)]

pub mod agent;
pub mod chromium;
pub mod corrupt;
pub mod lab;
pub mod media;
pub mod run;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The storlab binary under test.
pub fn storlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
}

/// Standard output followed by standard error, for messages and assertions.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Fail the test unless it runs as root; `why` says what needs root.
pub fn assert_root(why: &str) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "{why}");
}

/// Whether `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A process stopped with SIGSTOP, every thread of it, and continued with
/// SIGCONT on drop whatever happened (a stopped server would hang `lab down`).
pub struct Stopped(pub i32);

impl Stopped {
    /// Stop `pid` and wait until each of its threads is stopped: kill(2)
    /// returns before the group stop takes effect (one thread takes the
    /// signal and stops the others when it next runs), and on a loaded
    /// machine the others go on serving requests meanwhile.
    pub fn new(pid: i32) -> Stopped {
        // SAFETY: kill(2) on a PID the test started or its lab recorded.
        let r = unsafe { libc::kill(pid, libc::SIGSTOP) };
        assert_eq!(r, 0, "SIGSTOP {pid}");
        let stopped = Stopped(pid);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !all_threads_stopped(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "process {pid} did not stop within 10 s of SIGSTOP"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        stopped
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// Whether every thread of `pid` is in the stopped state (T).
fn all_threads_stopped(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|t| {
        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
        })
    })
}

/// Whether `pid` is running: it exists and is neither a zombie nor dead
/// (states Z and X).
pub fn pid_alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(s) => {
            let state = s[s.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            state != "Z" && state != "X"
        }
    }
}

/// A fresh directory `storlab-{prefix}-{tag}-{pid}` under the system's
/// temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Remove whatever is at the path, then create it empty.
    pub fn new(prefix: &str, tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("storlab-{prefix}-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port of 127.0.0.1 free for TCP and UDP at this moment, never handed out
/// twice in this process, and below the kernel's ephemeral range: a port
/// from `bind(0)` comes from that range, so once let go it can be taken by any
/// client connection's local end (or by the next test's `bind(0)`) before the
/// server it was meant for binds it. Each process starts at its own offset
/// within the 12,000 ports below the range.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let span = 12_000.min(low.saturating_sub(1024));
    assert!(
        span >= 1_000,
        "ephemeral ports start at {low}: too few ports below it"
    );
    let first = low - span;
    let offset = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (first + (offset + n) % span) as u16;
        let free = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok();
        if free {
            return port;
        }
    }
    panic!("no free port in 127.0.0.1:{first}..{low}");
}
