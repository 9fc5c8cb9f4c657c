//! The model for what runs and baselines know: a measured rate against the
//! model's, and an FC link's name. A run on a shaped link can then be shown
//! as a percentage of what its link can carry (its link from the run's
//! recorded network, [`crate::model::Network::estimate`]; its protocol from
//! its target, [`crate::target::Target::network_protocol`]), and the block
//! baseline can be capped at an FC link's payload rate.

use super::{Dir, Estimate, Link, ModelError, Protocol, estimate};

/// `measured` user data bytes per second as a percentage of `model`'s.
pub fn percent_of_model(measured_bytes_per_s: f64, model: &Estimate) -> f64 {
    100.0 * measured_bytes_per_s / model.payload_bytes_per_s
}

/// User data bytes per second the FC link `link` (`1gfc` .. `32gfc`) carries
/// for back-to-back FCP I/Os of `io_size` in `dir`: the cap of a block
/// baseline in the Fibre Channel role.
pub fn fc_cap(link: &str, io_size: u64, dir: Dir) -> Result<f64, ModelError> {
    block_cap(Protocol::Fc, link, io_size, dir)
}

/// User data bytes per second `link` carries for back-to-back FCP I/Os of
/// `io_size` in `dir`, in `protocol`'s frames: [`Protocol::Fc`] on an FC link
/// (`1gfc` .. `32gfc`, as [`fc_cap`]) or [`Protocol::Fcoe`] on Ethernet of 10
/// Gb/s or more (`10gbe` .. `100gbe`): the cap of a block baseline in the FC
/// or FCoE role. Their frames have no MTU; any other protocol is refused as
/// not carried (its rate depends on an MTU this does not take).
pub fn block_cap(
    protocol: Protocol,
    link: &str,
    io_size: u64,
    dir: Dir,
) -> Result<f64, ModelError> {
    let l = Link::named(link)?;
    if protocol.over_ip() {
        return Err(ModelError::NotCarried {
            protocol,
            link: l.name,
        });
    }
    estimate(protocol, &l, 0, io_size, dir).map(|e| e.payload_bytes_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn an_fcoe_cap_is_the_fcoe_payload_rate() {
        // 1 MiB reads over FCoE on 10 GbE: 512 data frames of 2048 + 88 line
        // bytes and the FCP_RSP's frame of 24 + 88, at 1250 MB/s of line.
        let cap = block_cap(Protocol::Fcoe, "10gbe", 1 << 20, Dir::Read).unwrap();
        let want = f64::from(1 << 20) * 1250e6 / (512.0 * 2136.0 + 112.0);
        assert!((cap - want).abs() < 1e-3, "{cap} {want}");
        // Writes carry the same data frames the other way, with FCP_CMND.
        let w = block_cap(Protocol::Fcoe, "10gbe", 1 << 20, Dir::Write).unwrap();
        assert!((w - cap).abs() / cap < 1e-4, "{w} {cap}");
        // The same as the table's (`storlab wire`), and FC's as fc_cap's.
        let l = Link::named("10gbe").unwrap();
        assert_eq!(
            cap,
            super::super::rate(Protocol::Fcoe, &l, 1500, 1 << 20, Dir::Read).unwrap()
        );
        assert_eq!(
            block_cap(Protocol::Fc, "8gfc", 4096, Dir::Write),
            fc_cap("8gfc", 4096, Dir::Write)
        );
        for (p, link) in [
            (Protocol::Fcoe, "1gbe"),
            (Protocol::Fcoe, "8gfc"),
            (Protocol::Iscsi, "10gbe"),
        ] {
            assert!(
                matches!(
                    block_cap(p, link, 4096, Dir::Read),
                    Err(ModelError::NotCarried { .. })
                ),
                "{p} {link}"
            );
        }
    }
}
