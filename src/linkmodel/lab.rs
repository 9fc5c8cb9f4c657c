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
    let l = Link::named(link)?;
    estimate(Protocol::Fc, &l, 0, io_size, dir).map(|e| e.payload_bytes_per_s)
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
}
