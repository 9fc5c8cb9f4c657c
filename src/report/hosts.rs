//! What a report shows about the network and the fleet: the link a run went
//! over (rate and MTU, only as the run recorded them, never guessed), the
//! throughput as a share of that link, and each host's own figures when a
//! point ran on more than one host.

use super::format::TextTable;
use super::relative::Comparison;
use super::stats_ci::Estimate;
use super::vocab::{Figures, Metric, Unit, gbit_s};
use crate::model::RunRecord;
use crate::model::{HostResult, PointResult};

/// The link of a run, as recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkInfo {
    /// The link as given to `lab up` (`10gbe`); `None`: unshaped or unknown.
    pub name: Option<String>,
    /// Rate in bits per second, when the lab shapes its links.
    pub rate_bps: Option<u64>,
    /// MTU, when recorded.
    pub mtu: Option<u32>,
}

impl LinkInfo {
    /// "10gbe (10 Gb/s)", "loopback", "unshaped", or "–".
    pub fn describe(&self) -> String {
        match (&self.name, self.rate_bps) {
            (Some(n), None) if n == "loopback" => n.clone(),
            (Some(n), Some(r)) => format!("{n} ({})", Unit::GbitS.show(gbit_s(r as f64))),
            (None, Some(r)) => Unit::GbitS.show(gbit_s(r as f64)),
            _ if self.mtu.is_some() => "unshaped".into(),
            _ => "–".into(),
        }
    }
}

/// The link a run recorded: its environment's network, else (runs of
/// `storlab compare` recorded before that) the lab state it kept. `None`
/// when the run recorded no lab.
pub fn link_of(run: &RunRecord) -> Option<LinkInfo> {
    if let Some(n) = &run.environment.network {
        // A loopback lab has no link: named so, never given a rate.
        let loopback = n.net.as_deref() == Some("loopback");
        return Some(LinkInfo {
            name: n.link.clone().or(loopback.then(|| "loopback".into())),
            rate_bps: n.link_rate_bps,
            mtu: Some(n.mtu),
        });
    }
    let lab = run.compare.as_ref()?.lab.as_ref()?;
    let link = lab.get("link").filter(|l| !l.is_null());
    Some(LinkInfo {
        name: link
            .and_then(|l| l.get("name"))
            .and_then(|v| v.as_str())
            .map(String::from),
        rate_bps: link
            .and_then(|l| l.get("rate_bps"))
            .and_then(|v| v.as_u64()),
        mtu: lab
            .get("mtu")
            .and_then(|v| v.as_u64())
            .and_then(|v| u32::try_from(v).ok()),
    })
}

/// Throughput as % of the link: (average, peak) of every repeat of key `k`
/// on target `t`; `None` unless every repeat's run recorded its link rate.
pub fn link_pct(c: &Comparison, k: usize, t: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let pts = c.sourced_points(k, t);
    if pts.is_empty() {
        return None;
    }
    let mut avg = Vec::new();
    let mut peak = Vec::new();
    for (src, p) in pts {
        let f = Figures {
            link_bps: link_of(&src.run)?.rate_bps.map(|r| r as f64),
            ..Figures::of(&p.summary)
        };
        avg.push(Metric::LinkPct.value(&f)?);
        peak.push(Metric::LinkPctPeak.value(&f)?);
    }
    Some((avg, peak))
}

/// Whether any point ran on more than one host.
pub fn has_fleet(c: &Comparison) -> bool {
    c.sources
        .iter()
        .flat_map(|s| s.run.jobs.iter())
        .flat_map(|j| j.points.iter())
        .any(|p| p.hosts.len() > 1)
}

/// The hosts of the repeats of key `k` on target `t`, by host name in order
/// of first appearance: every repeat's result of that host.
pub fn hosts_of(c: &Comparison, k: usize, t: usize) -> Vec<(String, Vec<&HostResult>)> {
    let mut out: Vec<(String, Vec<&HostResult>)> = Vec::new();
    for p in c.points(k, t) {
        if p.hosts.len() < 2 {
            continue;
        }
        for h in &p.hosts {
            match out.iter_mut().find(|(n, _)| *n == h.host) {
                Some((_, v)) => v.push(h),
                None => out.push((h.host.clone(), vec![h])),
            }
        }
    }
    out
}

/// A host's figures, as its table and the comparison CSV show them.
pub const HOST_METRICS: [Metric; 4] = [Metric::Iops, Metric::MbS, Metric::LatMean, Metric::LatP99];

/// The values of `m` over a host's repeats (those where it has one).
pub fn host_values(m: Metric, hs: &[&HostResult]) -> Vec<f64> {
    hs.iter()
        .filter_map(|h| m.value(&Figures::of(&h.summary)))
        .collect()
}

/// One row per host of every point that ran on more than one host; empty
/// rows when none did. Repeats show the mean.
pub fn host_table(c: &Comparison) -> TextTable {
    let mut rows = Vec::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        for (t, target) in c.targets.iter().enumerate() {
            for (host, hs) in hosts_of(c, k, t) {
                let mut row = vec![
                    job.clone(),
                    label.clone(),
                    target.clone(),
                    host,
                    hs[0].vms.len().to_string(),
                ];
                for m in HOST_METRICS {
                    row.push(m.fmt(Estimate::of(&host_values(m, &hs)).mean));
                }
                let lost = hs.iter().filter(|h| h.lost).count();
                row.push(match (lost, hs.iter().find_map(|h| h.error.as_deref())) {
                    (0, None) => "ok".into(),
                    (0, Some(e)) => format!("error: {e}"),
                    (n, _) => format!("lost in {n} of {}", hs.len()),
                });
                rows.push(row);
            }
        }
    }
    let mut head: Vec<String> = ["job", "load point", "target", "host", "VMs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(HOST_METRICS.iter().map(|m| m.column().to_string()));
    head.push("status".into());
    TextTable {
        title: "Per host".into(),
        head,
        rows,
        note: "Each host's own measured intervals (a fleet run's figures are their sum); repeats show the mean.".into(),
    }
}

/// The first repeat of key `k` on target `t` that ran on several hosts.
pub fn fleet_point(c: &Comparison, k: usize, t: usize) -> Option<&PointResult> {
    c.points(k, t).into_iter().find(|p| p.hosts.len() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Network;

    #[test]
    fn a_loopback_lab_is_named_so_and_has_no_link_rate() {
        let mut run = RunRecord::new(vec!["storlab".into()]);
        run.environment.network = Some(Network {
            lab: "/tmp/lab".into(),
            mtu: 65536,
            net: Some("loopback".into()),
            ..Network::default()
        });
        let l = link_of(&run).unwrap();
        assert_eq!((l.describe().as_str(), l.rate_bps), ("loopback", None));
        run.environment.network.as_mut().unwrap().net = Some("netns".into());
        assert_eq!(link_of(&run).unwrap().describe(), "unshaped");
    }
}
