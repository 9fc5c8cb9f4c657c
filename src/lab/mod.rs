//! The protocol lab: one backing store exported at the same time over NFSv3,
//! NFSv4 (nfs-ganesha), iSCSI (tgt) and NBD (nbdkit), by real servers that
//! storlab starts, probes and stops.
//!
//! The servers run on a "storage host": a network namespace `storlabN` plus a
//! mount namespace with its own /run, anchored by rpcbind (see [`rpcbind`]).
//! In `netns` mode the namespace is joined to the root namespace by a veth
//! pair (10.99.N.1 ↔ 10.99.N.2), every server runs in it and clients in the
//! root namespace reach the targets at 10.99.N.2; in `loopback` mode (the
//! default without `--hosts`/`--link`/`--mtu`) the namespace has only its own
//! `lo` and only rpcbind runs in it, and ganesha, tgtd and nbdkit serve on
//! 127.0.0.1 of the root namespace ([`net`]). Every
//! process is recorded by PID and start time in `state.json` ([`LabState`])
//! and stopped by PID.
//!
//! The backing store is served through storlab's FUSE media server
//! ([`media`]): every server opens the store in its mount, and the block
//! baseline is a loop device over it ([`loopdev`]), so each path meets the
//! same emulated medium.
//!
//! With `--hosts N` ([`hosts`]) the storage end of that veth becomes a port of
//! a bridge inside the storage namespace, and N load-generator host namespaces
//! join the bridge by veth pairs, each running a `storlab agent`. With
//! `--link` every veth end is shaped by tc tbf ([`link`]). See docs/lab.md.

pub mod backing;
pub mod counters;
pub mod ganesha;
pub mod hosts;
pub mod link;
pub mod loopdev;
pub mod media;
pub mod media_choice;
pub mod nbdkit;
pub mod net;
pub mod netns;
pub mod ready;
pub mod registry;
pub mod restart;
pub mod rpcbind;
pub mod state;
pub mod targets;
pub mod tgt;
pub mod tools;

pub use backing::Backing;
pub use hosts::Host;
pub use link::Link;
pub use media_choice::MediaChoice;
pub use net::NetMode;
pub use state::{LabState, Phase, Server, Targets};
pub use targets::LabTarget;

use crate::process::{self, Proc};
use netns::Netns;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tools::Tools;

/// TCP ports the servers listen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    /// ganesha's NFS port (v3 and v4).
    pub nfs: u16,
    /// ganesha's MOUNT protocol port (NFSv3).
    pub mountd: u16,
    /// tgtd's iSCSI portal.
    pub iscsi: u16,
    /// nbdkit's NBD port.
    pub nbd: u16,
}

impl Default for Ports {
    fn default() -> Ports {
        Ports {
            nfs: 12049,
            mountd: 12050,
            iscsi: 13260,
            nbd: 10810,
        }
    }
}

/// rpcbind's fixed port.
pub const RPCBIND_PORT: u16 = 111;

/// I/O threads of the block servers (tgtd's `--nr_iothreads`, nbdkit's
/// `--threads`; both default to 16). An array's target does not cap the
/// commands in flight at 16; with the store on an emulated array of many
/// spindles, 16 server threads would be the bottleneck rather than the
/// protocol (iSCSI measured at half of FC at every VM count).
pub const SERVER_IO_THREADS: u32 = 128;

/// Where the lab's state lives unless told otherwise.
pub fn default_state_dir() -> PathBuf {
    PathBuf::from("/var/lib/storlab/lab")
}

/// What `lab up` builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabConfig {
    /// Where the backing store lives.
    pub backing: Backing,
    /// Backing store size in bytes.
    pub size: u64,
    /// Server ports.
    pub ports: Ports,
    /// Directory for state.json, configs and server logs (not under /run).
    pub state_dir: PathBuf,
    /// Load-generator host namespaces, each with an agent (0: none, the
    /// root namespace reaches the storage host directly).
    pub hosts: u32,
    /// Shaping of every link; None: unshaped.
    pub link: Option<Link>,
    /// MTU of every interface on the path.
    pub mtu: u32,
    /// Port of the agents (on each host's address).
    pub agent_port: u16,
    /// Start an agent on each host (`false`: `--no-agents`, bare hosts for
    /// agents deployed otherwise, e.g. by `storlab fleet deploy`).
    pub agents: bool,
    /// Where the servers listen: 127.0.0.1 (`loopback`) or the storage
    /// host's namespace (`netns`, needed for hosts, shaping and MTU).
    pub net: NetMode,
    /// What the store is served on (`--media`, `--media-file`), checked
    /// where it was chosen.
    pub media: MediaChoice,
}

impl LabConfig {
    /// A configuration with the defaults: RAM backing, 1 GiB, default ports,
    /// servers on loopback (no hosts, no shaping), the default media.
    pub fn new(state_dir: impl Into<PathBuf>) -> LabConfig {
        LabConfig {
            backing: Backing::Ram,
            size: 1 << 30,
            ports: Ports::default(),
            state_dir: state_dir.into(),
            hosts: 0,
            link: None,
            mtu: 1500,
            agent_port: hosts::AGENT_PORT,
            agents: true,
            net: NetMode::Loopback,
            media: MediaChoice::lab_default(),
        }
    }
}

/// Why the lab could not be brought up or down.
#[derive(Debug)]
pub enum LabError {
    /// A lab with running servers is recorded in this state directory.
    AlreadyUp(PathBuf),
    /// A Debian package is not installed.
    MissingPackage {
        /// The package.
        package: String,
        /// The program (or library) of it that was looked for.
        binary: String,
    },
    /// A port is taken.
    PortInUse {
        /// The port.
        port: u16,
        /// The server that was to listen on it.
        server: String,
        /// What holds it.
        by: String,
    },
    /// The configuration cannot work.
    BadConfig(String),
    /// A server failed to start or to become ready.
    Server {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A system step (namespace, file, command) failed.
    System(String),
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::AlreadyUp(dir) => {
                let hint = if *dir == default_state_dir() {
                    "storlab lab down".to_string()
                } else {
                    format!("storlab lab down --state-dir {}", dir.display())
                };
                write!(
                    f,
                    "lab already up (state in {}); run `{hint}` first",
                    dir.display()
                )
            }
            LabError::MissingPackage { package, binary } => {
                write!(
                    f,
                    "Debian package {package} is not installed ({binary} not found); run ./setup.sh"
                )
            }
            LabError::PortInUse { port, server, by } => {
                write!(
                    f,
                    "port {port} for {server} is already in use ({by}); choose another port"
                )
            }
            LabError::BadConfig(m) | LabError::System(m) => f.write_str(m),
            LabError::Server {
                server,
                message,
                log,
                log_tail,
            } => {
                write!(f, "{server}: {message}")?;
                if !log_tail.is_empty() {
                    write!(f, "\n--- last lines of {} ---\n{log_tail}", log.display())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LabError {}

/// A lab by its state directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lab {
    /// The state directory.
    pub state_dir: PathBuf,
}

impl Lab {
    /// The lab recorded in `state_dir`.
    pub fn at(state_dir: impl Into<PathBuf>) -> Lab {
        Lab {
            state_dir: state_dir.into(),
        }
    }
    /// Bring a lab up as `cfg` says.
    pub fn up(cfg: &LabConfig) -> Result<(Lab, LabState), LabError> {
        up(cfg).map(|s| (Lab::at(&cfg.state_dir), s))
    }
    /// See [`status`].
    pub fn status(&self) -> Option<LabState> {
        status(&self.state_dir)
    }
    /// See [`down`].
    pub fn down(&self) -> Result<(), LabError> {
        down(&self.state_dir)
    }
}

/// Whether `p` is /run or below it (hidden by the storage host's private /run).
fn under_run(p: &Path) -> bool {
    let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    p.starts_with("/run") || p.starts_with("/var/run")
}

/// Check what can be checked before anything is made.
fn validate(cfg: &LabConfig) -> Result<(), LabError> {
    if cfg.size < 1 << 20 || cfg.size % 512 != 0 {
        return Err(LabError::BadConfig(format!(
            "backing size {} bytes: must be at least 1 MiB and a multiple of 512",
            cfg.size
        )));
    }
    if !cfg.state_dir.is_absolute() {
        return Err(LabError::BadConfig(format!(
            "state dir {}: must be an absolute path",
            cfg.state_dir.display()
        )));
    }
    let parent_of_state = cfg.state_dir.parent().unwrap_or(Path::new("/"));
    if under_run(&cfg.state_dir) || under_run(parent_of_state) {
        return Err(LabError::BadConfig(format!(
            "state dir {}: must not be under /run (the storage host has a private /run and could not see it)",
            cfg.state_dir.display()
        )));
    }
    if let Backing::Disk(d) = &cfg.backing
        && under_run(d)
    {
        return Err(LabError::BadConfig(format!(
            "backing dir {}: must not be under /run",
            d.display()
        )));
    }
    if cfg.hosts > hosts::MAX_HOSTS {
        return Err(LabError::BadConfig(format!(
            "--hosts {}: at most {} hosts",
            cfg.hosts,
            hosts::MAX_HOSTS
        )));
    }
    link::check_mtu(cfg.mtu).map_err(LabError::BadConfig)?;
    if cfg.net == NetMode::Loopback && (cfg.hosts > 0 || cfg.link.is_some()) {
        let what = if cfg.hosts > 0 { "--hosts" } else { "--link" };
        return Err(LabError::BadConfig(format!(
            "{what} needs --net netns: --net loopback serves on 127.0.0.1 and has no link or hosts \
             (allowed --net: {})",
            NetMode::ALLOWED
        )));
    }
    if cfg.hosts > 0 && cfg.agent_port == 0 {
        return Err(LabError::BadConfig("agent port 0: give a real port".into()));
    }
    let named = port_names(&cfg.ports);
    for (i, (port, server)) in named.iter().enumerate() {
        if *port == 0 {
            return Err(LabError::BadConfig(format!(
                "port 0 for {server}: give a real port"
            )));
        }
        if let Some((_, other)) = named[..i].iter().find(|(p, _)| p == port) {
            return Err(LabError::PortInUse {
                port: *port,
                server: server.to_string(),
                by: format!("also given to {other}"),
            });
        }
    }
    Ok(())
}

/// Every port with the server that listens on it.
fn port_names(p: &Ports) -> [(u16, &'static str); 5] {
    [
        (RPCBIND_PORT, "rpcbind"),
        (p.nfs, "ganesha (NFS)"),
        (p.mountd, "ganesha (MOUNT)"),
        (p.iscsi, "tgtd (iSCSI)"),
        (p.nbd, "nbdkit (NBD)"),
    ]
}

/// Bring the lab up. On any failure, everything made so far is torn down
/// before the error is returned.
pub fn up(cfg: &LabConfig) -> Result<LabState, LabError> {
    up_until(cfg, &AtomicBool::new(false))
}

/// [`up`], giving up between steps once `stop` is set (Ctrl-C): what was made
/// is torn down as after a failure.
pub fn up_until(cfg: &LabConfig, stop: &AtomicBool) -> Result<LabState, LabError> {
    validate(cfg)?;
    let dir = &cfg.state_dir;
    match LabState::load(dir).map_err(LabError::System)? {
        Some(s) if s.any_running() => {
            return Err(LabError::AlreadyUp(dir.clone()));
        }
        // Left over from a crash or a reboot: clean it first.
        Some(_) => down(dir)?,
        None => {}
    }
    let tools = Tools::find()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| LabError::System(format!("cannot create {}: {e}", dir.display())))?;
    let mut st = LabState::new(dir);
    st.net = cfg.net;
    st.save().map_err(LabError::System)?;
    match build(cfg, &tools, &mut st, stop) {
        Ok(()) => Ok(st),
        Err(e) => {
            if let Err(d) = down(dir) {
                return Err(LabError::System(format!(
                    "{e}\n(and tearing down failed: {d})"
                )));
            }
            Err(e)
        }
    }
}

/// Record a started server.
fn record(
    st: &mut LabState,
    name: &str,
    package: &str,
    proc: Proc,
    addr: std::net::Ipv4Addr,
    ports: Vec<u16>,
) -> Result<(), LabError> {
    st.servers.push(Server {
        name: name.into(),
        package: package.into(),
        version: tools::version(package),
        proc,
        addr,
        ports,
    });
    st.save().map_err(LabError::System)
}

/// Fail once `stop` is set (between the steps of `up`).
fn go_on(stop: &AtomicBool) -> Result<(), LabError> {
    if stop.load(Ordering::SeqCst) {
        Err(LabError::System("lab up interrupted".into()))
    } else {
        Ok(())
    }
}

/// The steps of `up`, saving the record after each.
fn build(
    cfg: &LabConfig,
    tools: &Tools,
    st: &mut LabState,
    stop: &AtomicBool,
) -> Result<(), LabError> {
    let dir = &cfg.state_dir;
    let p = cfg.ports;
    if cfg.net == NetMode::Loopback {
        let named = port_names(&p);
        // ganesha binds NFS and MOUNT for UDP too.
        if let Some((port, server, by)) = net::loopback_port_in_use(&named[1..])
            .or_else(|| net::loopback_udp_port_in_use(&named[1..3]))
        {
            return Err(LabError::PortInUse { port, server, by });
        }
    }
    // loopback: only rpcbind is in the namespace, probed from inside it; no veth.
    // A slot whose backing directory is still there (a lab killed before its
    // `lab down`) is skipped: its store is left as it is.
    let leftover = |slot| backing::dir_for(&cfg.backing, slot).exists();
    let ns = netns::create_with(&tools.ip, cfg.net == NetMode::Netns, leftover, |ns| {
        st.netns = Some(ns.clone());
        st.save()
    })
    .map_err(LabError::System)?;
    registry::register(ns.slot, dir).map_err(LabError::System)?;
    let at = net::Listen::of(cfg.net, &ns);
    let all: Vec<u16> = match cfg.net {
        NetMode::Netns => {
            network(cfg, tools, &ns, st)?;
            port_names(&p).iter().map(|(port, _)| *port).collect()
        }
        // Only rpcbind listens in the namespace; the rest was checked on 127.0.0.1.
        NetMode::Loopback => {
            st.mtu = net::loopback_mtu();
            st.save().map_err(LabError::System)?;
            vec![RPCBIND_PORT]
        }
    };
    if let Some(port) = netns::first_port_in_use(&ns, &all).map_err(LabError::System)? {
        let server = port_names(&p)
            .iter()
            .find(|(q, _)| *q == port)
            .map(|(_, s)| *s)
            .unwrap_or("?");
        return Err(LabError::PortInUse {
            port,
            server: server.into(),
            by: format!("on {} in {}", ns.inner_addr(), ns.name),
        });
    }

    go_on(stop)?;
    let b = backing::create(&cfg.backing, cfg.size, ns.slot, |b| {
        st.backing = Some(b.clone());
        st.save()
    })
    .map_err(LabError::System)?;

    // The media layer before the storage host's mount namespace (rpcbind's),
    // which then holds the mount too.
    go_on(stop)?;
    let m = media::start(&cfg.media, &b.dir, st)?;
    go_on(stop)?;
    let store = m.store_path();
    let dev = loopdev::attach(tools, &store).map_err(|e| media::step_failed("loop device", e))?;
    let mut m = m;
    m.loop_dev = Some(dev.clone());
    st.media = Some(m.clone());
    st.save().map_err(LabError::System)?;

    go_on(stop)?;
    let anchor = rpcbind::start(tools, &ns, dir)?;
    record(
        st,
        "rpcbind",
        "rpcbind",
        anchor.clone(),
        ns.inner_addr(),
        vec![RPCBIND_PORT],
    )?;
    rpcbind::wait_ready(tools, &ns, &anchor)?;

    go_on(stop)?;
    let g = ganesha::start(tools, &anchor, cfg.net, &m.mountpoint, p.nfs, p.mountd, dir)?;
    record(
        st,
        "ganesha",
        "nfs-ganesha",
        g.clone(),
        at.addr,
        vec![p.nfs, p.mountd],
    )?;
    ganesha::wait_ready(tools, &anchor, at, &g, p.nfs, p.mountd, backing::FILE)?;

    go_on(stop)?;
    let t = tgt::start(tools, &anchor, at, p.iscsi, dir)?;
    record(st, "tgtd", "tgt", t.clone(), at.addr, vec![p.iscsi])?;
    tgt::configure_and_wait(tools, at, &t, p.iscsi, &store)?;

    go_on(stop)?;
    let n = nbdkit::start(tools, &anchor, at, p.nbd, &store, dir)?;
    record(st, "nbdkit", "nbdkit", n.clone(), at.addr, vec![p.nbd])?;
    nbdkit::wait_ready(tools, at, &n, p.nbd, b.size)?;

    st.targets = Some(Targets {
        local: format!("file:{}", store.display()),
        nfs3: ganesha::url(at, p.nfs, p.mountd, "3"),
        nfs4: ganesha::url(at, p.nfs, p.mountd, "4"),
        nfs41: Some(ganesha::url(at, p.nfs, p.mountd, "4.1")),
        iscsi: tgt::url(at, p.iscsi),
        nbd: nbdkit::url(at, p.nbd),
        block: Some(loopdev::url(&dev, None)),
    });
    st.save().map_err(LabError::System)?;
    go_on(stop)?;
    agents(cfg, tools, st)?;
    go_on(stop)?;
    st.phase = Phase::Up;
    st.save().map_err(LabError::System)
}

/// The bridge and host namespaces (`--hosts`), MTU on every interface of the
/// path, and tbf on every veth end (`--link`). Each host is recorded before it
/// is made.
fn network(cfg: &LabConfig, tools: &Tools, ns: &Netns, st: &mut LabState) -> Result<(), LabError> {
    st.mtu = cfg.mtu;
    st.link = cfg.link.clone();
    st.save().map_err(LabError::System)?;
    if cfg.hosts > 0 {
        st.bridge = Some(hosts::bridge_name(ns));
        st.save().map_err(LabError::System)?;
        let br = hosts::add_bridge(tools, ns)?;
        for k in 1..=cfg.hosts {
            let h = Host::new(ns, k);
            st.hosts.push(h.clone());
            st.save().map_err(LabError::System)?;
            hosts::add_host(tools, ns, &br, &h, cfg.mtu)?;
        }
    }
    let ifs = hosts::path_interfaces(ns, st.bridge.as_deref(), &st.hosts);
    // Bridge ports before the bridge: a bridge's MTU cannot exceed its ports'.
    let (bridge, ports): (Vec<_>, Vec<_>) = ifs
        .iter()
        .partition(|(_, dev)| Some(dev.as_str()) == st.bridge.as_deref());
    for (netns, dev) in ports.iter().chain(bridge.iter()) {
        link::set_mtu(&tools.ip, netns.as_deref(), dev, cfg.mtu).map_err(LabError::System)?;
    }
    if let Some(l) = &cfg.link {
        for (netns, dev) in &ifs {
            if Some(dev.as_str()) == st.bridge.as_deref() {
                continue;
            }
            link::shape(&tools.tc, netns.as_deref(), dev, l, cfg.mtu).map_err(LabError::System)?;
        }
    }
    Ok(())
}

/// The token file and one agent per host, each allowed the lab's network
/// targets and `null:`.
fn agents(cfg: &LabConfig, tools: &Tools, st: &mut LabState) -> Result<(), LabError> {
    if st.hosts.is_empty() || !cfg.agents {
        return Ok(());
    }
    let Some(t) = st.targets.clone() else {
        return Ok(());
    };
    let storlab = std::env::current_exe().map_err(|e| {
        LabError::System(format!(
            "cannot find the storlab binary for the agents: {e}"
        ))
    })?;
    let token_file = cfg.state_dir.join(hosts::TOKEN_FILE);
    st.token_file = Some(token_file.clone());
    st.save().map_err(LabError::System)?;
    crate::fleet::auth::write_token(&token_file).map_err(LabError::System)?;
    let token = crate::fleet::auth::load_token(&token_file).map_err(LabError::System)?;
    let allow = agent_allow(&t);
    for i in 0..st.hosts.len() {
        let h = st.hosts[i].clone();
        let p = hosts::start_agent(
            tools,
            &storlab,
            &h,
            cfg.agent_port,
            &token_file,
            &allow,
            &cfg.state_dir,
        )?;
        st.servers.push(Server {
            name: h.agent_server(),
            package: "storlab".into(),
            version: crate::fleet::wire::STORLAB_VERSION.into(),
            proc: p.clone(),
            addr: h.addr,
            ports: vec![cfg.agent_port],
        });
        st.save().map_err(LabError::System)?;
        hosts::wait_agent(&h, &p, cfg.agent_port, &token)?;
        st.hosts[i].agent = Some(format!("{}:{}", h.addr, cfg.agent_port));
        st.save().map_err(LabError::System)?;
    }
    Ok(())
}

/// The agents' `--allow` entries: each network target of the lab, cut at its
/// export (NFS: every file of the export; iSCSI: every LUN of the target), and `null:`.
pub fn agent_allow(t: &Targets) -> Vec<String> {
    let cut = |url: &str, parts: usize| -> String {
        let url = url.split('?').next().unwrap_or(url);
        // scheme, "", authority, then `parts` path components.
        url.splitn(3 + parts + 1, '/')
            .take(3 + parts)
            .collect::<Vec<_>>()
            .join("/")
    };
    vec![
        cut(&t.nfs3, 1),
        cut(&t.iscsi, 1),
        cut(&t.nbd, 1),
        "null:".into(),
    ]
}

/// The lab recorded in `state_dir`, if any (running or not: see [`LabState::running`]).
pub fn status(state_dir: &Path) -> Option<LabState> {
    LabState::load(state_dir).ok().flatten()
}

/// Files the lab writes in the state directory.
const STATE_FILES: &[&str] = &[
    state::FILE,
    "state.json.tmp",
    "rpcbind.log",
    "ganesha.log",
    "ganesha.conf",
    "ganesha.pid",
    "tgtd.log",
    "nbdkit.log",
    "nbdkit.pid",
    media::LOG,
    "media.ready",
    hosts::TOKEN_FILE,
];

/// Stop every recorded process, delete the target, remove the namespace, the
/// backing store and the state. Works on half-made or stale state; idempotent.
pub fn down(state_dir: &Path) -> Result<(), LabError> {
    let st = LabState::load(state_dir).map_err(LabError::System)?;
    let mut errors: Vec<String> = Vec::new();
    if let Some(st) = &st {
        // loopback: the servers are outside the namespace, but inside the
        // anchor's mount namespace (read while the anchor is known to run).
        let mount_ns = st
            .server("rpcbind")
            .filter(|r| st.net == NetMode::Loopback && st.running(r))
            .and_then(|r| net::MountNs::of(r.proc.pid))
            // Never the mount namespace `down` itself runs in.
            .filter(|m| !net::MountNs::of(std::process::id()).is_some_and(|own| m.same_as(&own)));
        if st.this_boot() {
            for s in st.servers.iter().rev() {
                let gone = if s.name == "tgtd" {
                    tgt::stop(&s.proc)
                } else {
                    s.proc.stop(Duration::from_secs(10))
                };
                if !gone {
                    errors.push(format!("{} (pid {}) would not stop", s.name, s.proc.pid));
                }
            }
        }
        // Anything else in the anchor's mount namespace was started by `up`
        // but not yet recorded. The namespace is let go here: held, its copy
        // of the media layer's FUSE mount would keep that mount busy.
        if let Some(m) = mount_ns {
            for pid in m.pids() {
                process::kill_pid(pid);
            }
        }
        if let Some(ns) = &st.netns {
            let ip = Tools::teardown("ip");
            let mut names: Vec<String> = st.hosts.iter().map(|h| h.name.clone()).collect();
            for n in netns::host_namespaces(ns) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            for n in &names {
                if let Err(e) = hosts::destroy(&ip, n) {
                    errors.push(e);
                }
            }
            // Anything else inside our namespace was started by `up` but not yet recorded.
            for pid in netns::pids(&ip, ns) {
                process::kill_pid(pid);
            }
            if let Err(e) = netns::destroy(&ip, ns) {
                errors.push(e);
            }
            // Only our own record: the slot may be another lab's by now.
            let rec = Path::new(registry::DIR).join(ns.slot.to_string());
            if std::fs::read_to_string(&rec).is_ok_and(|d| Path::new(d.trim()) == state_dir) {
                registry::unregister(ns.slot);
            }
        }
        // After the servers that used it, before the store under it.
        if let Some(m) = &st.media {
            errors.extend(media::stop(m, st.this_boot()));
        }
        if let Some(b) = &st.backing
            && let Err(e) = backing::remove(b)
        {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        remove_state_dir(state_dir);
        Ok(())
    } else {
        Err(LabError::System(format!("lab down: {}", errors.join("; "))))
    }
}

/// Remove the files the lab wrote, then the directory if that left it empty.
fn remove_state_dir(dir: &Path) {
    for f in STATE_FILES {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let _ = std::fs::remove_dir_all(dir.join("ganesha-recovery"));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("agent-h") && name.ends_with(".log") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}
