//! The lab network a run was measured over, as the run document records it,
//! and what the wire model says its link can carry: a run on a shaped link
//! can then be shown as a percentage of its link's payload rate
//! (docs/wire-model.md, "For runs and baselines").

use crate::linkmodel::{Dir, Estimate, Link, ModelError, Protocol, estimate};
use serde::{Deserialize, Serialize};

/// The lab network of a run: its link rate (when the lab shapes its links)
/// and MTU, as the lab's state records them. Nothing here is guessed: an
/// unshaped lab has no link rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// The lab's state directory.
    pub lab: String,
    /// The link as given to `lab up` (`10gbe`, `500mbit`); `None`: unshaped.
    pub link: Option<String>,
    /// Link rate in bits per second; `None`: unshaped, rate unknown.
    pub link_rate_bps: Option<u64>,
    /// MTU of every interface on the path.
    pub mtu: u32,
    /// The lab's load-generator host namespaces (fleet labs; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// How the lab's servers were reached: `loopback` (127.0.0.1, no link;
    /// `mtu` is the loopback interface's) or `netns` (over the lab's veth links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// The lab's emulated medium (`array-15k`; `none`: no media layer);
    /// `None` in runs recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<String>,
}

impl Network {
    /// Where a run measured, in the words a table header uses: "medium
    /// array-15k, link 10gbe (MTU 1500)", "medium ram, loopback (no link)".
    pub fn describe(&self) -> String {
        let medium = self
            .medium
            .as_deref()
            .map(|m| format!("medium {m}, "))
            .unwrap_or_default();
        let link = match (&self.link, self.net.as_deref()) {
            (Some(l), _) => format!("link {l} (MTU {})", self.mtu),
            (None, Some("loopback")) => "loopback (no link)".to_string(),
            (None, _) => "unshaped link".to_string(),
        };
        format!("{medium}{link}")
    }

    /// Its link in the wire model: `None` when the lab's servers are reached
    /// over loopback or its links are not shaped (no rate was recorded). The
    /// lab shapes the MAC data rate and counts each frame's preamble, FCS and
    /// gap (src/lab/link.rs), so its link is Ethernet at the recorded rate,
    /// whatever its name.
    pub fn link_model(&self) -> Option<Link> {
        if self.net.as_deref() == Some("loopback") {
            return None;
        }
        let rate = self.link_rate_bps?;
        let name = self.link.clone().unwrap_or_else(|| format!("{rate}bit"));
        Some(Link::ethernet_at(&name, rate))
    }

    /// The model for a run of `protocol` with `io_size`-byte I/Os in `dir`
    /// on this link: `Ok(None)` when [`Network::link_model`] has no link.
    pub fn estimate(
        &self,
        protocol: Protocol,
        io_size: u64,
        dir: Dir,
    ) -> Result<Option<Estimate>, ModelError> {
        match self.link_model() {
            None => Ok(None),
            Some(link) => estimate(protocol, &link, self.mtu, io_size, dir).map(Some),
        }
    }

    /// The payload rate of a run mixing reads and writes (`read_share` of
    /// the I/Os are reads, 0..=1) on this link: `Ok(None)` when
    /// [`Network::link_model`] has no link. Reads' data and writes' control
    /// messages share one direction of the full-duplex link, writes' data and
    /// reads' commands the other; the busier direction sets the pace. Each
    /// kind's pure ACKs are kept although the other kind's data segments
    /// could carry them, so a mix is modelled slightly pessimistically (by at
    /// most its ACK frames, 90 bytes of line per two data segments).
    pub fn mixed_rate(
        &self,
        protocol: Protocol,
        io_size: u64,
        read_share: f64,
    ) -> Result<Option<f64>, ModelError> {
        let Some(link) = self.link_model() else {
            return Ok(None);
        };
        let r = read_share.clamp(0.0, 1.0);
        let read = estimate(protocol, &link, self.mtu, io_size, Dir::Read)?;
        let write = estimate(protocol, &link, self.mtu, io_size, Dir::Write)?;
        // Line bytes per average I/O, target to initiator and back.
        let to_initiator = r * read.data.wire_bytes + (1.0 - r) * write.ctrl.wire_bytes;
        let to_target = r * read.ctrl.wire_bytes + (1.0 - r) * write.data.wire_bytes;
        Ok(Some(
            io_size as f64 * link.line_bytes_per_s() / to_initiator.max(to_target),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkmodel::lab::percent_of_model;

    fn net(link: Option<(&str, u64)>, mtu: u32, mode: &str) -> Network {
        Network {
            lab: "/tmp/lab".into(),
            link: link.map(|l| l.0.to_string()),
            link_rate_bps: link.map(|l| l.1),
            mtu,
            hosts: vec![],
            net: Some(mode.into()),
            medium: None,
        }
    }

    #[test]
    fn a_shaped_lab_link_is_ethernet_at_its_rate() {
        let n = net(Some(("1gbe", 1_000_000_000)), 1500, "netns");
        let e = n
            .estimate(Protocol::Nbd, 65536, Dir::Read)
            .unwrap()
            .unwrap();
        let named = estimate(
            Protocol::Nbd,
            &Link::named("1gbe").unwrap(),
            1500,
            65536,
            Dir::Read,
        )
        .unwrap();
        assert_eq!(e.payload_bytes_per_s, named.payload_bytes_per_s);
        assert_eq!(e.link, "1gbe");
        // Any rate: a 500 Mbit/s link carries half of a 1 Gbit/s one.
        let half = net(Some(("500mbit", 500_000_000)), 1500, "netns");
        let h = half
            .estimate(Protocol::Nbd, 65536, Dir::Read)
            .unwrap()
            .unwrap();
        assert!((h.payload_bytes_per_s * 2.0 - e.payload_bytes_per_s).abs() < 1e-6);
        assert!((percent_of_model(h.payload_bytes_per_s, &e) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn no_model_without_a_shaped_link() {
        let unshaped = net(None, 1500, "netns");
        assert_eq!(
            unshaped.estimate(Protocol::Iscsi, 4096, Dir::Read),
            Ok(None)
        );
        let lo = net(Some(("1gbe", 1_000_000_000)), 65536, "loopback");
        assert_eq!(lo.mixed_rate(Protocol::Nfs3, 4096, 0.7), Ok(None));
        // A lab MTU the model refuses is an error, not a silent None.
        let tiny = net(Some(("1gbe", 1_000_000_000)), 100, "netns");
        assert_eq!(
            tiny.estimate(Protocol::Nbd, 4096, Dir::Read),
            Err(ModelError::Mtu(100))
        );
    }

    #[test]
    fn a_mix_lies_between_and_its_ends_are_the_pure_runs() {
        let n = net(Some(("10gbe", 10_000_000_000)), 9000, "netns");
        let at = |r| n.mixed_rate(Protocol::Iscsi, 32768, r).unwrap().unwrap();
        let read = n
            .estimate(Protocol::Iscsi, 32768, Dir::Read)
            .unwrap()
            .unwrap();
        let write = n
            .estimate(Protocol::Iscsi, 32768, Dir::Write)
            .unwrap()
            .unwrap();
        assert!((at(1.0) - read.payload_bytes_per_s).abs() < 1e-3);
        assert!((at(0.0) - write.payload_bytes_per_s).abs() < 1e-3);
        // Half reads, half writes: data flows both ways at once, so the
        // full-duplex link carries nearly twice one direction's rate.
        let half = at(0.5);
        assert!(half > 1.9 * read.payload_bytes_per_s, "{half}");
        assert!(half < 2.0 * read.payload_bytes_per_s, "{half}");
    }
}
