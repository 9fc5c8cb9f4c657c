//! Load-generator hosts (`lab up --hosts N`): one network namespace per host,
//! `storlabS-hK`, joined to the storage host by a veth pair whose storage end
//! is a port of a Linux bridge inside the storage namespace. The bridge also
//! takes the root namespace's veth, and carries the storage address:
//!
//! ```text
//! root ns: stlSh 10.99.S.1 ─┐
//!                           │ veth (stlSs, bridge port)
//! storlabS: bridge stlSbr 10.99.S.2  ── servers
//!                           │ veth (stlSpK, bridge port)
//! storlabS-hK: stlScK 10.99.S.(10+K)  ── storlab agent :7878
//! ```
//!
//! Nothing but `stlSh` is ever made in the root namespace: each host's veth
//! pair is created inside the storage namespace with its peer placed straight
//! into the host namespace. Each host runs one `storlab agent`, recorded by PID
//! like the servers.

use super::LabError;
use super::netns::Netns;
use super::ready;
use super::tools::Tools;
use crate::process::{self, Proc};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most hosts a lab can have (addresses .11 to .74 of the /24).
pub const MAX_HOSTS: u32 = 64;

/// The agents' default port.
pub const AGENT_PORT: u16 = 7878;

/// The token file's name in the state directory.
pub const TOKEN_FILE: &str = "agent.token";

/// One load-generator host namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Namespace name (`ip netns`), e.g. `storlab1-h1`.
    pub name: String,
    /// Host number, 1..=N.
    pub index: u32,
    /// The host's address (10.99.S.(10+index)).
    pub addr: Ipv4Addr,
    /// The veth end in the storage namespace (a bridge port).
    pub port_if: String,
    /// The veth end in the host namespace.
    pub host_if: String,
    /// The agent's `ADDR:PORT`, once it answers.
    pub agent: Option<String>,
}

impl Host {
    /// Host `index` of the storage host `ns`.
    pub fn new(ns: &Netns, index: u32) -> Host {
        Host {
            name: format!("{}-h{index}", ns.name),
            index,
            addr: Ipv4Addr::new(10, 99, ns.slot, 10 + index as u8),
            port_if: format!("stl{}p{index}", ns.slot),
            host_if: format!("stl{}c{index}", ns.slot),
            agent: None,
        }
    }

    /// The bind-mounted namespace file `ip netns` made.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// The agent's server name in the lab's record.
    pub fn agent_server(&self) -> String {
        format!("agent-h{}", self.index)
    }
}

/// The bridge's name (inside the storage namespace).
pub fn bridge_name(ns: &Netns) -> String {
    format!("stl{}br", ns.slot)
}

/// Run `ip ARGS`.
fn ip(tools: &Tools, args: &[&str]) -> Result<(), LabError> {
    process::run(&tools.ip, args)
        .map(|_| ())
        .map_err(LabError::System)
}

/// Turn the storage end of the root veth into a bridge port: make the bridge
/// in the storage namespace and move the storage address onto it.
pub fn add_bridge(tools: &Tools, ns: &Netns) -> Result<String, LabError> {
    let br = bridge_name(ns);
    let cidr = format!("{}/24", ns.ns_addr);
    let n = ns.name.as_str();
    ip(tools, &["-n", n, "link", "add", &br, "type", "bridge"])?;
    ip(tools, &["-n", n, "addr", "del", &cidr, "dev", &ns.ns_if])?;
    ip(tools, &["-n", n, "link", "set", &ns.ns_if, "master", &br])?;
    ip(tools, &["-n", n, "addr", "add", &cidr, "dev", &br])?;
    ip(tools, &["-n", n, "link", "set", &br, "up"])?;
    Ok(br)
}

/// Make host `h`'s namespace and its veth pair, the storage end a port of `br`.
pub fn add_host(tools: &Tools, ns: &Netns, br: &str, h: &Host, mtu: u32) -> Result<(), LabError> {
    let n = ns.name.as_str();
    let cidr = format!("{}/24", h.addr);
    let mtu = mtu.to_string();
    ip(tools, &["netns", "add", &h.name])?;
    ip(
        tools,
        &[
            "-n", n, "link", "add", &h.port_if, "mtu", &mtu, "type", "veth", "peer", "name",
            &h.host_if, "mtu", &mtu, "netns", &h.name,
        ],
    )?;
    ip(tools, &["-n", n, "link", "set", &h.port_if, "master", br])?;
    ip(tools, &["-n", n, "link", "set", &h.port_if, "up"])?;
    ip(
        tools,
        &["-n", &h.name, "addr", "add", &cidr, "dev", &h.host_if],
    )?;
    ip(tools, &["-n", &h.name, "link", "set", &h.host_if, "up"])?;
    ip(tools, &["-n", &h.name, "link", "set", "lo", "up"])
}

/// SIGKILL whatever still runs in host namespace `name`, then delete it
/// (which deletes its veth pair and qdiscs). What is already gone is fine.
pub fn destroy(ip: &Path, name: &str) -> Result<(), String> {
    let path = Path::new("/run/netns").join(name);
    if !path.exists() {
        return Ok(());
    }
    for pid in pids(ip, name) {
        process::kill_pid(pid);
    }
    process::run(ip, &["netns", "del", name]).map(|_| ())
}

/// Start `storlab agent` in host `h`'s namespace, listening on `h.addr:port`,
/// allowed to touch `allow` only.
pub fn start_agent(
    tools: &Tools,
    storlab: &Path,
    h: &Host,
    port: u16,
    token: &Path,
    allow: &[String],
    state_dir: &Path,
) -> Result<Proc, LabError> {
    let mut args: Vec<String> = vec![
        format!("--net={}", h.path().display()),
        "--".into(),
        storlab.display().to_string(),
        "agent".into(),
        "--listen".into(),
        format!("{}:{port}", h.addr),
        "--token-file".into(),
        token.display().to_string(),
        "--name".into(),
        h.name.clone(),
    ];
    for a in allow {
        args.extend(["--allow".into(), a.clone()]);
    }
    let log = state_dir.join(format!("{}.log", h.agent_server()));
    process::spawn(&tools.nsenter, &args, &log).map_err(LabError::System)
}

/// One `GET /metrics` with the token: Ok when the agent answers 200.
pub fn probe_agent(addr: SocketAddr, token: &str) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1))
        .map_err(|e| format!("TCP connect {addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("agent {addr}: {e}"))?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head)
        .map_err(|e| format!("agent {addr}: no HTTP reply: {e}"))?;
    if head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200") {
        Ok(())
    } else {
        Err(format!(
            "agent {addr}: GET /metrics answered {:?}",
            String::from_utf8_lossy(&head)
        ))
    }
}

/// Wait until the agent answers `GET /metrics` with the token.
pub fn wait_agent(h: &Host, proc: &Proc, port: u16, token: &str) -> Result<(), LabError> {
    let addr = SocketAddr::from((h.addr, port));
    ready::wait(&h.agent_server(), proc, || probe_agent(addr, token))
}

/// Interfaces on the path of storage host `ns` with `hosts`: (namespace
/// (None: root), interface), root veth first.
pub fn path_interfaces(
    ns: &Netns,
    bridge: Option<&str>,
    hosts: &[Host],
) -> Vec<(Option<String>, String)> {
    let mut out = vec![
        (None, ns.host_if.clone()),
        (Some(ns.name.clone()), ns.ns_if.clone()),
    ];
    if let Some(br) = bridge {
        out.push((Some(ns.name.clone()), br.to_string()));
    }
    for h in hosts {
        out.push((Some(ns.name.clone()), h.port_if.clone()));
        out.push((Some(h.name.clone()), h.host_if.clone()));
    }
    out
}

/// PIDs in host namespace `name` (`ip netns pids`).
pub fn pids(ip: &Path, name: &str) -> Vec<u32> {
    if !Path::new("/run/netns").join(name).exists() {
        return Vec::new();
    }
    process::run(ip, &["netns", "pids", name])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_addresses() {
        let ns = Netns::for_slot(3);
        let h = Host::new(&ns, 2);
        assert_eq!(h.name, "storlab3-h2");
        assert_eq!(h.addr, Ipv4Addr::new(10, 99, 3, 12));
        assert_eq!(h.port_if, "stl3p2");
        assert_eq!(h.host_if, "stl3c2");
        assert_eq!(bridge_name(&ns), "stl3br");
        let long = Host::new(&Netns::for_slot(255), MAX_HOSTS);
        assert!(long.port_if.len() <= 15 && long.host_if.len() <= 15);
        let ifs = path_interfaces(&ns, Some("stl3br"), &[h]);
        assert_eq!(ifs.len(), 5);
        assert_eq!(ifs[0], (None, "stl3h".to_string()));
    }
}
