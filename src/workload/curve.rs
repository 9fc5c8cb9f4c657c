//! vdbench-style curves: find a load point's maximum rate, then run it at
//! percentages of that rate with an open-loop schedule, so latency is measured
//! from each I/O's scheduled time and queueing is not hidden (see
//! [`pace`](super::pace)).
//!
//! A curve turns one load point into several ordinary load points, run in
//! order: first the point unthrottled ("curve max"), then one per percentage
//! `p` with every worker paced open loop so the point as a whole targets `p`%
//! of the measured maximum IOPS ("curve 70%"). Each group keeps
//! the share of the maximum it had in the unthrottled run, dealt evenly over
//! its workers. Results are ordinary points, so the sweep curves, the knee and
//! "max IOPS with p99 under X" apply to them as to any sweep.

use super::validate::SpecError;
use super::{Rate, RateMode, Spec};
use toml::Value;

/// vdbench's default percentages.
pub const DEFAULT_PCTS: [u32; 6] = [10, 50, 70, 80, 90, 100];

/// What a curve's percentages may be, for errors.
pub const ALLOWED: &str = "percentages of the measured maximum, each 1..=100 and given once, \
     comma-separated, e.g. 10,50,100 (no value: 10,50,70,80,90,100; off: no curve)";

/// Parse a curve given as text (the `--curve` option): "" for the default
/// percentages, "off"/"none" for no curve, else "10,50,100". Errors name `field`.
pub fn parse(field: &str, text: &str) -> Result<Option<Vec<u32>>, SpecError> {
    let t = text.trim();
    match t {
        "" | "default" => return Ok(Some(DEFAULT_PCTS.to_vec())),
        "off" | "none" => return Ok(None),
        _ => {}
    }
    let bad = || SpecError::invalid(field, text, ALLOWED);
    let pcts = t
        .split(',')
        .map(|p| {
            p.trim()
                .trim_end_matches('%')
                .parse::<u32>()
                .map_err(|_| bad())
        })
        .collect::<Result<Vec<_>, _>>()?;
    check(field, text, &pcts)?;
    Ok(Some(pcts))
}

/// Parse the job-file key `curve`: `true` (default percentages), `false` (none),
/// an array of percentages, or a string as for [`parse`].
pub fn from_toml(v: &Value) -> Result<Option<Vec<u32>>, SpecError> {
    match v {
        Value::Boolean(true) => Ok(Some(DEFAULT_PCTS.to_vec())),
        Value::Boolean(false) => Ok(None),
        Value::String(s) => parse("curve", s),
        Value::Array(items) => {
            let bad = || SpecError::invalid("curve", v.to_string(), ALLOWED);
            let pcts = items
                .iter()
                .map(|i| {
                    i.as_integer()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(bad)
                })
                .collect::<Result<Vec<_>, _>>()?;
            check("curve", v.to_string(), &pcts)?;
            Ok(Some(pcts))
        }
        other => Err(SpecError::invalid("curve", other.to_string(), ALLOWED)),
    }
}

fn check(field: &str, shown: impl std::fmt::Display, pcts: &[u32]) -> Result<(), SpecError> {
    let bad = || SpecError::invalid(field, &shown, ALLOWED);
    if pcts.is_empty() || pcts.iter().any(|p| !(1..=100).contains(p)) {
        return Err(bad());
    }
    for (i, p) in pcts.iter().enumerate() {
        if pcts[..i].contains(p) {
            return Err(bad());
        }
    }
    Ok(())
}

/// What the unthrottled run of a point measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Max {
    /// IOPS of the whole point.
    pub iops: f64,
    /// Each group's share of those I/Os (in the spec's group order, summing to
    /// 1), or empty to share by worker count.
    pub group_shares: Vec<f64>,
}

impl Max {
    /// The mean of several unthrottled runs (repeats): IOPS and shares averaged.
    pub fn mean(runs: &[Max]) -> Option<Max> {
        if runs.is_empty() {
            return None;
        }
        let n = runs.len() as f64;
        let iops = runs.iter().map(|m| m.iops).sum::<f64>() / n;
        let len = runs[0].group_shares.len();
        let group_shares = if runs.iter().all(|m| m.group_shares.len() == len) {
            (0..len)
                .map(|g| runs.iter().map(|m| m.group_shares[g]).sum::<f64>() / n)
                .collect()
        } else {
            Vec::new()
        };
        Some(Max { iops, group_shares })
    }
}

/// The label of a curve point: `what` alone for a one-point job, else after
/// the point's own label.
fn label(base: &Spec, several: bool, what: &str) -> String {
    if several {
        format!("{} · curve {what}", base.label)
    } else {
        format!("curve {what}")
    }
}

/// The unthrottled run that finds `base`'s maximum: every rate cap removed.
/// `several`: the job has more than one load point (labels keep the point's).
pub fn max_point(base: &Spec, several: bool) -> Spec {
    let mut s = base.clone();
    s.label = label(base, several, "max");
    for g in &mut s.groups {
        g.access.rate = None;
        g.access.rate_mode = RateMode::Closed;
    }
    s
}

/// The point at `pct`% of `max`: every worker paced open loop, each group at
/// its share of the target dealt evenly over its workers (at least 1 IOPS
/// each). `None` when the maximum is not a positive number of IOPS.
pub fn fraction_point(base: &Spec, several: bool, pct: u32, max: &Max) -> Option<Spec> {
    if !(max.iops.is_finite() && max.iops > 0.0) {
        return None;
    }
    let mut s = base.clone();
    // The label names the share only, not this target's maximum, so that the
    // same share lines up across targets in a comparison (each at its own
    // maximum: the `curve max` point's IOPS; the rate is in the spec).
    s.label = label(base, several, &format!("{pct}%"));
    let target = max.iops * pct as f64 / 100.0;
    let total_workers = s.total_workers().max(1) as f64;
    let shares_ok = max.group_shares.len() == s.groups.len()
        && max.group_shares.iter().all(|x| x.is_finite() && *x >= 0.0)
        && max.group_shares.iter().sum::<f64>() > 0.0;
    for (i, g) in s.groups.iter_mut().enumerate() {
        let workers = (g.vms as u64 * g.workers_per_vm as u64).max(1) as f64;
        let share = if shares_ok {
            max.group_shares[i] / max.group_shares.iter().sum::<f64>()
        } else {
            workers / total_workers
        };
        let per_worker = (target * share / workers).round().max(1.0) as u64;
        g.access.rate = Some(Rate::Iops(per_worker));
        g.access.rate_mode = RateMode::Open;
    }
    Some(s)
}

/// The rate a point targets in total (IOPS caps summed over workers), if
/// every group has an IOPS cap.
pub fn target_iops(spec: &Spec) -> Option<u64> {
    spec.groups
        .iter()
        .map(|g| match g.access.rate {
            Some(Rate::Iops(n)) => Some(n * g.vms as u64 * g.workers_per_vm as u64),
            _ => None,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_percentages() {
        assert_eq!(parse("--curve", "").unwrap(), Some(DEFAULT_PCTS.to_vec()));
        assert_eq!(
            parse("--curve", "10, 50,100%").unwrap(),
            Some(vec![10, 50, 100])
        );
        assert_eq!(parse("--curve", "off").unwrap(), None);
        for bad in ["0", "101", "10,10", "ten", "10,,50", "-5"] {
            let e = parse("--curve", bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid --curve = {bad} (allowed: percentages")),
                "{e}"
            );
        }
        let v: toml::Table = toml::from_str("a = [10, 90]\nb = true\nc = [0]\nd = 3").unwrap();
        assert_eq!(from_toml(&v["a"]).unwrap(), Some(vec![10, 90]));
        assert_eq!(from_toml(&v["b"]).unwrap(), Some(DEFAULT_PCTS.to_vec()));
        assert!(
            from_toml(&v["c"])
                .unwrap_err()
                .to_string()
                .contains("invalid curve")
        );
        assert!(from_toml(&v["d"]).is_err());
    }

    #[test]
    fn builds_max_and_fraction_points() {
        let mut base = crate::workload::test_spec(2, 3, 1);
        base.groups[0].access.rate = Some(Rate::Iops(5));
        let m = max_point(&base, false);
        assert_eq!(m.label, "curve max");
        assert_eq!(m.groups[0].access.rate, None);
        assert!(!m.latency_from_schedule());
        let max = Max {
            iops: 41_200.0,
            group_shares: vec![],
        };
        let p = fraction_point(&base, false, 70, &max).unwrap();
        assert_eq!(p.label, "curve 70%");
        // 28,840 IOPS over 6 workers.
        assert_eq!(p.groups[0].access.rate, Some(Rate::Iops(4807)));
        assert_eq!(p.groups[0].access.rate_mode, RateMode::Open);
        assert!(p.latency_from_schedule());
        assert_eq!(target_iops(&p), Some(28_842));
        let several = fraction_point(&base, true, 10, &max).unwrap();
        assert_eq!(several.label, "t · curve 10%");
        assert!(
            fraction_point(
                &base,
                false,
                10,
                &Max {
                    iops: 0.0,
                    group_shares: vec![]
                }
            )
            .is_none()
        );
    }

    #[test]
    fn groups_keep_their_share() {
        let mut base = crate::workload::test_spec(1, 1, 1);
        let mut g2 = base.groups[0].clone();
        g2.name = "b".into();
        g2.workers_per_vm = 4;
        base.groups.push(g2);
        // Group 0 (1 worker) did 3/4 of the I/O, group b (4 workers) 1/4.
        let max = Max::mean(&[
            Max {
                iops: 1000.0,
                group_shares: vec![0.7, 0.3],
            },
            Max {
                iops: 3000.0,
                group_shares: vec![0.8, 0.2],
            },
        ])
        .unwrap();
        assert_eq!(max.iops, 2000.0);
        let p = fraction_point(&base, false, 50, &max).unwrap();
        assert_eq!(p.groups[0].access.rate, Some(Rate::Iops(750)));
        assert_eq!(p.groups[1].access.rate, Some(Rate::Iops(63)));
        // Without shares, every worker gets the same rate (at least 1).
        let even = Max {
            iops: 3.0,
            group_shares: vec![],
        };
        let p = fraction_point(&base, false, 10, &even).unwrap();
        assert_eq!(p.groups[1].access.rate, Some(Rate::Iops(1)));
    }
}
