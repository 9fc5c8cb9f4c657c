//! The deployed host's side: what `storlab fleet deploy` and `fleet stop` run
//! there, through ssh, with the storlab binary they copied into the fleet's
//! directory on that host (one directory per agent, made by `mktemp -d`).
//!
//! The directory holds, and the stop removes, exactly these files:
//!
//! | file | what |
//! | --- | --- |
//! | `storlab`, `token` | copied by the deploy (modes 0700 and 0600) |
//! | `supervisor.pid`, `agent.pid` | `PID START_TIME` (start time: /proc/PID/stat field 22) |
//! | `supervisor.log`, `agent.log` | their output |
//! | `stop` | made by the stop: the supervisor restarts no agent once it exists |
//!
//! The supervisor (`storlab fleet supervise`, started by `host-up` in a
//! process group of its own, detached from the ssh session) runs the agent
//! as its child and starts it again when it exits, at most [`MAX_RESTARTS`]
//! times in [`RESTART_WINDOW`]; then it gives up and exits. It runs nothing
//! but the agent, from the same directory.

use crate::process::{self, Proc};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The copied binary's name in the directory.
pub const BINARY: &str = "storlab";
/// The copied token's name in the directory.
pub const TOKEN: &str = "token";
const SUPERVISOR_PID: &str = "supervisor.pid";
const AGENT_PID: &str = "agent.pid";
const SUPERVISOR_LOG: &str = "supervisor.log";
const AGENT_LOG: &str = "agent.log";
const STOP: &str = "stop";
/// Every file the deployment may leave in its directory, and so removes.
const FILES: [&str; 7] = [
    BINARY,
    TOKEN,
    SUPERVISOR_PID,
    AGENT_PID,
    SUPERVISOR_LOG,
    AGENT_LOG,
    STOP,
];

/// Most agent restarts within [`RESTART_WINDOW`] before the supervisor gives up.
pub const MAX_RESTARTS: usize = 5;
/// The window of [`MAX_RESTARTS`].
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// How long `host-up` waits for the agent to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A process as recorded: PID and start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pid {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks after boot (/proc/PID/stat field 22).
    pub start_time: u64,
}

/// What `fleet host-up` prints (one JSON line) once the agent listens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostUp {
    /// The supervisor.
    pub supervisor: Pid,
    /// The agent it started.
    pub agent: Pid,
    /// The storlab release of the copied binary.
    pub storlab_version: String,
    /// Its wire protocol version.
    pub protocol: u32,
}

/// What `fleet host-down` prints (one JSON line) once everything is gone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDown {
    /// Whether the supervisor was still running (and was stopped).
    pub supervisor_was_running: bool,
    /// Whether an agent was still running (and was stopped).
    pub agent_was_running: bool,
    /// The agent's log (its last MiB).
    pub agent_log: String,
    /// The supervisor's log (its last 64 KiB): restarts, giving up.
    pub supervisor_log: String,
    /// The directory removed.
    pub removed: String,
}

fn read_pid(dir: &Path, file: &str) -> Option<Proc> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    let mut it = text.split_whitespace();
    let pid = it.next()?.parse().ok()?;
    let start_time = it.next()?.parse().ok()?;
    Some(Proc {
        pid,
        start_time,
        log: PathBuf::new(),
    })
}

fn write_pid(dir: &Path, file: &str, p: &Proc) -> Result<(), String> {
    let path = dir.join(file);
    let tmp = dir.join(format!("{file}.new"));
    std::fs::write(&tmp, format!("{} {}\n", p.pid, p.start_time))
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn pid_of(p: &Proc) -> Pid {
    Pid {
        pid: p.pid,
        start_time: p.start_time,
    }
}

/// The deployment's directory, checked: absolute, holding the copied files.
fn checked_dir(dir: &Path, need: &[&str]) -> Result<PathBuf, String> {
    if !dir.is_absolute() {
        return Err(format!("--dir {}: must be an absolute path", dir.display()));
    }
    for f in need {
        if !dir.join(f).is_file() {
            return Err(format!(
                "--dir {}: no {f} in it (not a directory `storlab fleet deploy` made)",
                dir.display()
            ));
        }
    }
    Ok(dir.to_path_buf())
}

/// Where to connect to see the agent listen on `listen` from its own host
/// (an unspecified address is reached on loopback).
fn local_addrs(listen: &str) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| format!("--listen {listen}: {e}"))?
        .map(|mut a| {
            if a.ip().is_unspecified() {
                a.set_ip(match a {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            a
        })
        .collect();
    if addrs.is_empty() {
        return Err(format!("--listen {listen} resolves to no address"));
    }
    Ok(addrs)
}

fn tails(dir: &Path) -> String {
    let mut parts = Vec::new();
    for f in [AGENT_LOG, SUPERVISOR_LOG] {
        let t = process::tail(&dir.join(f), 5);
        if !t.trim().is_empty() {
            parts.push(format!("{f}: {}", t.trim().replace('\n', " | ")));
        }
    }
    if parts.is_empty() {
        "no output".into()
    } else {
        parts.join("; ")
    }
}

/// `fleet host-up`: start the supervisor in `dir`, which starts `storlab
/// agent --listen LISTEN --token-file DIR/token AGENT_ARGS`, and return once
/// the agent accepts connections on `listen`. On any failure nothing is left
/// running and the error quotes the logs.
pub fn host_up(dir: &Path, listen: &str, agent_args: &[String]) -> Result<HostUp, String> {
    let dir = checked_dir(dir, &[BINARY, TOKEN])?;
    if let Some(p) = read_pid(&dir, SUPERVISOR_PID).filter(Proc::alive) {
        return Err(format!(
            "a supervisor already runs in {} (pid {})",
            dir.display(),
            p.pid
        ));
    }
    let addrs = local_addrs(listen)?;
    for f in [AGENT_PID, SUPERVISOR_PID, STOP] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let mut args: Vec<String> = ["fleet", "supervise", "--dir"]
        .map(String::from)
        .into_iter()
        .collect();
    args.push(dir.display().to_string());
    args.extend(["--".into(), "--listen".into(), listen.into()]);
    args.extend(["--token-file".into(), dir.join(TOKEN).display().to_string()]);
    args.extend(agent_args.iter().cloned());
    // Its own process group, stdin /dev/null, output to its log: the ssh
    // session that started it can end.
    let sup = process::spawn(&dir.join(BINARY), &args, &dir.join(SUPERVISOR_LOG))?;
    let give_up = |why: String| {
        // The stop marker first, so the supervisor restarts nothing.
        let _ = std::fs::write(dir.join(STOP), "");
        if let Some(a) = read_pid(&dir, AGENT_PID) {
            a.stop(Duration::from_secs(5));
        }
        sup.stop(Duration::from_secs(5));
        Err(format!("{why} ({})", tails(&dir)))
    };
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match read_pid(&dir, AGENT_PID) {
            Some(a) if a.alive() => {
                let up = addrs
                    .iter()
                    .any(|x| TcpStream::connect_timeout(x, Duration::from_millis(500)).is_ok());
                if up {
                    return Ok(HostUp {
                        supervisor: pid_of(&sup),
                        agent: pid_of(&a),
                        storlab_version: crate::fleet::wire::STORLAB_VERSION.into(),
                        protocol: crate::fleet::wire::PROTOCOL_VERSION,
                    });
                }
            }
            Some(a) => return give_up(format!("the agent (pid {}) exited at start", a.pid)),
            None if !sup.alive() => return give_up("the supervisor exited at start".into()),
            None => {}
        }
        if Instant::now() >= deadline {
            return give_up(format!(
                "the agent did not listen on {listen} within {} s",
                READY_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `fleet supervise`: run `storlab agent AGENT_ARGS` from `dir` until the
/// stop marker appears, starting it again when it exits (at most
/// [`MAX_RESTARTS`] times within [`RESTART_WINDOW`]). Runs in the
/// foreground; `host-up` starts it detached.
pub fn supervise(dir: &Path, agent_args: &[String]) -> Result<(), String> {
    let dir = checked_dir(dir, &[BINARY])?;
    let me = process::find(std::process::id(), Path::new(""))
        .ok_or("cannot read this process's own start time from /proc")?;
    write_pid(&dir, SUPERVISOR_PID, &me)?;
    let stopping = || dir.join(STOP).exists();
    let mut restarts: VecDeque<Instant> = VecDeque::new();
    let result = loop {
        if stopping() {
            break Ok(());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(AGENT_LOG))
            .map_err(|e| format!("cannot open {}: {e}", dir.join(AGENT_LOG).display()))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", dir.join(AGENT_LOG).display()))?;
        let mut child = Command::new(dir.join(BINARY))
            .arg("agent")
            .args(agent_args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", dir.join(BINARY).display()))?;
        let agent = process::find(child.id(), Path::new(""));
        if let Some(a) = &agent {
            write_pid(&dir, AGENT_PID, a)?;
        }
        let status = child
            .wait()
            .map_err(|e| format!("waiting for the agent: {e}"))?;
        if stopping() {
            break Ok(());
        }
        let now = Instant::now();
        restarts.push_back(now);
        while restarts
            .front()
            .is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW)
        {
            restarts.pop_front();
        }
        if restarts.len() > MAX_RESTARTS {
            break Err(format!(
                "the agent exited {} times within {} s (last: {status}); giving up (see {})",
                restarts.len(),
                RESTART_WINDOW.as_secs(),
                dir.join(AGENT_LOG).display()
            ));
        }
        eprintln!(
            "storlab fleet supervise: the agent (pid {}) exited ({status}); starting it again in 1 s",
            child.id()
        );
        let again = Instant::now() + Duration::from_secs(1);
        while Instant::now() < again && !stopping() {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let _ = std::fs::remove_file(dir.join(AGENT_PID));
    let _ = std::fs::remove_file(dir.join(SUPERVISOR_PID));
    result
}

/// The last `max` bytes of a file, or "" if unreadable.
fn read_tail(path: &Path, max: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(max)..]).into_owned()
}

/// `fleet host-down`: stop the agent and its supervisor by PID, then remove
/// the directory's files (only those of [`FILES`]) and the directory. An
/// error says what is still running or still there.
pub fn host_down(dir: &Path) -> Result<HostDown, String> {
    let dir = checked_dir(dir, &[])?;
    if !dir.is_dir() {
        return Err(format!(
            "{} does not exist (already removed?)",
            dir.display()
        ));
    }
    std::fs::write(dir.join(STOP), "")
        .map_err(|e| format!("cannot write {}: {e}", dir.join(STOP).display()))?;
    let sup = read_pid(&dir, SUPERVISOR_PID).filter(Proc::alive);
    let agent = read_pid(&dir, AGENT_PID).filter(Proc::alive);
    if let Some(a) = &agent {
        a.stop(Duration::from_secs(10));
    }
    if let Some(s) = &sup
        && !s.wait_gone(Duration::from_secs(5))
    {
        s.kill();
    }
    // An agent started between the marker and the supervisor's last look.
    if let Some(a) = read_pid(&dir, AGENT_PID).filter(Proc::alive) {
        a.stop(Duration::from_secs(10));
    }
    let running: Vec<String> = [("supervisor", &sup), ("agent", &agent)]
        .into_iter()
        .filter_map(|(what, p)| {
            p.as_ref()
                .filter(|p| p.alive())
                .map(|p| format!("{what} pid {}", p.pid))
        })
        .collect();
    if !running.is_empty() {
        return Err(format!(
            "{} still running after SIGKILL; {} left in place",
            running.join(", "),
            dir.display()
        ));
    }
    let down = HostDown {
        supervisor_was_running: sup.is_some(),
        agent_was_running: agent.is_some(),
        agent_log: read_tail(&dir.join(AGENT_LOG), 1 << 20),
        supervisor_log: read_tail(&dir.join(SUPERVISOR_LOG), 64 << 10),
        removed: dir.display().to_string(),
    };
    for f in FILES {
        let p = dir.join(f);
        if let Err(e) = std::fs::remove_file(&p)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(format!("cannot remove {}: {e}", p.display()));
        }
    }
    if let Err(e) = std::fs::remove_dir(&dir) {
        let left: Vec<String> = std::fs::read_dir(&dir)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        return Err(format!(
            "cannot remove {} ({e}); it holds files storlab did not put there: {}",
            dir.display(),
            left.join(", ")
        ));
    }
    Ok(down)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_files_round_trip_and_name_a_live_process() {
        let dir = crate::workload::testing::temp_dir("deploy-pid");
        let me = process::find(std::process::id(), Path::new("")).unwrap();
        write_pid(&dir, AGENT_PID, &me).unwrap();
        let back = read_pid(&dir, AGENT_PID).unwrap();
        assert_eq!((back.pid, back.start_time), (me.pid, me.start_time));
        assert!(back.alive());
        std::fs::write(dir.join(AGENT_PID), "12 x\n").unwrap();
        assert!(read_pid(&dir, AGENT_PID).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unspecified_listen_address_is_checked_on_loopback() {
        assert_eq!(
            local_addrs("0.0.0.0:7878").unwrap(),
            vec!["127.0.0.1:7878".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            local_addrs("10.1.2.3:7878").unwrap(),
            vec!["10.1.2.3:7878".parse::<SocketAddr>().unwrap()]
        );
        assert!(
            local_addrs("nonsense")
                .unwrap_err()
                .contains("--listen nonsense")
        );
    }

    #[test]
    fn host_down_removes_only_its_own_files() {
        let dir = crate::workload::testing::temp_dir("deploy-down");
        std::fs::write(dir.join(BINARY), "x").unwrap();
        std::fs::write(dir.join(TOKEN), "t").unwrap();
        std::fs::write(dir.join(AGENT_LOG), "agent said this\n").unwrap();
        std::fs::write(dir.join("results.json"), "{}").unwrap();
        let e = host_down(&dir).unwrap_err();
        assert!(e.contains("results.json"), "{e}");
        assert!(dir.join("results.json").exists() && !dir.join(BINARY).exists());
        std::fs::remove_file(dir.join("results.json")).unwrap();
        std::fs::write(dir.join(AGENT_LOG), "agent said this\n").unwrap();
        let down = host_down(&dir).unwrap();
        assert_eq!(down.agent_log, "agent said this\n");
        assert!(!down.agent_was_running && !down.supervisor_was_running);
        assert!(!dir.exists());
        assert!(host_down(&dir).unwrap_err().contains("does not exist"));
    }
}
