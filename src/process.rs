//! Server processes: spawn detached with output to a log file, recognise them
//! again by PID + start time, stop them by PID (SIGTERM, wait, SIGKILL).
//!
//! Nothing here looks processes up by name: a PID is only signalled while its
//! start time (field 22 of /proc/PID/stat) still matches the one recorded at
//! spawn, so a PID reused after a crash or reboot is left alone.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A process the lab started.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Proc {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks after boot (/proc/PID/stat field 22).
    pub start_time: u64,
    /// Log file holding its stdout and stderr.
    pub log: PathBuf,
}

/// Start time of `pid` and whether it is a zombie, from /proc/PID/stat.
fn stat(pid: u32) -> Option<(u64, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: skip past the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); field 22 is index 19.
    let state = *fields.first()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((start, state == "Z" || state == "X"))
}

/// Reap `pid` if it is our own child; harmless otherwise.
fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on a single PID only reads/writes `status`.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG);
    }
}

impl Proc {
    /// Whether this very process (same PID and start time) still runs; zombies count as gone.
    pub fn alive(&self) -> bool {
        reap(self.pid);
        matches!(stat(self.pid), Some((start, false)) if start == self.start_time)
    }

    /// Send `sig` if the process is still this one; whether it was sent.
    pub fn signal(&self, sig: libc::c_int) -> bool {
        if !self.alive() {
            return false;
        }
        // SAFETY: kill(2) on a PID we verified a moment ago.
        unsafe { libc::kill(self.pid as libc::pid_t, sig) == 0 }
    }

    /// Wait up to `timeout` for the process to end.
    pub fn wait_gone(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.alive() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL and wait again. Returns whether it is gone.
    pub fn stop(&self, grace: Duration) -> bool {
        self.signal(libc::SIGTERM);
        if self.wait_gone(grace) {
            return true;
        }
        self.kill()
    }

    /// SIGKILL and wait for the process to go. Returns whether it is gone.
    pub fn kill(&self) -> bool {
        self.signal(libc::SIGKILL);
        self.wait_gone(Duration::from_secs(5))
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

/// The running process `pid` (not a zombie) as a [`Proc`] with its start
/// time now, to be recognised later; `None` when no such process runs.
pub fn find(pid: u32, log: &Path) -> Option<Proc> {
    match stat(pid) {
        Some((start_time, false)) => Some(Proc {
            pid,
            start_time,
            log: log.to_path_buf(),
        }),
        _ => None,
    }
}

/// Signal a PID found by namespace membership (not recorded at spawn): SIGKILL.
pub fn kill_pid(pid: u32) {
    if let Some((start, false)) = stat(pid) {
        let p = Proc {
            pid,
            start_time: start,
            log: PathBuf::new(),
        };
        p.kill();
    }
}

/// Spawn `program args` in its own process group with stdin from /dev/null and
/// stdout + stderr appended to `log`.
pub fn spawn(program: &Path, args: &[String], log: &Path) -> Result<Proc, String> {
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot open log {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot open log {}: {e}", log.display()))?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let pid = child.id();
    // The Child is dropped without waiting: the server outlives this process.
    let start_time = stat(pid).map(|(s, _)| s).unwrap_or(0);
    Ok(Proc {
        pid,
        start_time,
        log: log.to_path_buf(),
    })
}

/// Start a server that daemonizes itself and writes `pid_file`: run the
/// launcher to completion (output appended to `log`), then adopt the daemon by
/// the PID in `pid_file`. For servers that tie themselves to their parent's
/// life (nbdkit sets PR_SET_PDEATHSIG) and so must not be our child.
pub fn spawn_daemon(
    program: &Path,
    args: &[String],
    log: &Path,
    pid_file: &Path,
) -> Result<Proc, String> {
    let _ = std::fs::remove_file(pid_file);
    let launcher = spawn(program, args, log)?;
    if !launcher.wait_gone(Duration::from_secs(30)) {
        launcher.kill();
        return Err(format!(
            "{} did not daemonize within 30 s",
            program.display()
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(pid) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            && let Some((start_time, false)) = stat(pid)
        {
            return Ok(Proc {
                pid,
                start_time,
                log: log.to_path_buf(),
            });
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} exited without a running daemon in {}",
                program.display(),
                pid_file.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run a short command to completion; Ok(stdout) on exit 0, else Err(one line with stderr).
pub fn run(program: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let mut msg = String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace('\n', "; ");
        if msg.is_empty() {
            msg = String::from_utf8_lossy(&out.stdout)
                .trim()
                .replace('\n', "; ");
        }
        Err(format!(
            "{} {} failed ({}): {msg}",
            program.display(),
            args.join(" "),
            out.status
        ))
    }
}

/// The last `lines` lines of a file (at most its last 64 KiB), or "" if unreadable.
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_stop_and_identity() {
        let dir = std::env::temp_dir().join(format!("storlab-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("sleep.log");
        let p = spawn(Path::new("/bin/sleep"), &["30".into()], &log).unwrap();
        assert!(p.alive());
        let other = Proc {
            start_time: p.start_time + 1,
            ..p.clone()
        };
        assert!(
            !other.alive(),
            "a different start time is a different process"
        );
        assert!(p.stop(Duration::from_secs(5)));
        assert!(!p.alive());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tail_takes_last_lines() {
        let dir = std::env::temp_dir().join(format!("storlab-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("log");
        std::fs::write(&f, "a\nb\nc\nd\n").unwrap();
        assert_eq!(tail(&f, 2), "c\nd");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
