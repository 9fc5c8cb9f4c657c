//! The wire-efficiency model: how many bytes of user data per second a link
//! can carry for a protocol, with a stream of back-to-back I/Os of one size
//! in one direction (docs/wire-model.md).
//!
//! One I/O is a set of messages in each direction ([`Exchange`]): the
//! direction the data flows (target to initiator for a read) and the control
//! direction (commands, R2Ts, replies and ACKs). Each message is framed for
//! its link (TCP/IPv4 over Ethernet, FC frames, FC frames in Ethernet) and
//! costs line time: frames, their delimiters and the gaps or idles between
//! them ([`Flow`]). The link is full duplex, so the busier direction sets the
//! pace: payload rate = I/O size x line bytes per second / the busier
//! direction's line bytes per I/O. Everything here is a pure function of its
//! arguments; [`rate`] is the one entry point, [`lab`] adapts it to a lab's
//! recorded link, [`table`] lays it out for `storlab wire`.

pub mod ethernet;
pub mod fc;
pub mod lab;
pub mod link;
pub mod protocol;
pub mod table;

pub use link::{Encoding, Link, Medium};
pub use protocol::IscsiParams;

use serde::Serialize;
use std::fmt;

/// The storage protocols the model frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Protocol {
    /// iSCSI over TCP (RFC 7143), with [`IscsiParams::LAB`].
    #[serde(rename = "iscsi")]
    Iscsi,
    /// NFSv3 over TCP (RFC 1813).
    #[serde(rename = "nfs3")]
    Nfs3,
    /// NFSv4.0 over TCP (RFC 7530): COMPOUND of PUTFH and READ/WRITE.
    #[serde(rename = "nfs4")]
    Nfs4,
    /// NFSv4.1 over TCP (RFC 8881): SEQUENCE, PUTFH and READ/WRITE.
    #[serde(rename = "nfs4.1")]
    Nfs41,
    /// NBD over TCP with simple replies (storlab's and the kernel's default).
    #[serde(rename = "nbd")]
    Nbd,
    /// NBD over TCP with structured replies (libnbd's and qemu's default).
    #[serde(rename = "nbd-structured")]
    NbdStructured,
    /// SCSI over native Fibre Channel (FCP-4 on FC-FS).
    #[serde(rename = "fc")]
    Fc,
    /// FCP in FC frames encapsulated in Ethernet (FC-BB-5).
    #[serde(rename = "fcoe")]
    Fcoe,
}

impl Protocol {
    /// Every protocol, in table order.
    pub const ALL: [Protocol; 8] = [
        Protocol::Iscsi,
        Protocol::Nfs3,
        Protocol::Nfs4,
        Protocol::Nfs41,
        Protocol::Nbd,
        Protocol::NbdStructured,
        Protocol::Fc,
        Protocol::Fcoe,
    ];

    /// Its name on the command line and in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Iscsi => "iscsi",
            Protocol::Nfs3 => "nfs3",
            Protocol::Nfs4 => "nfs4",
            Protocol::Nfs41 => "nfs4.1",
            Protocol::Nbd => "nbd",
            Protocol::NbdStructured => "nbd-structured",
            Protocol::Fc => "fc",
            Protocol::Fcoe => "fcoe",
        }
    }

    /// Every protocol's name, for error messages.
    pub fn allowed() -> String {
        Protocol::ALL.map(Protocol::as_str).join(", ")
    }

    /// The protocol named `name` (case does not matter).
    pub fn parse(name: &str) -> Option<Protocol> {
        let n = name.trim().to_ascii_lowercase();
        Protocol::ALL.into_iter().find(|p| p.as_str() == n)
    }

    /// Whether it runs over TCP/IP (and so depends on the MTU).
    pub fn over_ip(self) -> bool {
        !matches!(self, Protocol::Fc | Protocol::Fcoe)
    }

    /// The catalogued links that carry it ([`Protocol::runs_on`]), in the
    /// catalogue's order ([`Link::catalogue`]).
    pub fn links(self) -> Vec<Link> {
        Link::catalogue()
            .into_iter()
            .filter(|l| self.runs_on(l))
            .collect()
    }

    /// Whether `link` carries it: IP protocols on Ethernet, FC on FC links,
    /// FCoE on Ethernet of 10 Gb/s or more (where FCoE is deployed, on
    /// lossless Ethernet with IEEE 802.1Qbb priority flow control).
    pub fn runs_on(self, link: &Link) -> bool {
        match self {
            Protocol::Fc => link.medium == Medium::Fc,
            Protocol::Fcoe => link.medium == Medium::Ethernet && link.data_bits_per_s() >= 10e9,
            _ => link.medium == Medium::Ethernet,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which way the data flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Target to initiator.
    Read,
    /// Initiator to target.
    Write,
}

impl Dir {
    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// Messages of one direction as runs of (count, bytes each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Messages(Vec<(u64, u64)>);

impl Messages {
    /// Add `count` messages of `bytes` each (nothing when `count` is 0).
    pub fn push(&mut self, count: u64, bytes: u64) {
        if count > 0 {
            self.0.push((count, bytes));
        }
    }

    /// The runs.
    pub fn runs(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// How many messages.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|r| r.0).sum()
    }

    /// Their bytes together.
    pub fn bytes(&self) -> u64 {
        self.0.iter().map(|r| r.0 * r.1).sum()
    }
}

/// What one I/O sends: the messages (TCP payload, or FC frame data fields)
/// in the direction the data flows and in the other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The direction the data flows.
    pub data: Messages,
    /// The other direction: commands, R2Ts, replies.
    pub ctrl: Messages,
}

/// One direction's line cost per I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Flow {
    /// Frames per I/O (an average: a backlogged TCP stream packs I/Os).
    pub frames: f64,
    /// Of those, pure TCP ACKs.
    pub acks: f64,
    /// Line bytes per I/O: frames, delimiters, gaps or idles.
    pub wire_bytes: f64,
}

/// The model's answer for one protocol, link, MTU, I/O size and direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The protocol.
    pub protocol: Protocol,
    /// The link's name.
    pub link: String,
    /// The link's line bytes per second after its line code.
    pub line_bytes_per_s: f64,
    /// The MTU (IP protocols only; FC and FCoE have their own frames).
    pub mtu: Option<u32>,
    /// I/O size in bytes.
    pub io_size: u64,
    /// Direction of the data.
    pub dir: Dir,
    /// User data bytes per second the link carries.
    pub payload_bytes_per_s: f64,
    /// The direction the data flows, per I/O.
    pub data: Flow,
    /// The other direction, per I/O.
    pub ctrl: Flow,
}

impl Estimate {
    /// Payload over line rate, 0..1.
    pub fn efficiency(&self) -> f64 {
        self.payload_bytes_per_s / self.line_bytes_per_s
    }

    /// Line bytes per I/O in the data direction that are not user data.
    pub fn overhead_bytes(&self) -> f64 {
        self.data.wire_bytes - self.io_size as f64
    }

    /// I/Os per second at the payload rate.
    pub fn iops(&self) -> f64 {
        self.payload_bytes_per_s / self.io_size as f64
    }
}

/// Why the model has no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// No catalogued link has this name.
    UnknownLink(String),
    /// The protocol does not run on this link.
    NotCarried {
        /// The protocol.
        protocol: Protocol,
        /// The link's name.
        link: String,
    },
    /// An MTU outside [`ethernet::MIN_MTU`]..=[`ethernet::MAX_MTU`].
    Mtu(u32),
    /// An I/O size of 0.
    IoSize,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::UnknownLink(l) => {
                write!(f, "unknown link \"{l}\" (allowed: {})", Link::allowed())
            }
            ModelError::NotCarried { protocol, link } => write!(
                f,
                "{protocol} does not run on {link} (IP protocols run on Ethernet, fc on 1gfc..32gfc, \
                 fcoe on Ethernet of 10 Gb/s or more)"
            ),
            ModelError::Mtu(m) => write!(
                f,
                "MTU {m} out of range (allowed: {} to {} bytes)",
                ethernet::MIN_MTU,
                ethernet::MAX_MTU
            ),
            ModelError::IoSize => f.write_str("I/O size 0 (allowed: 1 byte or more)"),
        }
    }
}

impl std::error::Error for ModelError {}

/// The messages one I/O of `protocol` makes.
pub fn exchange(protocol: Protocol, io_size: u64, dir: Dir) -> Exchange {
    use protocol::Nfs;
    match protocol {
        Protocol::Iscsi => protocol::iscsi(io_size, dir, &IscsiParams::LAB),
        Protocol::Nfs3 => protocol::nfs(io_size, dir, Nfs::V3),
        Protocol::Nfs4 => protocol::nfs(io_size, dir, Nfs::V40),
        Protocol::Nfs41 => protocol::nfs(io_size, dir, Nfs::V41),
        Protocol::Nbd => protocol::nbd(io_size, dir, false),
        Protocol::NbdStructured => protocol::nbd(io_size, dir, true),
        Protocol::Fc | Protocol::Fcoe => fc::fcp_exchange(io_size, dir),
    }
}

/// The model: `protocol` on `link` at `mtu` (ignored by FC and FCoE, which
/// have their own frames), back-to-back I/Os of `io_size` bytes in `dir`.
pub fn estimate(
    protocol: Protocol,
    link: &Link,
    mtu: u32,
    io_size: u64,
    dir: Dir,
) -> Result<Estimate, ModelError> {
    if !protocol.runs_on(link) {
        return Err(ModelError::NotCarried {
            protocol,
            link: link.name.clone(),
        });
    }
    if io_size == 0 {
        return Err(ModelError::IoSize);
    }
    let ex = exchange(protocol, io_size, dir);
    let ((data, ctrl), mtu) = match protocol {
        Protocol::Fc => (fc::frame_flows(&ex, fc::fc_frame_bytes), None),
        Protocol::Fcoe => (fc::frame_flows(&ex, fc::fcoe_frame_bytes), None),
        _ => {
            if !(ethernet::MIN_MTU..=ethernet::MAX_MTU).contains(&mtu) {
                return Err(ModelError::Mtu(mtu));
            }
            (ethernet::tcp_flows(&ex, mtu), Some(mtu))
        }
    };
    let line = link.line_bytes_per_s();
    let busiest = data.wire_bytes.max(ctrl.wire_bytes);
    Ok(Estimate {
        protocol,
        link: link.name.clone(),
        line_bytes_per_s: line,
        mtu,
        io_size,
        dir,
        payload_bytes_per_s: io_size as f64 * line / busiest,
        data,
        ctrl,
    })
}

/// The payload rate alone, in user data bytes per second.
pub fn rate(
    protocol: Protocol,
    link: &Link,
    mtu: u32,
    io_size: u64,
    dir: Dir,
) -> Result<f64, ModelError> {
    estimate(protocol, link, mtu, io_size, dir).map(|e| e.payload_bytes_per_s)
}

#[cfg(test)]
mod tests;
