//! The lab's record, `state.json` in the state directory: written after every
//! step of `up`, so `down` can undo a half-made lab after a crash.

use super::backing::BackingInfo;
use super::hosts::Host;
use super::link::Link;
use super::media_choice::MediaChoice;
use super::net::NetMode;
use super::netns::Netns;
use super::targets::{LabTarget, Reach};
use crate::media::dirty::Written;
use crate::process::Proc;
use crate::target::Target;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The state file's name inside the state directory.
pub const FILE: &str = "state.json";

/// How far `up` got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `up` is running (or crashed part-way).
    Starting,
    /// Every server passed its readiness probe.
    Up,
}

/// One supervised server process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// `rpcbind`, `ganesha`, `tgtd` or `nbdkit`.
    pub name: String,
    /// Debian package it comes from.
    pub package: String,
    /// That package's version (dpkg-query).
    pub version: String,
    /// Its process.
    #[serde(flatten)]
    pub proc: Proc,
    /// Address it listens on.
    pub addr: Ipv4Addr,
    /// TCP ports it listens on.
    pub ports: Vec<u16>,
}

/// The target URLs of the lab, one per way of reaching the backing store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Targets {
    /// `file:BACKING`: the backing file itself.
    pub local: String,
    /// `nfs://ADDR:PORT/EXPORT/FILE?version=3`.
    pub nfs3: String,
    /// `nfs://ADDR:PORT/EXPORT/FILE?version=4`.
    pub nfs4: String,
    /// `nfs://ADDR:PORT/EXPORT/FILE?version=4.1` (labs recorded before
    /// storlab spoke NFSv4.1 have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nfs41: Option<String>,
    /// `iscsi://ADDR:PORT/IQN/1`.
    pub iscsi: String,
    /// `nbd://ADDR:PORT/EXPORT`.
    pub nbd: String,
    /// `file:/dev/loopN`: the block baseline, the loop device over the store
    /// (labs recorded before the media layer have none).
    #[serde(default)]
    pub block: Option<String>,
}

impl Targets {
    /// The URL of lab target `t` on this lab: `None` for one it has not (the
    /// block baseline and its capped targets, or NFSv4.1, on labs recorded
    /// before them). A capped target is the block baseline's path with the
    /// target's FC or FCoE link.
    pub fn url(&self, t: LabTarget) -> Option<String> {
        match t.reach() {
            Reach::Block => self.block.clone(),
            Reach::Capped(wire, link) => {
                let block = Target::parse(self.block.as_deref()?).ok()?;
                let capped = Target::Fc {
                    path: block.local_path()?.to_path_buf(),
                    link: link.to_string(),
                    wire,
                };
                Some(capped.to_string())
            }
            Reach::Local => Some(self.local.clone()),
            Reach::Served { .. } => match t {
                LabTarget::Nfs3 => Some(self.nfs3.clone()),
                LabTarget::Nfs4 => Some(self.nfs4.clone()),
                LabTarget::Nfs41 => self.nfs41.clone(),
                LabTarget::Iscsi => Some(self.iscsi.clone()),
                LabTarget::Nbd => Some(self.nbd.clone()),
                _ => None,
            },
        }
    }

    /// (name, URL) pairs of every target the lab has, in [`LabTarget::all`]'s
    /// order: the block baseline and its FC and FCoE links first (when the
    /// lab has one), then `local` and the protocols.
    pub fn list(&self) -> Vec<(&'static str, String)> {
        LabTarget::all()
            .filter_map(|t| self.url(t).map(|u| (t.name(), u)))
            .collect()
    }
}

/// Everything the lab made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabState {
    /// The state directory.
    pub state_dir: PathBuf,
    /// `/proc/sys/kernel/random/boot_id` at `up`: PIDs of another boot mean nothing.
    pub boot_id: String,
    /// How far `up` got.
    pub phase: Phase,
    /// The storage host's network namespace, once made.
    pub netns: Option<Netns>,
    /// The backing store, once made.
    pub backing: Option<BackingInfo>,
    /// The media layer over the backing store, once started (labs recorded
    /// before it have none: their servers use the backing file itself).
    #[serde(default)]
    pub media: Option<MediaInfo>,
    /// Servers in start order.
    pub servers: Vec<Server>,
    /// Target URLs, once every server is ready.
    pub targets: Option<Targets>,
    /// Where the servers listen: 127.0.0.1 (`loopback`) or the storage
    /// host's namespace (`netns`, also the mode of labs recorded before modes).
    #[serde(default = "NetMode::recorded_before_modes")]
    pub net: NetMode,
    /// Shaping of every link (tc tbf); None: unshaped.
    #[serde(default)]
    pub link: Option<Link>,
    /// MTU of every interface on the path.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// The bridge in the storage namespace (`--hosts` only).
    #[serde(default)]
    pub bridge: Option<String>,
    /// Load-generator host namespaces (`--hosts`), recorded before each is made.
    #[serde(default)]
    pub hosts: Vec<Host>,
    /// The agents' bearer token file (`--hosts` only).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

/// The MTU of a lab recorded before MTUs were (the veth default).
fn default_mtu() -> u32 {
    1500
}

/// This boot's id.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl LabState {
    /// A fresh record for `state_dir`.
    pub fn new(state_dir: &Path) -> LabState {
        LabState {
            state_dir: state_dir.to_path_buf(),
            boot_id: boot_id(),
            phase: Phase::Starting,
            netns: None,
            backing: None,
            media: None,
            servers: Vec::new(),
            targets: None,
            net: NetMode::recorded_before_modes(),
            link: None,
            mtu: default_mtu(),
            bridge: None,
            hosts: Vec::new(),
            token_file: None,
        }
    }

    /// Whether the record's PIDs belong to this boot.
    pub fn this_boot(&self) -> bool {
        self.boot_id == boot_id()
    }

    /// Whether server `s` still runs.
    pub fn running(&self, s: &Server) -> bool {
        self.this_boot() && s.proc.alive()
    }

    /// Whether the media server still runs (`None`: the lab has no media
    /// layer, as labs recorded before it or made with `--media none`).
    pub fn media_running(&self) -> Option<bool> {
        let m = self
            .media
            .as_ref()
            .filter(|m| m.media != MediaChoice::None)?;
        Some(
            m.server
                .as_ref()
                .is_some_and(|p| self.this_boot() && p.alive()),
        )
    }

    /// Whether any recorded server still runs.
    pub fn any_running(&self) -> bool {
        self.servers.iter().any(|s| self.running(s))
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The directory the servers serve (the media mount, or the backing
    /// directory of a lab recorded before media) and the store file in it.
    pub fn served(&self) -> Option<(PathBuf, PathBuf)> {
        match (&self.media, &self.backing) {
            (Some(m), _) => Some((m.mountpoint.clone(), m.store_path())),
            (None, Some(b)) => Some((b.dir.clone(), b.path.clone())),
            (None, None) => None,
        }
    }

    /// The agents' `ADDR:PORT`s, in host order.
    pub fn agents(&self) -> Vec<String> {
        self.hosts.iter().filter_map(|h| h.agent.clone()).collect()
    }

    /// Read the record in `state_dir`; None if there is none. An unreadable
    /// record is an error (down must not guess).
    pub fn load(state_dir: &Path) -> Result<Option<LabState>, String> {
        let path = state_dir.join(FILE);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("cannot parse {}: {e}", path.display())),
        }
    }

    /// Write the record atomically (temporary file + rename).
    pub fn save(&self) -> Result<(), String> {
        let path = self.state_dir.join(FILE);
        let tmp = self.state_dir.join(format!("{FILE}.tmp"));
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| format!("encoding state: {e}"))?;
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

impl LabState {
    /// The lab's network, as a run document records it.
    pub fn network(&self) -> crate::model::Network {
        crate::model::Network {
            lab: self.state_dir.display().to_string(),
            link: self.link.as_ref().map(|l| l.name.clone()),
            link_rate_bps: self.link.as_ref().map(|l| l.rate_bps),
            mtu: self.mtu,
            hosts: self.hosts.iter().map(|h| h.name.clone()).collect(),
            net: Some(self.net.as_str().to_string()),
            medium: self.media.as_ref().map(|m| m.media.spec().to_string()),
        }
    }
}

/// The media layer as made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaInfo {
    /// What it serves the store on, recorded as `spec` (the `--media` name,
    /// `none` for no layer) and `file` (the `--media-file`, if any).
    #[serde(flatten)]
    pub media: MediaChoice,
    /// Where the media file system is mounted (the backing directory itself
    /// under `--media none`).
    pub mountpoint: PathBuf,
    /// The media server, once it answers.
    #[serde(default)]
    pub server: Option<Proc>,
    /// The block baseline's loop device, once attached.
    #[serde(default)]
    pub loop_dev: Option<super::loopdev::LoopDev>,
}

impl MediaInfo {
    /// The store file as every server and the loop device see it.
    pub fn store_path(&self) -> PathBuf {
        self.mountpoint.join(super::backing::FILE)
    }

    /// Return the medium to its initial state (idle, caches empty), as after
    /// `lab up`: a no-op without a media server.
    pub fn reset(&self) -> Result<(), String> {
        match &self.server {
            Some(p) => {
                crate::media::serve::MediaServer::from_proc(p.clone(), &self.mountpoint).reset()
            }
            None => Ok(()),
        }
    }

    /// [`MediaInfo::reset`], and take what was written to the store through
    /// the media layer since the last take
    /// ([`crate::media::serve::MediaServer::reset_taking_written`]);
    /// `Unknown` without a media server (nothing sees the writes).
    pub fn reset_taking_written(&self) -> Result<Written, String> {
        match &self.server {
            Some(p) => crate::media::serve::MediaServer::from_proc(p.clone(), &self.mountpoint)
                .reset_taking_written(),
            None => Ok(Written::Unknown(format!(
                "no media layer (--media {}): nothing records the writes",
                self.media.spec()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(block: Option<&str>, nfs41: Option<&str>) -> Targets {
        Targets {
            local: "file:/s/media/disk.img".into(),
            nfs3: "nfs://127.0.0.1:12049/storlab/disk.img?version=3&mountport=12050".into(),
            nfs4: "nfs://127.0.0.1:12049/storlab/disk.img?version=4".into(),
            nfs41: nfs41.map(String::from),
            iscsi: "iscsi://127.0.0.1:13260/iqn.2025-01.org.storlab:lab/1".into(),
            nbd: "nbd://127.0.0.1:10810/storlab".into(),
            block: block.map(String::from),
        }
    }

    #[test]
    fn every_lab_target_has_its_url_in_order() {
        let t = targets(
            Some("file:/dev/loop7"),
            Some("nfs://127.0.0.1:12049/storlab/disk.img?version=4.1"),
        );
        let list = t.list();
        let names: Vec<&str> = list.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, LabTarget::NAMES);
        let url = |n: &str| list.iter().find(|(name, _)| *name == n).unwrap().1.clone();
        assert_eq!(url("block"), "file:/dev/loop7");
        assert_eq!(url("fc2"), "file:/dev/loop7?fc=2gfc");
        assert_eq!(url("fc32"), "file:/dev/loop7?fc=32gfc");
        assert_eq!(url("fcoe10"), "file:/dev/loop7?fcoe=10gbe");
        assert_eq!(url("nbd"), t.nbd);
        // Each URL is a target, and the capped ones are the block device.
        for (name, u) in &list {
            let target = Target::parse(u).unwrap_or_else(|e| panic!("{name}: {e}"));
            let lab = LabTarget::parse(name).unwrap();
            assert_eq!(
                target.network_protocol().is_some(),
                lab.server().is_some(),
                "{name}"
            );
            if lab.cap().is_some() {
                assert_eq!(target.storage(), Target::File("/dev/loop7".into()));
            }
        }
    }

    #[test]
    fn a_lab_recorded_before_the_block_baseline_or_nfs41_lists_what_it_has() {
        let names: Vec<&str> = targets(None, None)
            .list()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["local", "nfs3", "nfs4", "iscsi", "nbd"]);
        assert_eq!(targets(None, None).url(LabTarget::Fcoe10), None);
    }

    #[test]
    fn a_media_record_of_the_old_code_loads_and_is_written_back_the_same() {
        // As the code before the typed choice wrote them (`spec` a string,
        // "none" for no layer).
        for (json, want) in [
            (
                r#"{"spec":"none","file":null,"mountpoint":"/dev/shm/storlab-lab1","server":null,"loop_dev":null}"#,
                MediaChoice::None,
            ),
            (
                r#"{"spec":"array-15k","file":null,"mountpoint":"/s/media","server":null,"loop_dev":null}"#,
                MediaChoice::lab_default(),
            ),
        ] {
            let m: MediaInfo = serde_json::from_str(json).unwrap();
            assert_eq!(m.media, want);
            assert_eq!(serde_json::to_string(&m).unwrap(), json);
        }
        let st: LabState = serde_json::from_str(
            r#"{"state_dir":"/x","boot_id":"b","phase":"up","netns":null,"backing":null,
                "servers":[],"targets":null,"media":{"spec":"none","mountpoint":"/b"}}"#,
        )
        .unwrap();
        assert_eq!(st.media.unwrap().media, MediaChoice::None);
    }

    #[test]
    fn a_state_file_without_hosts_or_link_loads() {
        let old = r#"{"state_dir":"/x","boot_id":"b","phase":"up","netns":null,
            "backing":null,"servers":[],"targets":null}"#;
        let st: LabState = serde_json::from_str(old).unwrap();
        assert_eq!(st.mtu, 1500);
        assert_eq!(st.net, NetMode::Netns);
        assert!(st.link.is_none() && st.hosts.is_empty() && st.token_file.is_none());
        assert!(st.agents().is_empty());
        assert!(st.media.is_none() && st.served().is_none());
    }
}
