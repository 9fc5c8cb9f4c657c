//! Deploying agents with an orchestrator that already exists: ssh
//! (`storlab fleet deploy|status|stop`, Debian's OpenSSH client) or
//! Kubernetes (`storlab fleet manifest`, [`manifest`]).
//!
//! A deploy, for every host at once (at most `parallel` at a time):
//! 1. checks from here that nothing answers yet on the agent's address (a
//!    stale agent, of this version or another, is named and refused);
//! 2. over ssh: `mktemp -d PARENT/storlab-agent.XXXXXXXX`, then the binary
//!    and the token copied in through ssh's stdin (`install -m 0700
//!    /dev/stdin`, `-m 0600`: the token never appears on a command line);
//! 3. runs the copied binary's `fleet host-up` there, which starts the agent
//!    under a supervisor ([`host`]) and returns once it listens;
//! 4. says hello from here: the agent's wire protocol version must be ours
//!    and its clock within `max_clock_offset` of ours.
//!
//! Every step is recorded in `DIR/fleet.json` as it is done, so `fleet stop`
//! can undo a deploy that was interrupted. A host that fails is named in one
//! line; if any fails, every host that came up is stopped again and its
//! directory removed (nothing is left deployed). On success `DIR/hosts` lists
//! the agents, one `HOST:PORT` a line, which is what `--hosts` takes, with the
//! token file beside it.

mod down;
pub mod host;
pub mod manifest;
pub mod ssh;
mod up;
mod yaml;

pub use down::{status, stop};
pub use up::deploy;

use crate::fleet::controller;
use serde::{Deserialize, Serialize};
use ssh::{SshHost, SshOptions};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The fleet's record in its directory.
pub const STATE_FILE: &str = "fleet.json";
/// The agents' `HOST:PORT` list in the fleet's directory (`--hosts FILE`).
pub const HOSTS_FILE: &str = "hosts";
/// The token made when none is given, in the fleet's directory.
pub const TOKEN_FILE: &str = "token";
/// The agents' default port.
pub const AGENT_PORT: u16 = 7878;
/// The default bound on an agent's clock offset, ms.
pub const MAX_CLOCK_OFFSET_MS: f64 = 100.0;

/// One host of a fleet: how ssh reaches it and where its agent listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetHost {
    /// The ssh side.
    pub ssh: SshHost,
    /// `HOST:PORT` the controller reaches the agent at (what `--hosts` lists).
    pub agent: String,
    /// `ADDR:PORT` the agent listens on (the agent's address when it is an
    /// IP address, else every address: `0.0.0.0:PORT`).
    pub listen: String,
}

/// `HOST:PORT` with IPv6 in brackets.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl FleetHost {
    /// `ssh_entry` (`[USER@]HOST[:SSHPORT]`), its agent on `agent`
    /// (`HOST:PORT`) or else on the ssh host's address at `agent_port`.
    pub fn new(ssh_entry: &str, agent: Option<&str>, agent_port: u16) -> Result<FleetHost, String> {
        let ssh = SshHost::parse(ssh_entry)?;
        let agent = match agent {
            Some(a) => {
                controller::parse_hosts(a)
                    .map_err(|e| format!("agent address of {ssh_entry}: {e}"))?;
                a.to_string()
            }
            None => host_port(&ssh.host, agent_port),
        };
        let (ahost, aport) = agent
            .rsplit_once(':')
            .expect("parse_hosts checked HOST:PORT");
        let ahost = ahost.trim_start_matches('[').trim_end_matches(']');
        let listen = match ahost.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, aport.parse().expect("checked port")).to_string(),
            Err(_) => format!("0.0.0.0:{aport}"),
        };
        Ok(FleetHost { ssh, agent, listen })
    }
}

/// Parse `--hosts`: a file (if such a file exists) with one host a line,
/// `[USER@]HOST[:SSHPORT] [AGENT_HOST:PORT]` (`#` comments), or a
/// comma-separated list of `[USER@]HOST[:SSHPORT]`.
pub fn parse_hosts(arg: &str, agent_port: u16) -> Result<Vec<FleetHost>, String> {
    let mut hosts = Vec::new();
    if Path::new(arg).is_file() {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| format!("cannot read hosts file {arg}: {e}"))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let words: Vec<&str> = line.split_whitespace().collect();
            let h = match words[..] {
                [] => continue,
                [ssh] => FleetHost::new(ssh, None, agent_port),
                [ssh, agent] => FleetHost::new(ssh, Some(agent), agent_port),
                _ => Err(
                    "more than two words (expected [USER@]HOST[:SSHPORT] [AGENT_HOST:PORT])"
                        .to_string(),
                ),
            }
            .map_err(|e| format!("hosts file {arg} line {}: {e}", n + 1))?;
            hosts.push(h);
        }
    } else {
        for entry in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            hosts.push(
                FleetHost::new(entry, None, agent_port).map_err(|e| format!("--hosts: {e}"))?,
            );
        }
    }
    if hosts.is_empty() {
        return Err(format!(
            "--hosts {arg:?} names no host (expected [USER@]HOST[:SSHPORT],... or a file with one per line)"
        ));
    }
    for (i, h) in hosts.iter().enumerate() {
        if hosts[..i].iter().any(|o| o.agent == h.agent) {
            return Err(format!(
                "--hosts: two hosts have their agent on {} (give each its own HOST:PORT)",
                h.agent
            ));
        }
    }
    Ok(hosts)
}

/// How to deploy.
#[derive(Clone, Debug)]
pub struct DeployConfig {
    /// The hosts.
    pub hosts: Vec<FleetHost>,
    /// How ssh runs.
    pub ssh: SshOptions,
    /// The storlab binary copied to every host.
    pub binary: PathBuf,
    /// The token file copied to every host; `None`: a fresh one is written to
    /// `DIR/token`.
    pub token_file: Option<PathBuf>,
    /// The agents' `--allow` entries.
    pub allow: Vec<String>,
    /// The agents' `--controller-timeout`, s (None: the agent's default).
    pub controller_timeout: Option<u64>,
    /// Where on each host the agent's directory is made (`mktemp -d` in it).
    pub remote_parent: String,
    /// Refuse an agent whose clock is further than this from ours, ms.
    pub max_clock_offset_ms: f64,
    /// The fleet's directory here: `fleet.json`, `hosts`, `token`, logs.
    pub dir: PathBuf,
    /// Hosts deployed at once.
    pub parallel: usize,
}

/// The fleet as deployed: `DIR/fleet.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetState {
    /// The token file the agents were given.
    pub token_file: PathBuf,
    /// Whether the deploy wrote that token (and so the stop removes it).
    pub token_generated: bool,
    /// How ssh reached the hosts (the stop reaches them the same way).
    pub ssh: SshOptions,
    /// Every host, recorded before anything is made on it.
    pub hosts: Vec<DeployedHost>,
}

/// One host as deployed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeployedHost {
    /// The ssh entry (`[USER@]HOST[:PORT]`).
    pub ssh: String,
    /// The agent's `HOST:PORT`.
    pub agent: String,
    /// The agent's directory on the host, once made.
    pub remote_dir: Option<String>,
    /// The supervisor, once started.
    pub supervisor: Option<host::Pid>,
    /// The agent it first started.
    pub agent_pid: Option<host::Pid>,
    /// The agent's storlab release, once it answered.
    pub storlab_version: Option<String>,
    /// Its clock minus ours at the deploy, ms.
    pub clock_offset_ms: Option<f64>,
}

impl FleetState {
    /// Read `DIR/fleet.json`; `None` if there is none.
    pub fn load(dir: &Path) -> Result<Option<FleetState>, String> {
        let path = dir.join(STATE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("{}: not a fleet record: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Write `DIR/fleet.json` atomically.
    fn save(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(STATE_FILE);
        let tmp = dir.join(format!("{STATE_FILE}.new"));
        let text = serde_json::to_string_pretty(self).expect("serializable");
        std::fs::write(&tmp, text + "\n")
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// The fleet's record, shared by the hosts' threads and saved after each step.
struct Record<'a> {
    dir: &'a Path,
    state: Mutex<FleetState>,
}

impl Record<'_> {
    fn update(&self, i: usize, f: impl FnOnce(&mut DeployedHost)) -> Result<(), String> {
        let mut st = self.state.lock().expect("fleet record");
        f(&mut st.hosts[i]);
        st.save(self.dir)
    }
}

/// Run `f` on every item, at most `parallel` at a time; results in order.
fn each<T: Sync, R: Send>(
    items: &[T],
    parallel: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..parallel.clamp(1, items.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(i, item);
                    out.lock().expect("results")[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// What a deploy, status or stop says about each host: one line, and
/// whether the host is as it should be.
pub type HostLines = Vec<Result<String, String>>;

/// Hears each line of a deploy, status or stop as it is made.
pub type Note = dyn Fn(&Result<String, String>) + Sync;

/// The timeout of the short ssh steps.
const SHORT: Duration = Duration::from_secs(60);

/// Refuse a clock further than `max_ms` from ours.
fn clock_within(name: &str, agent: &str, offset_ms: f64, max_ms: f64) -> Result<(), String> {
    if offset_ms.abs() <= max_ms {
        return Ok(());
    }
    Err(format!(
        "host {name}: agent {agent}'s clock is {offset_ms:+.3} ms off this controller's, past \
         --max-clock-offset {max_ms} ms: synchronise its clock (chrony, systemd-timesyncd) or \
         raise --max-clock-offset"
    ))
}

/// The fleet deployed from `dir`; the error says when there is none.
fn load_fleet(dir: &Path) -> Result<FleetState, String> {
    FleetState::load(dir)?.ok_or_else(|| {
        format!(
            "no fleet deployed from {} (no {} there)",
            dir.display(),
            STATE_FILE
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_from_a_list_or_a_file_with_agent_addresses() {
        let hs = parse_hosts("root@10.0.0.1:2222, gen2", 7900).unwrap();
        assert_eq!(hs[0].agent, "10.0.0.1:7900");
        assert_eq!(hs[0].listen, "10.0.0.1:7900");
        assert_eq!(hs[0].ssh.port, Some(2222));
        assert_eq!(hs[1].agent, "gen2:7900");
        assert_eq!(hs[1].listen, "0.0.0.0:7900", "a name: listen everywhere");
        let dir = crate::workload::testing::temp_dir("deploy-hosts");
        let f = dir.join("fleet.txt");
        std::fs::write(
            &f,
            "# fleet\nroot@[fd00::1]:22\nadmin@gen3 10.0.0.3:7000  # storage net\n\n",
        )
        .unwrap();
        let hs = parse_hosts(f.to_str().unwrap(), 7878).unwrap();
        assert_eq!(hs[0].agent, "[fd00::1]:7878");
        assert_eq!(hs[0].listen, "[fd00::1]:7878");
        assert_eq!(
            (hs[1].agent.as_str(), hs[1].listen.as_str()),
            ("10.0.0.3:7000", "10.0.0.3:7000")
        );
        std::fs::write(&f, "a b c\n").unwrap();
        let e = parse_hosts(f.to_str().unwrap(), 7878).unwrap_err();
        assert!(
            e.contains("line 1") && e.contains("more than two words"),
            "{e}"
        );
        std::fs::write(&f, "gen1 10.0.0.1\n").unwrap();
        let e = parse_hosts(f.to_str().unwrap(), 7878).unwrap_err();
        assert!(e.contains("line 1") && e.contains("HOST:PORT"), "{e}");
        let e = parse_hosts("a,a", 7878).unwrap_err();
        assert!(e.contains("a:7878"), "{e}");
        assert!(
            parse_hosts(" , ", 7878)
                .unwrap_err()
                .contains("names no host")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_clock_past_the_bound_is_refused_naming_the_host() {
        assert!(clock_within("h1", "h1:7878", -99.9, 100.0).is_ok());
        let e = clock_within("h1", "h1:7878", 250.5, 100.0).unwrap_err();
        assert!(
            e.contains("host h1")
                && e.contains("+250.500 ms")
                && e.contains("--max-clock-offset 100"),
            "{e}"
        );
    }

    #[test]
    fn each_keeps_order_and_bounds_parallelism() {
        let live = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<u32> = (0..20).collect();
        let out = each(&items, 3, |i, x| {
            let n = live.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            live.fetch_sub(1, Ordering::SeqCst);
            (i, x * 2)
        });
        assert_eq!(
            out,
            (0..20).map(|i| (i as usize, i * 2)).collect::<Vec<_>>()
        );
        assert!(most.load(Ordering::SeqCst) <= 3);
    }

    #[test]
    fn a_second_deploy_from_one_directory_is_refused() {
        let dir = crate::workload::testing::temp_dir("deploy-twice");
        FleetState::default().save(&dir).unwrap();
        let cfg = DeployConfig {
            hosts: parse_hosts("h1", 7878).unwrap(),
            ssh: SshOptions::default(),
            binary: PathBuf::from("/bin/true"),
            token_file: None,
            allow: vec!["null:".into()],
            controller_timeout: None,
            remote_parent: "/var/tmp".into(),
            max_clock_offset_ms: MAX_CLOCK_OFFSET_MS,
            dir: dir.clone(),
            parallel: 4,
        };
        let e = deploy(&cfg, &|_| {}).unwrap_err();
        let line = e[0].as_ref().unwrap_err();
        assert!(
            line.contains("already deployed") && line.contains("fleet stop --dir"),
            "{line}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
