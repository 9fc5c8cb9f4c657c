//! The lab's targets by name: every way a lab reaches its one store, each
//! knowing its label in tables, the server that serves it, the protocol its
//! I/O crosses a link in and, for the block baseline in the FC or FCoE role,
//! the link it is capped at. This is the one list: a lab's record of URLs
//! ([`super::Targets`]), `compare`'s and `study`'s names and labels, and
//! `storlab meta`'s NFS targets derive from it; the links are the wire
//! model's.

use crate::linkmodel::Protocol;
use crate::target::FcWire;

/// A lab target, by its name on the command line (`fc8`, `nfs3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabTarget {
    /// `block`: the loop device over the store, uncapped.
    Block,
    /// `fc1`: the loop device capped at 1 Gb FC (a 4 Gb FC study scaled 1:4).
    Fc1,
    /// `fc2`: the loop device capped at 2 Gb FC.
    Fc2,
    /// `fc4`: capped at 4 Gb FC.
    Fc4,
    /// `fc8`: capped at 8 Gb FC, the studies' usual baseline.
    Fc8,
    /// `fc16`: capped at 16 Gb FC.
    Fc16,
    /// `fc32`: capped at 32 Gb FC.
    Fc32,
    /// `fcoe10`: capped at 10 Gb FCoE (FC frames in Ethernet on 10 GbE).
    Fcoe10,
    /// `local`: the store file through the media mount.
    Local,
    /// `nfs3`: ganesha's NFSv3 export.
    Nfs3,
    /// `nfs4`: ganesha's NFSv4.0 export.
    Nfs4,
    /// `nfs41`: ganesha's NFSv4.1 export.
    Nfs41,
    /// `iscsi`: tgtd's LUN.
    Iscsi,
    /// `nbd`: nbdkit's export.
    Nbd,
}

/// How a lab target reaches the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The loop device as it is.
    Block,
    /// The loop device held to a link's payload rate: how the link carries
    /// the FC frames, and the link (one of [`FcWire::links`]).
    Capped(FcWire, &'static str),
    /// The store file in the media mount.
    Local,
    /// A server's export, in a protocol.
    Served {
        /// The server's process, as the lab records it (`ganesha`).
        server: &'static str,
        /// The protocol of its export.
        protocol: Protocol,
    },
}

/// Every lab target in the studies' usual order (the block baseline,
/// uncapped then at each link's payload rate; the store file; the
/// protocols), each with its name, its label in tables and its reach. Row
/// `i` is the target whose discriminant is `i` (a test holds it).
const TABLE: [(LabTarget, &str, &str, Reach); 14] = [
    (LabTarget::Block, "block", "block", Reach::Block),
    (LabTarget::Fc1, "fc1", "FC 1Gb (block)", fc("1gfc")),
    (LabTarget::Fc2, "fc2", "FC 2Gb (block)", fc("2gfc")),
    (LabTarget::Fc4, "fc4", "FC 4Gb (block)", fc("4gfc")),
    (LabTarget::Fc8, "fc8", "FC 8Gb (block)", fc("8gfc")),
    (LabTarget::Fc16, "fc16", "FC 16Gb (block)", fc("16gfc")),
    (LabTarget::Fc32, "fc32", "FC 32Gb (block)", fc("32gfc")),
    (
        LabTarget::Fcoe10,
        "fcoe10",
        "FCoE 10Gb (block)",
        Reach::Capped(FcWire::Fcoe, "10gbe"),
    ),
    (LabTarget::Local, "local", "local", Reach::Local),
    (
        LabTarget::Nfs3,
        "nfs3",
        "nfs3",
        served("ganesha", Protocol::Nfs3),
    ),
    (
        LabTarget::Nfs4,
        "nfs4",
        "nfs4",
        served("ganesha", Protocol::Nfs4),
    ),
    (
        LabTarget::Nfs41,
        "nfs41",
        "nfs41",
        served("ganesha", Protocol::Nfs41),
    ),
    (
        LabTarget::Iscsi,
        "iscsi",
        "iscsi",
        served("tgtd", Protocol::Iscsi),
    ),
    (
        LabTarget::Nbd,
        "nbd",
        "nbd",
        served("nbdkit", Protocol::Nbd),
    ),
];

const fn fc(link: &'static str) -> Reach {
    Reach::Capped(FcWire::Fc, link)
}

const fn served(server: &'static str, protocol: Protocol) -> Reach {
    Reach::Served { server, protocol }
}

impl LabTarget {
    /// Every name, in [`LabTarget::all`]'s order.
    pub const NAMES: [&'static str; TABLE.len()] = {
        let mut names = [""; TABLE.len()];
        let mut i = 0;
        while i < TABLE.len() {
            names[i] = TABLE[i].1;
            i += 1;
        }
        names
    };

    /// Every lab target, in the studies' usual order.
    pub fn all() -> impl Iterator<Item = LabTarget> {
        TABLE.iter().map(|row| row.0)
    }

    /// The target named `name` (exactly as [`LabTarget::name`] gives it);
    /// the error names it and every lab target.
    pub fn parse(name: &str) -> Result<LabTarget, String> {
        TABLE
            .iter()
            .find(|row| row.1 == name)
            .map(|row| row.0)
            .ok_or_else(|| {
                format!(
                    "unknown lab target {name:?} (allowed: {})",
                    LabTarget::allowed()
                )
            })
    }

    /// Every name, for error messages: `block, fc2, ...`.
    pub fn allowed() -> String {
        LabTarget::NAMES.join(", ")
    }

    /// Its name on the command line: `fc8`.
    pub const fn name(self) -> &'static str {
        TABLE[self as usize].1
    }

    /// Its name in tables, as the studies name their baselines: `fc8` is
    /// "FC 8Gb (block)", `fcoe10` "FCoE 10Gb (block)"; the others go by
    /// their names.
    pub const fn label(self) -> &'static str {
        TABLE[self as usize].2
    }

    /// How it reaches the store.
    pub const fn reach(self) -> Reach {
        TABLE[self as usize].3
    }

    /// The server process that serves it (`ganesha`, `tgtd`, `nbdkit`), as
    /// the lab records it; `None` for the loop device and the store file.
    pub fn server(self) -> Option<&'static str> {
        match self.reach() {
            Reach::Served { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The protocol its I/O crosses a link in, as the wire model frames it:
    /// an export's, or FC or FCoE for the capped block baseline; `None` for
    /// the uncapped loop device and the store file.
    pub fn protocol(self) -> Option<Protocol> {
        match self.reach() {
            Reach::Served { protocol, .. } => Some(protocol),
            Reach::Capped(wire, _) => Some(wire.protocol()),
            Reach::Block | Reach::Local => None,
        }
    }

    /// The link the block baseline is capped at, and how it carries FC.
    pub fn cap(self) -> Option<(FcWire, &'static str)> {
        match self.reach() {
            Reach::Capped(wire, link) => Some((wire, link)),
            _ => None,
        }
    }

    /// The same kind of target on a link `k` times slower, for a study run
    /// scaled 1:k: `fc4` scaled 1:4 is `fc1`; the protocols and the uncapped
    /// paths are themselves (their link is the lab's, scaled with it);
    /// `None` when no lab target is that much slower (`fcoe10`, `fc2` 1:4).
    pub fn scaled(self, k: u32) -> Option<LabTarget> {
        let Some((FcWire::Fc, link)) = self.cap() else {
            return match self.cap() {
                Some(_) if k > 1 => None,
                _ => Some(self),
            };
        };
        let gb: u32 = link.trim_end_matches("gfc").parse().ok()?;
        if k == 0 || gb % k != 0 {
            return None;
        }
        let want = format!("{}gfc", gb / k);
        LabTarget::all().find(|t| matches!(t.cap(), Some((FcWire::Fc, l)) if l == want))
    }

    /// Whether it is an NFS export (a directory for `storlab meta`).
    pub fn nfs(self) -> bool {
        matches!(
            self.protocol(),
            Some(Protocol::Nfs3 | Protocol::Nfs4 | Protocol::Nfs41)
        )
    }
}

impl std::fmt::Display for LabTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linkmodel::Link;

    #[test]
    fn the_table_is_in_discriminant_order_and_names_parse_back() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.0 as usize, i, "{:?}", row.0);
            assert_eq!(LabTarget::parse(row.1), Ok(row.0));
            assert_eq!(row.0.to_string(), row.1);
        }
        assert_eq!(LabTarget::all().count(), TABLE.len());
    }

    #[test]
    fn an_unknown_name_is_refused_naming_every_target() {
        let e = LabTarget::parse("fc7").unwrap_err();
        assert_eq!(
            e,
            "unknown lab target \"fc7\" (allowed: block, fc1, fc2, fc4, fc8, fc16, fc32, \
             fcoe10, local, nfs3, nfs4, nfs41, iscsi, nbd)"
        );
        assert!(LabTarget::parse("FC8").is_err());
        assert!(LabTarget::parse("nfs3?stable=file").is_err());
    }

    #[test]
    fn every_cap_is_a_link_of_the_wire_model_that_carries_its_frames() {
        let capped: Vec<LabTarget> = LabTarget::all().filter(|t| t.cap().is_some()).collect();
        assert_eq!(capped.len(), 7, "fc1 .. fc32 and fcoe10");
        for t in capped {
            let (wire, link) = t.cap().unwrap();
            assert!(wire.links().iter().any(|l| l == link), "{t}: {link}");
            let l = Link::named(link).unwrap();
            assert!(wire.protocol().runs_on(&l), "{t}: {link}");
            assert_eq!(t.protocol(), Some(wire.protocol()));
            assert_eq!(t.server(), None);
            assert!(t.label().ends_with(" (block)"), "{t}");
        }
        assert_eq!(
            LabTarget::Fcoe10.cap(),
            Some((FcWire::Fcoe, "10gbe")),
            "10 Gb FCoE"
        );
        assert_eq!(LabTarget::Fcoe10.label(), "FCoE 10Gb (block)");
        assert_eq!(LabTarget::Fc8.label(), "FC 8Gb (block)");
    }

    #[test]
    fn servers_and_protocols_of_the_exports() {
        let of = |t: LabTarget| (t.server(), t.protocol(), t.nfs());
        assert_eq!(
            of(LabTarget::Nfs3),
            (Some("ganesha"), Some(Protocol::Nfs3), true)
        );
        assert_eq!(
            of(LabTarget::Nfs41),
            (Some("ganesha"), Some(Protocol::Nfs41), true)
        );
        assert_eq!(
            of(LabTarget::Iscsi),
            (Some("tgtd"), Some(Protocol::Iscsi), false)
        );
        assert_eq!(
            of(LabTarget::Nbd),
            (Some("nbdkit"), Some(Protocol::Nbd), false)
        );
        assert_eq!(of(LabTarget::Block), (None, None, false));
        assert_eq!(of(LabTarget::Local), (None, None, false));
        let nfs: Vec<&str> = LabTarget::all()
            .filter(|t| t.nfs())
            .map(LabTarget::name)
            .collect();
        assert_eq!(nfs, ["nfs3", "nfs4", "nfs41"]);
    }

    #[test]
    fn a_target_scaled_1_to_k_is_the_fc_link_k_times_slower() {
        assert_eq!(LabTarget::Fc4.scaled(4), Some(LabTarget::Fc1));
        assert_eq!(LabTarget::Fc8.scaled(4), Some(LabTarget::Fc2));
        assert_eq!(LabTarget::Fc8.scaled(1), Some(LabTarget::Fc8));
        assert_eq!(LabTarget::Fc2.scaled(4), None);
        assert_eq!(LabTarget::Fcoe10.scaled(4), None);
        assert_eq!(LabTarget::Fcoe10.scaled(1), Some(LabTarget::Fcoe10));
        assert_eq!(LabTarget::Nfs3.scaled(4), Some(LabTarget::Nfs3));
    }
}
