//! An agent process on 127.0.0.1, killed by PID on drop.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

/// An agent process; killed by PID on drop.
pub struct AgentProc {
    /// The agent's child process.
    pub child: Child,
    /// Where it listens, as it said in its first log line.
    pub addr: String,
}

impl AgentProc {
    /// `storlab agent --listen 127.0.0.1:0 --name NAME ARGS...`, once it has
    /// said where it listens. Its log is drained so it never blocks on a full
    /// pipe.
    pub fn start<I, S>(name: &str, args: I) -> AgentProc
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Self::start_with_env(name, &[], args)
    }

    /// [`AgentProc::start`] with extra environment variables (`STORLAB_VERIFY_DIR`).
    pub fn start_with_env<I, S>(name: &str, env: &[(&str, &OsStr)], args: I) -> AgentProc
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = super::storlab()
            .envs(env.iter().copied())
            .args(["agent", "--listen", "127.0.0.1:0", "--name", name])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agent");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("agent says where it listens").unwrap();
        let addr = first
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"))
            .to_string();
        std::thread::spawn(move || for _ in lines.by_ref() {});
        AgentProc { child, addr }
    }

    /// Kill it by PID and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        self.kill();
    }
}
