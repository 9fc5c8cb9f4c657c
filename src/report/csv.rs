//! CSV exports: a run's interval time series (one row per interval of every
//! load point) and a comparison's figures in long form.

use super::format::{csv_doc, csv_field, opt_num};
use super::hosts;
use super::relative::Comparison;
use super::stats_ci::Estimate;
use super::vocab::{Figures, Metric};
use crate::model::Phase;
use crate::model::RunRecord;
use std::fmt::Write;

/// The columns of [`intervals`] before its figures: where the interval is
/// and its raw counters.
const INTERVAL_HEAD: &str =
    "job,point,interval,phase,start_s,seconds,read_ios,read_bytes,write_ios,write_bytes";

/// The figures of [`intervals`], after its raw counters.
const INTERVAL_FIGURES: [Metric; 9] = [
    Metric::Errors,
    Metric::Iops,
    Metric::MbS,
    Metric::LatMeanUs,
    Metric::LatP99Us,
    Metric::LatMaxUs,
    Metric::ClientUserS,
    Metric::ClientSysS,
    Metric::HostBusy,
];

/// The header of [`intervals`]; its columns are documented in docs/json-schema.md.
pub fn header() -> String {
    let mut h = String::from(INTERVAL_HEAD);
    for m in INTERVAL_FIGURES {
        h.push(',');
        h.push_str(m.key());
    }
    h
}

/// Render every interval of `run`: one row per interval of every load point.
/// A figure an interval has no value for (no I/O for a latency) is 0.
pub fn intervals(run: &RunRecord) -> String {
    let mut out = header();
    out.push('\n');
    for job in &run.jobs {
        for p in &job.points {
            for r in &p.intervals {
                let s = &r.stats;
                let _ = write!(
                    out,
                    "{},{},{},{},{:.3},{:.3},{},{},{},{}",
                    csv_field(&job.name),
                    csv_field(&p.label),
                    r.index,
                    if r.phase == Phase::Ramp {
                        "ramp"
                    } else {
                        "measure"
                    },
                    r.start_s,
                    r.seconds,
                    s.read.ios,
                    s.read.bytes,
                    s.write.ios,
                    s.write.bytes,
                );
                let summary = r.summary();
                let f = Figures::of(&summary);
                for m in INTERVAL_FIGURES {
                    let v = m.value(&f).unwrap_or(0.0);
                    let _ = write!(out, ",{v:.prec$}", prec = m.unit().csv_decimals());
                }
                out.push('\n');
            }
        }
    }
    out
}

/// The header of [`comparison`].
pub const COMPARISON_HEADER: &str =
    "metric,job,point,target,baseline,n,mean,stddev,ci95,relative,within_noise,host";

/// Every table in long form (metric names of [`super::vocab`]): one line per
/// figure, row and target (`host` empty); then the peak Gb/s and, where the runs recorded their link rate,
/// the average and peak as % of the link; then, for points that ran on
/// several hosts, each host's IOPS, MB/s and latency (`host` set, no
/// relative figures); last, the `storlab meta` runs' figures per operation
/// type ([`super::meta::csv_rows`]).
pub fn comparison(c: &Comparison) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    // One line: (metric, key, target, estimate, relative, within noise, host).
    let mut line = |m: Metric,
                    k: usize,
                    t: usize,
                    est: &Estimate,
                    relative: Option<f64>,
                    noise: Option<bool>,
                    host: &str| {
        let (job, label) = &c.keys[k];
        rows.push(vec![
            m.key().into(),
            job.clone(),
            label.clone(),
            c.targets[t].clone(),
            (t == c.baseline).to_string(),
            est.n.to_string(),
            format!("{:.6}", est.mean),
            format!("{:.6}", est.stddev),
            opt_num(est.ci95, 6),
            opt_num(relative, 2),
            noise.map(|b| b.to_string()).unwrap_or_default(),
            host.into(),
        ]);
    };
    for m in c.metrics() {
        for (k, row) in c.table(m).rows.iter().enumerate() {
            for (t, cell) in row.cells.iter().enumerate() {
                let Some(cell) = cell else { continue };
                line(m, k, t, &cell.est, cell.relative, cell.within_noise, "");
            }
        }
    }
    // Figures without relative columns.
    let mut plain = |m: Metric, k: usize, t: usize, v: &[f64], host: &str| {
        line(m, k, t, &Estimate::of(v), None, None, host);
    };
    for k in 0..c.keys.len() {
        for t in 0..c.targets.len() {
            if c.points(k, t).is_empty() {
                continue;
            }
            plain(
                Metric::PeakGbits,
                k,
                t,
                &c.values(Metric::PeakGbits, k, t),
                "",
            );
            if let Some((avg, peak)) = hosts::link_pct(c, k, t) {
                plain(Metric::LinkPct, k, t, &avg, "");
                plain(Metric::LinkPctPeak, k, t, &peak, "");
            }
        }
    }
    for k in 0..c.keys.len() {
        for t in 0..c.targets.len() {
            for (host, hs) in hosts::hosts_of(c, k, t) {
                for m in hosts::HOST_METRICS {
                    plain(m, k, t, &hosts::host_values(m, &hs), &host);
                }
            }
        }
    }
    // What bound each point: `bound:LIMIT` with the bounding share as its
    // mean, and `machine_saturated` 1 or 0.
    for k in 0..c.keys.len() {
        for t in 0..c.targets.len() {
            let Some(b) = c.bound(k, t) else { continue };
            let share = b
                .shares
                .iter()
                .find(|s| s.limit == b.by)
                .map_or(0.0, |s| s.share);
            let (job, label) = &c.keys[k];
            for (metric, v) in [
                (format!("bound:{}", b.by.as_str().replace(' ', "-")), share),
                (
                    "machine_saturated".to_string(),
                    f64::from(u8::from(b.machine)),
                ),
            ] {
                rows.push(vec![
                    metric,
                    job.clone(),
                    label.clone(),
                    c.targets[t].clone(),
                    (t == c.baseline).to_string(),
                    "1".into(),
                    format!("{v:.6}"),
                    format!("{:.6}", 0.0),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    rows.extend(super::meta::csv_rows(c));
    csv_doc(COMPARISON_HEADER, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interval CSV's header, as docs/json-schema.md documents it.
    #[test]
    fn interval_header_is_the_documented_one() {
        assert_eq!(
            header(),
            "job,point,interval,phase,start_s,seconds,read_ios,read_bytes,write_ios,write_bytes,errors,iops,mb_s,lat_mean_us,lat_p99_us,lat_max_us,proc_user_s,proc_sys_s,host_busy_pct"
        );
    }
}
