//! Target URLs: where a run sends its I/O.
//!
//! `file:PATH` is a directory (storlab creates one file per VM disk in it), a
//! regular file, or a block device; kernel-attached storage of any protocol (FC,
//! FCoE, a kernel iSCSI LUN, an NFS mount, NVMe-oF) is reached this way through
//! its device or mount path. `file:PATH?fc=8gfc` is the same path reached as
//! over a Fibre Channel link: the lab's block baseline in the FC role, capped
//! at the link's payload rate (`1gfc` .. `32gfc`, the wire model's FC links;
//! the wire model gives the rate); `file:PATH?fcoe=10gbe` the same over FCoE,
//! FC frames in Ethernet on a link of 10 Gb/s or more (`10gbe` .. `100gbe`;
//! [`FcWire`]). A `?` anywhere else in a `file:` path is part of the path.
//! `null:` completes every I/O at once. The protocol schemes reach servers
//! from user space:
//!
//! * `nfs://HOST[:PORT]/EXPORT/PATH?version=3|4|4.0|4.1` — a file on an NFS
//!   export; without `version`, 3 (`4` is 4.0; `4.1` uses sessions). The export is the first path component unless
//!   `export=/A/B` is given (`nfs://h/ignored?export=/a/b&file=f` is not
//!   supported: the path after the export is the file).
//! * `iscsi://HOST[:PORT]/IQN/LUN` — a LUN of an iSCSI target.
//! * `nbd://HOST[:PORT][/EXPORT]` and `nbd+unix:///EXPORT?socket=PATH` — an
//!   NBD export over TCP or a Unix socket (the NBD URI standard). Both take
//!   `replies=simple|structured` (default simple: see [`NbdReplies`]).
//!
//! `nfs://`, `iscsi://` and `nbd://` take `nconnect=N` (1..=[`MAX_NCONNECT`],
//! default 1): one backend's requests go round robin over N TCP connections
//! to the target (Linux's NFS mount option of that name; for iSCSI, N
//! sessions; for NBD, the server must advertise multi-conn).

use crate::linkmodel::Protocol;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Each scheme's form, by the prefix that selects it, in the order an error
/// lists them.
fn scheme_forms() -> [(&'static str, &'static str); 6] {
    // The `file:` form names the wire model's links, so it is made once.
    static FILE_FORM: LazyLock<String> = LazyLock::new(|| {
        let caps: Vec<String> = FcWire::ALL
            .iter()
            .map(|w| {
                let links = w.links();
                let (first, last) = (links.first(), links.last());
                format!(
                    "?{}={}..{}",
                    w.key(),
                    first.map_or("", String::as_str),
                    last.map_or("", String::as_str)
                )
            })
            .collect();
        format!("file:PATH[{}]", caps.join("|"))
    });
    [
        ("file:", FILE_FORM.as_str()),
        ("null:", "null:"),
        (
            "nfs:",
            "nfs://HOST[:PORT]/EXPORT/FILE?version=3|4|4.0|4.1[&nconnect=1..16][&stable=unstable|file][&mountport=PORT]",
        ),
        ("iscsi:", "iscsi://HOST[:PORT]/IQN/LUN[?nconnect=1..16]"),
        (
            "nbd:",
            "nbd://HOST[:PORT]/EXPORT[?replies=simple|structured][&nconnect=1..16]",
        ),
        ("nbd+unix:", "nbd+unix:///EXPORT?socket=PATH"),
    ]
}

/// Every scheme's form, as an error lists them.
pub fn allowed_schemes() -> String {
    scheme_forms().map(|(_, form)| form).join(", ")
}

/// The form of the scheme `input` starts with (the longest prefix, so
/// `nbd+unix:` is not taken for `nbd:`); None for an unknown scheme.
fn scheme_form(input: &str) -> Option<&'static str> {
    scheme_forms()
        .into_iter()
        .filter(|(prefix, _)| input.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, form)| form)
}

/// The most connections `nconnect=N` may ask for (Linux's NFS client caps
/// its mount option at 16 too).
pub const MAX_NCONNECT: u8 = 16;

/// Parse `nconnect=N`; the error names the option and its allowed values.
fn parse_nconnect(v: &str) -> Result<u8, String> {
    v.parse::<u8>()
        .ok()
        .filter(|n| (1..=MAX_NCONNECT).contains(n))
        .ok_or(format!(
            "invalid nconnect={v:?} (allowed: 1..={MAX_NCONNECT})"
        ))
}

/// How the link of a capped `file:` target carries the block path's FCP
/// frames: natively (`?fc=LINK`) or in Ethernet frames (`?fcoe=LINK`). The
/// links each may name, and what they carry, are the wire model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcWire {
    /// Fibre Channel (FC-FS): `?fc=` one of the FC links, `1gfc` .. `32gfc`.
    Fc,
    /// FC over Ethernet (FC-BB-5): `?fcoe=` an Ethernet link FCoE runs on,
    /// `10gbe` .. `100gbe`.
    Fcoe,
}

impl FcWire {
    /// Both, in the order an error lists them.
    pub const ALL: [FcWire; 2] = [FcWire::Fc, FcWire::Fcoe];

    /// The URL key that names its link: `fc` or `fcoe`.
    pub fn key(self) -> &'static str {
        match self {
            FcWire::Fc => "fc",
            FcWire::Fcoe => "fcoe",
        }
    }

    /// Its name in text: `FC` or `FCoE`.
    pub fn name(self) -> &'static str {
        match self {
            FcWire::Fc => "FC",
            FcWire::Fcoe => "FCoE",
        }
    }

    /// The wire model's protocol: FCP in FC frames, or in FCoE frames.
    pub fn protocol(self) -> Protocol {
        match self {
            FcWire::Fc => Protocol::Fc,
            FcWire::Fcoe => Protocol::Fcoe,
        }
    }

    /// The links its key may name: the wire model's catalogued links that
    /// carry its protocol, slowest first.
    pub fn links(self) -> Vec<String> {
        self.protocol()
            .links()
            .into_iter()
            .map(|l| l.name)
            .collect()
    }

    /// `link` if its key may name it; else the error naming the key, the
    /// value and the allowed links.
    fn check(self, link: &str) -> Result<String, String> {
        let allowed = self.links();
        if allowed.iter().any(|l| l == link) {
            Ok(link.to_string())
        } else {
            Err(format!(
                "invalid {}={link:?} (allowed: {})",
                self.key(),
                allowed.join(", ")
            ))
        }
    }
}

/// Default ports of the protocols.
pub const NFS_PORT: u16 = 2049;
/// iSCSI's registered port.
pub const ISCSI_PORT: u16 = 3260;
/// NBD's registered port.
pub const NBD_PORT: u16 = 10809;

/// A parsed target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The null backend: no storage, the engine's own ceiling.
    Null,
    /// A local path: directory, regular file or block device, through io_uring.
    File(PathBuf),
    /// A local path (normally a block device) reached as over a Fibre Channel
    /// link, native or in Ethernet (FCoE): the file backend, its bandwidth
    /// capped at the link's payload rate.
    Fc {
        /// The directory, file or device.
        path: PathBuf,
        /// The link, one of `wire`'s ([`FcWire::links`]).
        link: String,
        /// How the link carries the frames: FC or FCoE.
        wire: FcWire,
    },
    /// A file on an NFS export.
    Nfs(NfsTarget),
    /// A LUN of an iSCSI target.
    Iscsi {
        /// Portal host.
        host: String,
        /// Portal port.
        port: u16,
        /// Target IQN.
        iqn: String,
        /// Logical unit number.
        lun: u32,
        /// Sessions the requests are spread over (`?nconnect=N`).
        nconnect: u8,
    },
    /// An NBD export.
    Nbd {
        /// Host and port, or a Unix socket.
        addr: NbdAddr,
        /// Export name ("" is the default export).
        export: String,
        /// Which replies to ask the server for.
        replies: NbdReplies,
        /// Connections the requests are spread over (`?nconnect=N`, multi-conn).
        nconnect: u8,
    },
}

/// An `nfs://` target's parts ([`Target::Nfs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfsTarget {
    /// Server host name or address.
    pub host: String,
    /// Server port (NFS; for v3 the MOUNT port is asked of the server's portmapper
    /// unless `mount_port` is given).
    pub port: u16,
    /// MOUNT protocol port for v3 (`?mountport=N`), when no portmapper runs.
    pub mount_port: Option<u16>,
    /// Export path, e.g. "/export".
    pub export: String,
    /// File path inside the export, e.g. "data/disk0.img".
    pub path: String,
    /// 3 or 4.
    pub version: u8,
    /// The NFSv4 minor version: 0 or 1 (0 for v3).
    pub minor: u8,
    /// TCP connections the requests are spread over (`?nconnect=N`).
    pub nconnect: u8,
    /// Every WRITE asks for FILE_SYNC whatever the workload's sync mode
    /// (`?stable=file`), as ESXi's NFS client writes to a datastore;
    /// false (`?stable=unstable`, the default): UNSTABLE writes and a
    /// COMMIT at the end unless the workload asks for sync.
    pub file_sync: bool,
}

/// The reply format an NBD client asks for in the handshake.
///
/// Simple replies (a 16-byte header, then the data) are what the Linux
/// kernel's NBD driver speaks, and they cost one header and one receive per
/// read less than structured replies (a chunk header, an offset, then the
/// data), on the client and on the server. Structured replies add sparse
/// reads and richer errors, which a benchmark's dense reads do not use; libnbd
/// (and so fio's nbd engine) asks for them by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NbdReplies {
    /// Simple replies, as the kernel's NBD client.
    #[default]
    Simple,
    /// Structured replies, as libnbd and qemu by default.
    Structured,
}

impl NbdReplies {
    fn parse(v: &str) -> Result<NbdReplies, String> {
        match v {
            "simple" => Ok(NbdReplies::Simple),
            "structured" => Ok(NbdReplies::Structured),
            _ => Err(format!(
                "invalid replies={v:?} (allowed: simple, structured)"
            )),
        }
    }

    /// The URL query suffix that selects this format ("" for the default).
    fn query(self, first: bool) -> &'static str {
        match (self, first) {
            (NbdReplies::Simple, _) => "",
            (NbdReplies::Structured, true) => "?replies=structured",
            (NbdReplies::Structured, false) => "&replies=structured",
        }
    }
}

/// Where an NBD server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NbdAddr {
    /// TCP.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// A Unix domain socket.
    Unix(PathBuf),
}

/// A target string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    /// What the user typed.
    pub input: String,
    /// Why it is wrong.
    pub reason: String,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A known scheme's error shows that scheme's form alone: its reason
        // may already list the allowed values of one parameter, and the whole
        // list of schemes beside it would bury them.
        match scheme_form(&self.input) {
            Some(form) => write!(
                f,
                "invalid target {:?}: {} (form: {form})",
                self.input, self.reason
            ),
            None => write!(
                f,
                "invalid target {:?}: {} (allowed: {})",
                self.input,
                self.reason,
                allowed_schemes()
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// Split `host[:port]` (with `[v6]` brackets) into host and port.
fn host_port(authority: &str, default: u16) -> Result<(String, u16), String> {
    if authority.is_empty() {
        return Err("no host".into());
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("unclosed [ in host")?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    // A bracket inside the host would print as another URL (found by the
    // cli_args fuzz target: `13[:]::260`).
    if host.contains(['[', ']']) {
        return Err(format!(
            "invalid host {host:?}: [ ] only around a whole IPv6 address, e.g. [::1]:PORT"
        ));
    }
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or(format!("invalid port {p:?} (allowed: 1..=65535)"))?,
        None => default,
    };
    Ok((host.to_string(), port))
}

/// Split a URL's rest (after `scheme://`) into authority, path and query pairs.
fn split_url(rest: &str) -> (&str, &str, Vec<(&str, &str)>) {
    let (before_q, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = match before_q.find('/') {
        Some(i) => (&before_q[..i], &before_q[i..]),
        None => (before_q, ""),
    };
    let pairs = query
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .collect();
    (authority, path, pairs)
}

impl Target {
    /// Parse a target URL; the error names the input and the allowed forms.
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        Self::parse_as(s, false)
    }

    /// Parse a target URL that names a directory (the metadata workload's):
    /// as [`Target::parse`], but an `nfs://` URL may end at the export
    /// (`nfs://HOST[:PORT]/EXPORT[/DIR]`), its `path` then the directory in
    /// the export ("" for the export's root).
    pub fn parse_dir(s: &str) -> Result<Target, TargetError> {
        Self::parse_as(s, true)
    }

    fn parse_as(s: &str, dir: bool) -> Result<Target, TargetError> {
        let err = |reason: &str| TargetError {
            input: s.to_string(),
            reason: reason.to_string(),
        };
        if s.contains('\0') {
            return Err(err("contains a NUL byte"));
        }
        let Some((scheme, rest)) = s.split_once(':') else {
            return Err(err("no scheme"));
        };
        match scheme {
            "null" => {
                if rest.is_empty() || rest == "//" {
                    Ok(Target::Null)
                } else {
                    Err(err("null: takes no path"))
                }
            }
            "file" => {
                let path = rest.strip_prefix("//").unwrap_or(rest);
                // The last `?fc=` or `?fcoe=` caps the path; any other `?`
                // is part of it.
                let cap = FcWire::ALL
                    .into_iter()
                    .filter_map(|w| path.rfind(&format!("?{}=", w.key())).map(|at| (at, w)))
                    .max_by_key(|&(at, _)| at);
                if let Some((at, wire)) = cap {
                    let (p, link) = (&path[..at], &path[at + wire.key().len() + 2..]);
                    if p.is_empty() {
                        return Err(err("file: needs a path"));
                    }
                    return Ok(Target::Fc {
                        path: PathBuf::from(p),
                        link: wire.check(link).map_err(|r| err(&r))?,
                        wire,
                    });
                }
                if path.is_empty() {
                    return Err(err("file: needs a path"));
                }
                Ok(Target::File(PathBuf::from(path)))
            }
            "nfs" | "iscsi" | "nbd" | "nbd+unix" => {
                let rest = rest
                    .strip_prefix("//")
                    .ok_or_else(|| err(&format!("{scheme}: needs {scheme}://")))?;
                let (authority, path, query) = split_url(rest);
                match scheme {
                    "nfs" => Self::parse_nfs(authority, path, &query, dir).map_err(|r| err(&r)),
                    "iscsi" => Self::parse_iscsi(authority, path, &query).map_err(|r| err(&r)),
                    "nbd" => {
                        let (host, port) = host_port(authority, NBD_PORT).map_err(|r| err(&r))?;
                        let mut replies = NbdReplies::default();
                        let mut nconnect = 1;
                        for (k, v) in &query {
                            match *k {
                                "replies" => replies = NbdReplies::parse(v).map_err(|r| err(&r))?,
                                "nconnect" => nconnect = parse_nconnect(v).map_err(|r| err(&r))?,
                                other => {
                                    return Err(err(&format!(
                                        "unknown query parameter {other:?} (allowed: replies, nconnect)"
                                    )));
                                }
                            }
                        }
                        let export = path.strip_prefix('/').unwrap_or(path).to_string();
                        Ok(Target::Nbd {
                            addr: NbdAddr::Tcp { host, port },
                            export,
                            replies,
                            nconnect,
                        })
                    }
                    _ => {
                        if !authority.is_empty() {
                            return Err(err(
                                "nbd+unix:// takes no host: nbd+unix:///EXPORT?socket=PATH",
                            ));
                        }
                        let mut socket = None;
                        let mut replies = NbdReplies::default();
                        let mut nconnect = 1;
                        for (k, v) in &query {
                            match *k {
                                "socket" if !v.is_empty() => socket = Some(PathBuf::from(v)),
                                "replies" => replies = NbdReplies::parse(v).map_err(|r| err(&r))?,
                                "nconnect" => nconnect = parse_nconnect(v).map_err(|r| err(&r))?,
                                other => {
                                    return Err(err(&format!(
                                        "unknown query parameter {other:?} \
                                         (allowed: socket, replies, nconnect)"
                                    )));
                                }
                            }
                        }
                        let socket = socket.ok_or_else(|| err("nbd+unix:// needs ?socket=PATH"))?;
                        let export = path.strip_prefix('/').unwrap_or(path).to_string();
                        Ok(Target::Nbd {
                            addr: NbdAddr::Unix(socket),
                            export,
                            replies,
                            nconnect,
                        })
                    }
                }
            }
            "" => Err(err("empty scheme")),
            other => Err(err(&format!("unknown scheme {other:?}"))),
        }
    }

    fn parse_nfs(
        authority: &str,
        path: &str,
        query: &[(&str, &str)],
        dir: bool,
    ) -> Result<Target, String> {
        let (host, port) = host_port(authority, NFS_PORT)?;
        let mut version = 3u8;
        let mut minor = 0u8;
        let mut mount_port = None;
        let mut export_override = None;
        let mut nconnect = 1;
        let mut file_sync = false;
        for (k, v) in query {
            match *k {
                "version" => {
                    (version, minor) = match *v {
                        "3" => (3, 0),
                        "4" | "4.0" => (4, 0),
                        "4.1" => (4, 1),
                        _ => {
                            return Err(format!("invalid version={v:?} (allowed: 3, 4, 4.0, 4.1)"));
                        }
                    }
                }
                "mountport" => {
                    mount_port = Some(
                        v.parse::<u16>()
                            .ok()
                            .filter(|p| *p > 0)
                            .ok_or(format!("invalid mountport={v:?} (allowed: 1..=65535)"))?,
                    )
                }
                "export" => export_override = Some(v.to_string()),
                "nconnect" => nconnect = parse_nconnect(v)?,
                "stable" => {
                    file_sync = match *v {
                        "file" => true,
                        "unstable" => false,
                        _ => {
                            return Err(format!("invalid stable={v:?} (allowed: unstable, file)"));
                        }
                    }
                }
                other => {
                    return Err(format!(
                        "unknown query parameter {other:?} \
                         (allowed: version, mountport, export, nconnect, stable)"
                    ));
                }
            }
        }
        let (export, file) = match export_override {
            Some(e) => {
                let e = format!("/{}", e.trim_matches('/'));
                let file = path
                    .strip_prefix(&e)
                    .unwrap_or(path)
                    .trim_start_matches('/')
                    .to_string();
                (e, file)
            }
            None => {
                let trimmed = path.trim_start_matches('/');
                match trimmed.split_once('/') {
                    Some((e, f)) => (format!("/{e}"), f.to_string()),
                    None if dir && !trimmed.is_empty() => (format!("/{trimmed}"), String::new()),
                    None if dir => return Err("nfs:// needs /EXPORT[/DIR]".into()),
                    None => return Err("nfs:// needs /EXPORT/FILE".into()),
                }
            }
        };
        let file = if dir {
            file.trim_end_matches('/').to_string()
        } else {
            file
        };
        if !dir && (file.is_empty() || file.ends_with('/')) {
            return Err("nfs:// needs a file after the export: /EXPORT/FILE".into());
        }
        if file.split('/').any(|c| c == ".." || c == ".") {
            return Err("the file path may not contain . or .. components".into());
        }
        Ok(Target::Nfs(NfsTarget {
            host,
            port,
            mount_port,
            export,
            path: file,
            version,
            minor,
            nconnect,
            file_sync,
        }))
    }

    fn parse_iscsi(authority: &str, path: &str, query: &[(&str, &str)]) -> Result<Target, String> {
        let (host, port) = host_port(authority, ISCSI_PORT)?;
        let mut nconnect = 1;
        for (k, v) in query {
            match *k {
                "nconnect" => nconnect = parse_nconnect(v)?,
                other => {
                    return Err(format!(
                        "unknown query parameter {other:?} (allowed: nconnect)"
                    ));
                }
            }
        }
        let trimmed = path.trim_start_matches('/');
        let (iqn, lun) = trimmed.rsplit_once('/').ok_or("iscsi:// needs /IQN/LUN")?;
        if !(iqn.starts_with("iqn.") || iqn.starts_with("eui.") || iqn.starts_with("naa.")) {
            return Err(format!(
                "{iqn:?} is not an iSCSI name (iqn.…, eui.… or naa.…)"
            ));
        }
        let lun = lun
            .parse::<u32>()
            .map_err(|_| format!("invalid LUN {lun:?} (allowed: a number)"))?;
        Ok(Target::Iscsi {
            host,
            port,
            iqn: iqn.to_string(),
            lun,
            nconnect,
        })
    }

    /// The storage this target names, without how it is reached: the same
    /// target with one connection and the default NBD replies. Two URLs of
    /// one file, LUN or export compare equal this way.
    pub fn storage(&self) -> Target {
        let mut t = self.clone();
        match &mut t {
            Target::Nfs(n) => {
                n.nconnect = 1;
                n.file_sync = false;
            }
            Target::Iscsi { nconnect, .. } => *nconnect = 1,
            Target::Nbd {
                nconnect, replies, ..
            } => {
                *nconnect = 1;
                *replies = NbdReplies::default();
            }
            Target::Fc { path, .. } => return Target::File(path.clone()),
            _ => {}
        }
        t
    }

    /// The local path of a `file:` target (capped at an FC or FCoE link or not).
    pub fn local_path(&self) -> Option<&Path> {
        match self {
            Target::File(p) | Target::Fc { path: p, .. } => Some(p),
            _ => None,
        }
    }

    /// The protocol this target's I/O crosses a network link in, as the wire
    /// model frames it: `None` for `file:` and `null:` (no wire; a `file:`
    /// capped at an FC or FCoE link crosses no lab link) and NBD over a Unix socket
    /// (no link). storlab's NFSv4 client speaks 4.0, and 4.1 with
    /// `version=4.1`.
    pub fn network_protocol(&self) -> Option<Protocol> {
        match self {
            Target::Null | Target::File(_) | Target::Fc { .. } => None,
            Target::Nfs(NfsTarget { version: 3, .. }) => Some(Protocol::Nfs3),
            Target::Nfs(NfsTarget { minor: 1, .. }) => Some(Protocol::Nfs41),
            Target::Nfs { .. } => Some(Protocol::Nfs4),
            Target::Iscsi { .. } => Some(Protocol::Iscsi),
            Target::Nbd {
                addr: NbdAddr::Unix(_),
                ..
            } => None,
            Target::Nbd { replies, .. } => Some(match replies {
                NbdReplies::Simple => Protocol::Nbd,
                NbdReplies::Structured => Protocol::NbdStructured,
            }),
        }
    }

    /// The backend that serves this target.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Target::Null => "null",
            Target::File(_) | Target::Fc { .. } => "file",
            Target::Nfs { .. } => "nfs",
            Target::Iscsi { .. } => "iscsi",
            Target::Nbd { .. } => "nbd",
        }
    }
}

/// The URL query part of `nconnect=N` ("" for the default of one connection).
fn nconnect_query(n: u8, first: bool) -> String {
    match (n, first) {
        (1, _) => String::new(),
        (n, true) => format!("?nconnect={n}"),
        (n, false) => format!("&nconnect={n}"),
    }
}

fn fmt_host(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Null => write!(f, "null:"),
            Target::File(p) => write!(f, "file:{}", p.display()),
            Target::Fc { path, link, wire } => {
                write!(f, "file:{}?{}={link}", path.display(), wire.key())
            }
            Target::Nfs(NfsTarget {
                host,
                port,
                mount_port,
                export,
                path,
                version,
                minor,
                nconnect,
                file_sync,
            }) => {
                // A directory target (`parse_dir`) may name the export itself.
                let sep = if path.is_empty() { "" } else { "/" };
                write!(
                    f,
                    "nfs://{}:{port}{export}{sep}{path}?version={version}",
                    fmt_host(host)
                )?;
                if *minor > 0 {
                    write!(f, ".{minor}")?;
                }
                if let Some(m) = mount_port {
                    write!(f, "&mountport={m}")?;
                }
                // Only a one-component export is implied by the path (the
                // cli_args fuzz target's round trip: `?export=/a/b` printed
                // without it parsed again as export /a).
                let e = export.trim_start_matches('/');
                if e.is_empty() || e.contains('/') {
                    write!(f, "&export={export}")?;
                }
                if *file_sync {
                    write!(f, "&stable=file")?;
                }
                write!(f, "{}", nconnect_query(*nconnect, false))
            }
            Target::Iscsi {
                host,
                port,
                iqn,
                lun,
                nconnect,
            } => {
                let n = nconnect_query(*nconnect, true);
                write!(f, "iscsi://{}:{port}/{iqn}/{lun}{n}", fmt_host(host))
            }
            Target::Nbd {
                addr: NbdAddr::Tcp { host, port },
                export,
                replies,
                nconnect,
            } => {
                let q = replies.query(true);
                let n = nconnect_query(*nconnect, q.is_empty());
                write!(f, "nbd://{}:{port}/{export}{q}{n}", fmt_host(host))
            }
            Target::Nbd {
                addr: NbdAddr::Unix(p),
                export,
                replies,
                nconnect,
            } => {
                let q = replies.query(false);
                let n = nconnect_query(*nconnect, false);
                write!(f, "nbd+unix:///{export}?socket={}{q}{n}", p.display())
            }
        }
    }
}

#[cfg(test)]
mod tests;
