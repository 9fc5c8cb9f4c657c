//! CSV exports: a run's interval time series (one row per interval of every
//! load point) and a comparison's figures in long form.

use super::format::csv_field;
use super::hosts;
use super::relative::{Comparison, Metric};
use super::stats_ci::Estimate;
use crate::model::Phase;
use crate::model::RunRecord;
use std::fmt::Write;

/// The CSV header; columns are documented in docs/json-schema.md.
pub const HEADER: &str = "job,point,interval,phase,start_s,seconds,read_ios,read_bytes,write_ios,write_bytes,errors,iops,mb_s,lat_mean_us,lat_p99_us,lat_max_us,proc_user_s,proc_sys_s,host_busy_pct";

/// Quote a field if it needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Render every interval of `run`.
pub fn intervals(run: &RunRecord) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for job in &run.jobs {
        for p in &job.points {
            for r in &p.intervals {
                let s = &r.stats;
                let ios = s.read.ios + s.write.ios;
                let bytes = s.read.bytes + s.write.bytes;
                let secs = if r.seconds > 0.0 { r.seconds } else { 1.0 };
                let lat = s.total_lat();
                let _ = writeln!(
                    out,
                    "{},{},{},{},{:.3},{:.3},{},{},{},{},{},{:.1},{:.3},{:.1},{:.1},{:.1},{:.4},{:.4},{:.1}",
                    field(&job.name),
                    field(&p.label),
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
                    s.read.errors + s.write.errors,
                    ios as f64 / secs,
                    bytes as f64 / secs / 1e6,
                    lat.mean_ns() / 1e3,
                    lat.percentile(99.0) as f64 / 1e3,
                    lat.max_ns() as f64 / 1e3,
                    r.cpu.proc_user_s,
                    r.cpu.proc_sys_s,
                    r.cpu.host_busy_pct,
                );
            }
        }
    }
    out
}

/// The header of [`comparison`].
pub const COMPARISON_HEADER: &str =
    "metric,job,point,target,baseline,n,mean,stddev,ci95,relative,within_noise,host";

/// Every table in long form: one line per figure, row and target (`host`
/// empty); then the peak Gb/s and, where the runs recorded their link rate,
/// the average and peak as % of the link; then, for points that ran on
/// several hosts, each host's IOPS, MB/s and latency (`host` set, no
/// relative figures).
pub fn comparison(c: &Comparison) -> String {
    let mut out = String::from(COMPARISON_HEADER);
    out.push('\n');
    let opt = |v: Option<f64>, prec: usize| v.map(|x| format!("{x:.prec$}")).unwrap_or_default();
    for m in Metric::ALL {
        for row in c.table(m).rows {
            for (t, cell) in row.cells.iter().enumerate() {
                let Some(cell) = cell else { continue };
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{:.6},{:.6},{},{},{},",
                    m.key(),
                    csv_field(&row.job),
                    csv_field(&row.label),
                    csv_field(&c.targets[t]),
                    t == c.baseline,
                    cell.est.n,
                    cell.est.mean,
                    cell.est.stddev,
                    opt(cell.est.ci95, 6),
                    opt(cell.relative, 2),
                    cell.within_noise.map(|b| b.to_string()).unwrap_or_default(),
                );
            }
        }
    }
    // A figure without relative columns: (metric, key, target, values, host).
    let mut plain = |metric: &str, k: usize, t: usize, v: &[f64], host: &str| {
        let est = Estimate::of(v);
        let (job, label) = &c.keys[k];
        let _ = writeln!(
            out,
            "{metric},{},{},{},{},{},{:.6},{:.6},{},,,{}",
            csv_field(job),
            csv_field(label),
            csv_field(&c.targets[t]),
            t == c.baseline,
            est.n,
            est.mean,
            est.stddev,
            opt(est.ci95, 6),
            csv_field(host),
        );
    };
    for k in 0..c.keys.len() {
        for t in 0..c.targets.len() {
            let pts = c.points(k, t);
            if pts.is_empty() {
                continue;
            }
            let peak: Vec<f64> = pts.iter().map(|p| p.summary.peak_gbit_s).collect();
            plain("gbit_s_peak", k, t, &peak, "");
            if let Some((avg, peak)) = hosts::link_pct(c, k, t) {
                plain("link_pct_avg", k, t, &avg, "");
                plain("link_pct_peak", k, t, &peak, "");
            }
        }
    }
    for k in 0..c.keys.len() {
        for t in 0..c.targets.len() {
            for (host, hs) in hosts::hosts_of(c, k, t) {
                for f in hosts::HostFigure::ALL {
                    let v: Vec<f64> = hs.iter().map(|h| f.value(h)).collect();
                    plain(f.key(), k, t, &v, &host);
                }
            }
        }
    }
    out
}
