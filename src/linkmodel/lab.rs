//! The model for what runs and baselines know: a lab's recorded link
//! ([`Network`]), a target URL, an FC link's name. A run on a shaped link can
//! then be shown as a percentage of what its link can carry, and the block
//! baseline can be capped at an FC link's payload rate.

use super::{Dir, Estimate, Link, ModelError, Protocol, estimate};
use crate::model::Network;
use crate::target::{NbdAddr, NbdReplies, NfsTarget, Target};

/// The protocol a target's I/O crosses a link in: `None` for `file:` and
/// `null:` (no wire; a `file:` capped at an FC link crosses no lab link) and NBD over a Unix socket (no link). storlab's NFSv4
/// client speaks 4.0, and 4.1 with `version=4.1`.
pub fn protocol_of(target: &Target) -> Option<Protocol> {
    match target {
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

/// The link of a lab: `None` when its servers are reached over loopback or
/// its links are not shaped (no rate was recorded). The lab shapes the MAC
/// data rate and counts each frame's preamble, FCS and gap (src/lab/link.rs),
/// so its link is Ethernet at the recorded rate, whatever its name.
pub fn lab_link(net: &Network) -> Option<Link> {
    if net.net.as_deref() == Some("loopback") {
        return None;
    }
    let rate = net.link_rate_bps?;
    let name = net.link.clone().unwrap_or_else(|| format!("{rate}bit"));
    Some(Link::ethernet_at(&name, rate))
}

/// The model for a run of `protocol` with `io_size`-byte I/Os in `dir` on
/// the lab link `net` recorded: `Ok(None)` when [`lab_link`] has no link.
pub fn for_network(
    net: &Network,
    protocol: Protocol,
    io_size: u64,
    dir: Dir,
) -> Result<Option<Estimate>, ModelError> {
    match lab_link(net) {
        None => Ok(None),
        Some(link) => estimate(protocol, &link, net.mtu, io_size, dir).map(Some),
    }
}

/// The payload rate of a run mixing reads and writes (`read_share` of the
/// I/Os are reads, 0..=1) on the lab link `net` recorded: `Ok(None)` when
/// [`lab_link`] has no link. Reads' data and writes' control messages share
/// one direction of the full-duplex link, writes' data and reads' commands
/// the other; the busier direction sets the pace. Each kind's pure ACKs are
/// kept although the other kind's data segments could carry them, so a mix
/// is modelled slightly pessimistically (by at most its ACK frames, 90 bytes
/// of line per two data segments).
pub fn mixed_for_network(
    net: &Network,
    protocol: Protocol,
    io_size: u64,
    read_share: f64,
) -> Result<Option<f64>, ModelError> {
    let Some(link) = lab_link(net) else {
        return Ok(None);
    };
    let r = read_share.clamp(0.0, 1.0);
    let read = estimate(protocol, &link, net.mtu, io_size, Dir::Read)?;
    let write = estimate(protocol, &link, net.mtu, io_size, Dir::Write)?;
    // Line bytes per average I/O, target to initiator and back.
    let to_initiator = r * read.data.wire_bytes + (1.0 - r) * write.ctrl.wire_bytes;
    let to_target = r * read.ctrl.wire_bytes + (1.0 - r) * write.data.wire_bytes;
    Ok(Some(
        io_size as f64 * link.line_bytes_per_s() / to_initiator.max(to_target),
    ))
}

/// `measured` user data bytes per second as a percentage of `model`'s.
pub fn percent_of_model(measured_bytes_per_s: f64, model: &Estimate) -> f64 {
    100.0 * measured_bytes_per_s / model.payload_bytes_per_s
}

/// User data bytes per second the FC link `link` (`1gfc` .. `32gfc`) carries
/// for back-to-back FCP I/Os of `io_size` in `dir`: the cap of a block
/// baseline in the Fibre Channel role.
pub fn fc_cap(link: &str, io_size: u64, dir: Dir) -> Result<f64, ModelError> {
    let l = Link::named(link)?;
    estimate(Protocol::Fc, &l, 0, io_size, dir).map(|e| e.payload_bytes_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let e = for_network(&n, Protocol::Nbd, 65536, Dir::Read)
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
        let h = for_network(&half, Protocol::Nbd, 65536, Dir::Read)
            .unwrap()
            .unwrap();
        assert!((h.payload_bytes_per_s * 2.0 - e.payload_bytes_per_s).abs() < 1e-6);
        assert!((percent_of_model(h.payload_bytes_per_s, &e) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn no_model_without_a_shaped_link() {
        let unshaped = net(None, 1500, "netns");
        assert_eq!(
            for_network(&unshaped, Protocol::Iscsi, 4096, Dir::Read),
            Ok(None)
        );
        let lo = net(Some(("1gbe", 1_000_000_000)), 65536, "loopback");
        assert_eq!(mixed_for_network(&lo, Protocol::Nfs3, 4096, 0.7), Ok(None));
        // A lab MTU the model refuses is an error, not a silent None.
        let tiny = net(Some(("1gbe", 1_000_000_000)), 100, "netns");
        assert_eq!(
            for_network(&tiny, Protocol::Nbd, 4096, Dir::Read),
            Err(ModelError::Mtu(100))
        );
    }

    #[test]
    fn a_mix_lies_between_and_its_ends_are_the_pure_runs() {
        let n = net(Some(("10gbe", 10_000_000_000)), 9000, "netns");
        let at = |r| {
            mixed_for_network(&n, Protocol::Iscsi, 32768, r)
                .unwrap()
                .unwrap()
        };
        let read = for_network(&n, Protocol::Iscsi, 32768, Dir::Read)
            .unwrap()
            .unwrap();
        let write = for_network(&n, Protocol::Iscsi, 32768, Dir::Write)
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

    #[test]
    fn targets_map_to_their_wire_protocol() {
        let p = |url: &str| protocol_of(&Target::parse(url).unwrap());
        assert_eq!(p("nfs://h/e/f?version=3"), Some(Protocol::Nfs3));
        assert_eq!(p("nfs://h/e/f?version=4"), Some(Protocol::Nfs4));
        assert_eq!(p("nfs://h/e/f?version=4.1"), Some(Protocol::Nfs41));
        assert_eq!(p("iscsi://h/iqn.2025-01.x:y/1"), Some(Protocol::Iscsi));
        assert_eq!(p("nbd://h/x"), Some(Protocol::Nbd));
        assert_eq!(
            p("nbd://h/x?replies=structured"),
            Some(Protocol::NbdStructured)
        );
        assert_eq!(p("nbd+unix:///x?socket=/tmp/s"), None);
        assert_eq!(p("null:"), None);
        assert_eq!(p("file:/tmp"), None);
    }

    #[test]
    fn fc_cap_is_the_fc_payload_rate() {
        // 64 KiB reads on 8GFC: 32 frames of 2108 line bytes and an FCP_RSP
        // of 84, at 850 MB/s of line.
        let cap = fc_cap("8gfc", 65536, Dir::Read).unwrap();
        let want = 65536.0 * 850e6 / (32.0 * 2108.0 + 84.0);
        assert!((cap - want).abs() < 1e-3, "{cap} {want}");
        assert!(fc_cap("16GFC", 65536, Dir::Write).unwrap() > 2.0 * cap * 0.99);
        assert!(matches!(
            fc_cap("10gbe", 4096, Dir::Read),
            Err(ModelError::NotCarried { .. })
        ));
        assert!(matches!(
            fc_cap("3gfc", 4096, Dir::Read),
            Err(ModelError::UnknownLink(_))
        ));
    }
}
