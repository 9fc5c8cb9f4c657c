//! `storlab lab up|status|down`: the protocol lab (see docs/lab.md).

use super::{CliError, ExitCode};
use crate::lab::{self, Backing, LabConfig, LabError, LabState, Link, MediaChoice, NetMode, Ports};
use crate::workload::units::{format_size, parse_size};
use clap::ValueEnum;
use std::path::{Path, PathBuf};

/// Where the backing store lives.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackingArg {
    /// /dev/shm: never evicted, no disk in the path.
    Ram,
    /// A file on disk, in --backing-dir.
    Disk,
}

/// How `lab up` builds a lab: the options `storlab lab up` and `storlab study` share.
#[derive(clap::Args, Debug, Clone)]
pub struct LabUpArgs {
    /// Where the backing store lives.
    #[arg(long, value_enum, default_value = "ram")]
    backing: BackingArg,
    /// Directory for --backing disk.
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    backing_dir: PathBuf,
    /// Backing store size (k, m, g suffixes: binary).
    #[arg(long, default_value = "1g", value_parser = parse_size)]
    size: u64,
    /// ganesha's NFS port.
    #[arg(long, default_value_t = Ports::default().nfs)]
    nfs_port: u16,
    /// ganesha's MOUNT (NFSv3) port.
    #[arg(long, default_value_t = Ports::default().mountd)]
    mountd_port: u16,
    /// tgtd's iSCSI port.
    #[arg(long, default_value_t = Ports::default().iscsi)]
    iscsi_port: u16,
    /// nbdkit's NBD port.
    #[arg(long, default_value_t = Ports::default().nbd)]
    nbd_port: u16,
    /// Load-generator host namespaces joined to the storage host by a
    /// bridge, each running a `storlab agent` (0: clients in the root namespace).
    #[arg(long, value_name = "N", default_value_t = 0)]
    hosts: u32,
    /// Shape every link with tc tbf: 1gbe, 10gbe, 25gbe or a rate like
    /// 500mbit (default: unshaped).
    #[arg(long, value_name = "1gbe|10gbe|25gbe|RATE", value_parser = Link::parse)]
    link: Option<Link>,
    /// MTU of every interface on the path (--net netns; default 1500).
    #[arg(long)]
    mtu: Option<u32>,
    /// The agents' port (on each host's address).
    #[arg(long, default_value_t = lab::hosts::AGENT_PORT)]
    agent_port: u16,
    /// Make the --hosts namespaces without agents, for agents deployed
    /// another way (`storlab fleet deploy` over ssh).
    #[arg(long)]
    no_agents: bool,
    /// Where the servers listen: loopback (127.0.0.1 of this namespace;
    /// the default without --hosts, --link or --mtu) or netns (the
    /// storage host's namespace, over a veth link; the default with them).
    #[arg(long, value_name = "loopback|netns", value_parser = NetMode::parse)]
    net: Option<NetMode>,
    /// The emulated medium under the store, which every path (the block
    /// baseline, NFS, iSCSI, NBD) goes through: ram, fixed:US, or a preset
    /// (`storlab media` lists them; default: the lab's, `array-15k`); `none`
    /// serves the backing file with no media layer (to measure its cost).
    #[arg(long, value_name = "MEDIUM")]
    pub media: Option<String>,
    /// A media file (TOML) whose preset --media names.
    #[arg(long, value_name = "FILE")]
    media_file: Option<PathBuf>,
}

impl LabUpArgs {
    /// The lab these options describe, with its state in `state_dir`, on the
    /// medium `--media` and `--media-file` name (the lab's default without
    /// `--media`), checked here.
    pub fn config(&self, state_dir: PathBuf) -> Result<LabConfig, CliError> {
        let media = MediaChoice::from_options(self.media.as_deref(), self.media_file.as_deref())
            .map_err(CliError::input)?;
        self.config_on(state_dir, media)
    }

    /// The `--media-file` the media's presets may come from.
    pub fn media_file(&self) -> Option<&Path> {
        self.media_file.as_deref()
    }

    /// The `--net` the user gave, if any.
    pub fn net_given(&self) -> Option<NetMode> {
        self.net
    }

    /// The lab these options describe on `media`, whatever `--media` says
    /// (a study reads its own media from it, one lab each).
    pub fn config_on(&self, state_dir: PathBuf, media: MediaChoice) -> Result<LabConfig, CliError> {
        let networked = self.hosts > 0 || self.link.is_some() || self.mtu.is_some();
        let net = self.net.unwrap_or(if networked {
            NetMode::Netns
        } else {
            NetMode::Loopback
        });
        if self.no_agents && self.hosts == 0 {
            return Err(CliError::input(
                "--no-agents needs --hosts N: without hosts the lab starts no agent",
            ));
        }
        if net == NetMode::Loopback && self.mtu.is_some() {
            return Err(CliError::input(format!(
                "--mtu needs --net netns: --net loopback serves on 127.0.0.1, whose MTU is not \
                 the lab's (allowed --net: {})",
                NetMode::ALLOWED
            )));
        }
        Ok(LabConfig {
            backing: match self.backing {
                BackingArg::Ram => Backing::Ram,
                BackingArg::Disk => Backing::Disk(self.backing_dir.clone()),
            },
            size: self.size,
            ports: Ports {
                nfs: self.nfs_port,
                mountd: self.mountd_port,
                iscsi: self.iscsi_port,
                nbd: self.nbd_port,
            },
            state_dir,
            hosts: self.hosts,
            link: self.link.clone(),
            mtu: self.mtu.unwrap_or(1500),
            agent_port: self.agent_port,
            agents: !self.no_agents,
            net,
            media,
        })
    }
}

/// `storlab lab` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCmd {
    /// Build the backing store and export it over NFSv3, NFSv4, iSCSI and NBD.
    Up {
        /// How to build it.
        #[command(flatten)]
        lab: LabUpArgs,
        /// State directory (state.json, configs, server logs).
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Show the lab: servers, PIDs, versions, addresses and target URLs.
    Status {
        /// Print the state as JSON.
        #[arg(long)]
        json: bool,
        /// State directory.
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Restart one server (ganesha, tgtd or nbdkit) with its recorded ports, e.g. after a crash.
    Restart {
        /// ganesha, tgtd or nbdkit.
        server: String,
        /// State directory.
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
    /// Stop every server, remove the namespace, backing store and state.
    Down {
        /// State directory.
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
}

fn failed(e: LabError) -> CliError {
    match e {
        LabError::BadConfig(_) | LabError::PortInUse { .. } | LabError::AlreadyUp(_) => {
            CliError::input(e.to_string())
        }
        _ => CliError::failed(e.to_string()),
    }
}

/// An absolute state directory (relative ones are taken from the current directory).
fn state_dir(dir: Option<PathBuf>) -> Result<PathBuf, CliError> {
    match dir {
        None => Ok(lab::default_state_dir()),
        Some(d) if d.is_absolute() => Ok(d),
        Some(d) => std::env::current_dir()
            .map(|c| c.join(d))
            .map_err(|e| CliError::input(format!("cannot resolve the state dir: {e}"))),
    }
}

/// The human-readable status.
fn status_text(st: &LabState) -> String {
    let mut out = String::new();
    let state = match st.phase {
        lab::Phase::Up => "up",
        lab::Phase::Starting => "starting (or left half-made: run `storlab lab down`)",
    };
    out.push_str(&format!(
        "lab {state} (state in {})\n",
        st.state_dir.display()
    ));
    match (&st.netns, st.net) {
        (Some(ns), NetMode::Netns) => out.push_str(&format!(
            "storage host: netns {} at {} (veth {} {} in the root namespace)\n",
            ns.name, ns.ns_addr, ns.host_if, ns.host_addr
        )),
        (ns, NetMode::Loopback) => {
            out.push_str(&format!(
                "network: loopback (ganesha, tgtd, nbdkit on 127.0.0.1 of this namespace; no link), MTU {}\n",
                st.mtu
            ));
            match ns {
                Some(ns) if ns.veth => out.push_str(&format!(
                    "rpcbind: contained in netns {} at {} (veth {} {})\n",
                    ns.name, ns.ns_addr, ns.host_if, ns.host_addr
                )),
                Some(ns) => out.push_str(&format!(
                    "rpcbind: contained in netns {} (only lo, no link; reached through /run/rpcbind.sock)\n",
                    ns.name
                )),
                None => {}
            }
        }
        (None, NetMode::Netns) => {}
    }
    match &st.link {
        _ if st.net == NetMode::Loopback => {}
        Some(l) => out.push_str(&format!(
            "link: {} ({} Mbit/s, tc tbf burst {} B limit {} B), MTU {}\n",
            l.name,
            l.rate_bps / 1_000_000,
            l.burst_bytes,
            l.limit_bytes,
            st.mtu
        )),
        None => out.push_str(&format!("link: unshaped, MTU {}\n", st.mtu)),
    }
    if let Some(br) = &st.bridge {
        out.push_str(&format!("bridge: {br} in the storage namespace\n"));
    }
    if let Some(b) = &st.backing {
        out.push_str(&format!(
            "backing: {} {} ({})\n",
            b.kind,
            b.path.display(),
            format_size(b.size)
        ));
    }
    if let Some(m) = st.media.as_ref().filter(|m| m.media == MediaChoice::None) {
        out.push_str(&format!(
            "media: none (every server opens the backing file in {} itself)\n",
            m.mountpoint.display()
        ));
    } else if let Some(m) = &st.media {
        let file = m
            .media
            .file()
            .map(|f| format!(" from {}", f.display()))
            .unwrap_or_default();
        let server = match &m.server {
            Some(p) => format!(
                "media server pid {} {}",
                p.pid,
                if st.media_running() == Some(true) {
                    "running"
                } else {
                    "DEAD"
                }
            ),
            None => "no media server".into(),
        };
        out.push_str(&format!(
            "media: {}{file} mounted at {} ({server})\n",
            m.media.spec(),
            m.mountpoint.display()
        ));
        if let Some(l) = &m.loop_dev {
            let dio = match &l.note {
                None => "direct I/O".to_string(),
                Some(n) => format!("no direct I/O: {n}"),
            };
            out.push_str(&format!(
                "block baseline: {} over {} ({dio})\n",
                l.name,
                m.store_path().display()
            ));
        }
    }
    out.push_str("servers:\n");
    for s in &st.servers {
        let ports: Vec<String> = s.ports.iter().map(|p| p.to_string()).collect();
        out.push_str(&format!(
            "  {:<8} pid {:<7} {:<7} {} {}  {}:{}\n",
            s.name,
            s.proc.pid,
            if st.running(s) { "running" } else { "DEAD" },
            s.package,
            s.version,
            s.addr,
            ports.join(",")
        ));
    }
    if let Some(t) = &st.targets {
        out.push_str("targets:\n");
        for (name, url) in t.list() {
            out.push_str(&format!("  {name:<6} {url}\n"));
        }
    }
    if !st.hosts.is_empty() {
        out.push_str("hosts:\n");
        for h in &st.hosts {
            out.push_str(&format!(
                "  {:<14} {:<13} agent {}\n",
                h.name,
                h.addr,
                h.agent.as_deref().unwrap_or("-")
            ));
        }
        if let Some(tf) = &st.token_file {
            out.push_str(&format!("token file: {}\n", tf.display()));
            let agents = st.agents();
            if !agents.is_empty() {
                out.push_str(&format!(
                    "run: storlab run --hosts {} --token-file {} --vms {} --target URL ...\n",
                    agents.join(","),
                    tf.display(),
                    agents.len()
                ));
            }
        }
    }
    out
}

/// Run a `storlab lab` subcommand.
pub fn run(cmd: LabCmd) -> Result<ExitCode, CliError> {
    match cmd {
        LabCmd::Up {
            lab,
            state_dir: dir,
        } => {
            let cfg = lab.config(state_dir(dir)?)?;
            // Ctrl-C: `up` stops between steps and takes down what it made.
            super::signals::install();
            let st = lab::up_until(&cfg, &super::signals::STOP).map_err(failed)?;
            print!("{}", status_text(&st));
            Ok(ExitCode::Ok)
        }
        LabCmd::Status {
            json,
            state_dir: dir,
        } => {
            let dir = state_dir(dir)?;
            let st = lab::status(&dir);
            if json {
                let text = serde_json::to_string_pretty(&st)
                    .map_err(|e| CliError::failed(format!("encoding JSON: {e}")))?;
                println!("{text}");
            }
            let Some(st) = st else {
                if !json {
                    println!("no lab (nothing recorded in {})", dir.display());
                }
                return Ok(ExitCode::Ok);
            };
            if !json {
                print!("{}", status_text(&st));
            }
            // The media server too: every path goes through it.
            let healthy = st.phase == lab::Phase::Up
                && st.media_running() != Some(false)
                && st.servers.iter().all(|s| st.running(s));
            Ok(if healthy {
                ExitCode::Ok
            } else {
                ExitCode::Failed
            })
        }
        LabCmd::Restart {
            server,
            state_dir: dir,
        } => {
            let dir = state_dir(dir)?;
            lab::restart::restart(&dir, &server).map_err(failed)?;
            println!("{server} restarted");
            Ok(ExitCode::Ok)
        }
        LabCmd::Down { state_dir: dir } => {
            let dir = state_dir(dir)?;
            lab::down(&dir).map_err(failed)?;
            println!("lab down");
            Ok(ExitCode::Ok)
        }
    }
}
