//! The report's tables as plain rows ([`TextTable`]), shared by the Markdown
//! and HTML reports, and the Markdown report itself.

use super::format::{TextTable, md_rows};
use super::relative::{Comparison, CurvePoint};
use super::stats_ci::mean;
use super::vocab::{Metric, format_size};
use crate::model::{Environment, RunRecord};
use std::fmt::Write;

/// Options of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// The p99 bound of "max IOPS with p99 under X ms".
    pub p99_under_ms: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { p99_under_ms: 5.0 }
    }
}

/// "job · label" of a row key.
pub fn key_name(job: &str, label: &str) -> String {
    format!("{job} · {label}")
}

/// One figure: absolute value (mean ±95% CI with repeats) and relative per
/// target.
pub fn metric_table(c: &Comparison, m: Metric) -> TextTable {
    let mut head = vec!["job".to_string(), "load point".to_string()];
    for (i, t) in c.targets.iter().enumerate() {
        let b = if i == c.baseline { " (baseline)" } else { "" };
        head.push(format!("{t}{b}"));
        head.push(format!("{t} rel."));
    }
    let mut flagged = false;
    let rows = c
        .table(m)
        .rows
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let mut cells = vec![r.job.clone(), r.label.clone()];
            for (t, cell) in r.cells.iter().enumerate() {
                match cell {
                    Some(cell) => {
                        let mark = if c.machine_bound(k, t) {
                            flagged = true;
                            super::text::MACHINE_MARK
                        } else {
                            ""
                        };
                        cells.push(format!("{}{mark}", cell.fmt(m)));
                        cells.push(cell.fmt_relative());
                    }
                    None => cells.extend(["–".to_string(), "–".to_string()]),
                }
            }
            cells
        })
        .collect();
    let better = if m.higher_is_better() {
        "higher is better"
    } else {
        "lower is better"
    };
    let on = match c.measured_on() {
        d if d.is_empty() => String::new(),
        d => format!(" Measured on {d}."),
    };
    let mut note = format!(
        "{}: relative to {} = 100; {better}.{on}",
        m.name(),
        c.baseline_name()
    );
    if flagged {
        let _ = write!(note, " {}.", super::text::MACHINE_NOTE);
    }
    if c.has_repeats() {
        note.push_str(" Repeated points show mean ±95% confidence interval; ≈ marks a difference within noise (Welch's t-test, 95%).");
    }
    TextTable {
        title: m.name().to_string(),
        head,
        rows,
        note,
    }
}

/// Knee and "max IOPS with p99 under X ms" of every sweep.
pub fn sweep_table(c: &Comparison, opts: &ReportOptions) -> TextTable {
    let bound = opts.p99_under_ms;
    // A point's label, IOPS and latency `lat` (`none` for its label when absent).
    let point = |p: Option<&CurvePoint>, lat: Metric, none: &str| match p {
        Some(p) => {
            let ms = if lat == Metric::LatP99 {
                p.p99_ms
            } else {
                p.mean_ms
            };
            [p.label.clone(), Metric::Iops.fmt(p.iops), lat.fmt(ms)]
        }
        None => [none.into(), "–".into(), "–".into()],
    };
    let mut rows = Vec::new();
    for s in c.curves() {
        for curve in &s.curves {
            let mut row = vec![s.job.clone(), c.targets[curve.target].clone()];
            let knee = curve.knee().map(|k| &curve.points[k]);
            row.extend(point(knee, Metric::LatMean, "–"));
            let best = curve.max_iops_under(bound).map(|i| &curve.points[i]);
            row.extend(point(best, Metric::LatP99, "none"));
            rows.push(row);
        }
    }
    TextTable {
        title: "Sweeps: knee and max IOPS under a p99 bound".into(),
        head: vec![
            "job".into(),
            "target".into(),
            "knee point".into(),
            format!("knee {}", Metric::Iops.column()),
            format!("knee {}", Metric::LatMean.column()),
            format!("max IOPS, p99 ≤ {bound} ms: point"),
            Metric::Iops.column().into(),
            Metric::LatP99.column().into(),
        ],
        rows,
        note: "The knee is the load point with the most IOPS per ms of mean latency (past it, latency grows faster than throughput).".into(),
    }
}

/// The figures of the throughput table, after job, load point and target;
/// the link's share sits after the Gb/s.
const THROUGHPUT: [Metric; 6] = [
    Metric::Gbits,
    Metric::PeakGbits,
    Metric::LinkPct,
    Metric::LinkPctPeak,
    Metric::HostBusy,
    Metric::HostBusyPeak,
];

/// Throughput average and peak next to host CPU average and peak (study
/// 003); means over repeats.
pub fn throughput_table(c: &Comparison) -> TextTable {
    let mut rows = Vec::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        for (t, target) in c.targets.iter().enumerate() {
            if c.points(k, t).is_empty() {
                continue;
            }
            let link = super::hosts::link_pct(c, k, t);
            let mut row = vec![job.clone(), label.clone(), target.clone()];
            for m in THROUGHPUT {
                let v = match (m, &link) {
                    (Metric::LinkPct, Some((avg, _))) => Some(mean(avg)),
                    (Metric::LinkPctPeak, Some((_, peak))) => Some(mean(peak)),
                    (Metric::LinkPct | Metric::LinkPctPeak, None) => None,
                    _ => Some(mean(&c.values(m, k, t))),
                };
                row.push(v.map_or_else(|| "–".into(), |v| m.fmt(v)));
            }
            rows.push(row);
        }
    }
    let mut head: Vec<String> = ["job", "load point", "target"].map(String::from).to_vec();
    head.extend(THROUGHPUT.iter().map(|m| m.column().to_string()));
    TextTable {
        title: "Throughput and host CPU".into(),
        head,
        rows,
        note: "Peak is the best single interval. % of link is against the lab's shaped link rate (see Environment), shown only when the run recorded one.".into(),
    }
}

/// What bound every load point on every target, with the figure that
/// decided and each candidate's share.
pub fn bound_table(c: &Comparison) -> TextTable {
    let mut rows = Vec::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        for (t, target) in c.targets.iter().enumerate() {
            let Some(b) = c.bound(k, t) else { continue };
            let shares = b
                .shares
                .iter()
                .map(|s| format!("{} {:.0}%", s.what, 100.0 * s.share))
                .collect::<Vec<_>>()
                .join(", ");
            rows.push(vec![
                job.clone(),
                label.clone(),
                target.clone(),
                b.by.as_str().to_string(),
                if b.machine { "yes" } else { "no" }.to_string(),
                b.detail.clone(),
                shares,
            ]);
        }
    }
    TextTable {
        title: "What bound each point".into(),
        head: [
            "job",
            "load point",
            "target",
            "bound",
            "machine saturated",
            "why",
            "every share measured",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: format!(
            "A resource at {:.0}% of its capacity or more is saturated; the machine is flagged at {:.0}% of its CPUs busy, and its figures are marked {} in every table.",
            100.0 * crate::model::SATURATED,
            100.0 * crate::model::MACHINE_BUSY,
            super::text::MACHINE_MARK
        ),
    }
}

/// The measuring machine of every run.
pub fn environment_table(c: &Comparison) -> TextTable {
    let rows = c
        .sources
        .iter()
        .map(|s| {
            let e = &s.run.environment;
            if *e == Environment::default() {
                // A `storlab meta --json` file records no machine.
                let mut row = vec!["–".to_string(); 13];
                row[0] = s.name.clone();
                row[2] = status(&s.run).into();
                row[3] = "not recorded".into();
                return row;
            }
            let link = super::hosts::link_of(&s.run);
            vec![
                s.name.clone(),
                fmt_time(s.run.started_unix),
                status(&s.run).into(),
                e.hostname.clone(),
                e.os.clone(),
                e.kernel.clone(),
                e.cpu_model.clone(),
                e.cores.to_string(),
                format_size(e.memory_bytes),
                e.storlab_version.clone(),
                link.as_ref()
                    .map(|l| l.describe())
                    .unwrap_or_else(|| "–".into()),
                link.as_ref()
                    .and_then(|l| l.mtu)
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "–".into()),
                e.network
                    .as_ref()
                    .and_then(|n| n.medium.clone())
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    TextTable {
        title: "Environment".into(),
        head: [
            "run", "started", "status", "host", "OS", "kernel", "CPU", "cores", "memory",
            "storlab", "link", "MTU", "medium",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        note: String::new(),
    }
}

/// How a run ended, in a word.
pub fn status(r: &RunRecord) -> &'static str {
    r.status()
}

/// A command line a POSIX shell runs as given ("not recorded" for none).
pub fn shell_line(argv: &[String]) -> String {
    if argv.is_empty() {
        return "(not recorded)".into();
    }
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Unix seconds as "YYYY-MM-DD HH:MM:SS UTC".
pub fn fmt_time(unix: f64) -> String {
    let secs = unix.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = super::format::civil_date(days);
    let time = super::format::clock_time(rem as u64);
    format!("{y:04}-{m:02}-{d:02} {time} UTC")
}

/// Every table of the report, in order.
pub fn tables(c: &Comparison, opts: &ReportOptions) -> Vec<TextTable> {
    let mut out: Vec<TextTable> = Vec::new();
    if c.has_points() {
        out.extend(c.metrics().into_iter().map(|m| metric_table(c, m)));
        let sweeps = sweep_table(c, opts);
        if !sweeps.rows.is_empty() {
            out.push(sweeps);
        }
        out.push(throughput_table(c));
        let bound = bound_table(c);
        if !bound.rows.is_empty() {
            out.push(bound);
        }
        let net = super::network::network_table(c);
        if !net.rows.is_empty() {
            out.push(net);
        }
        let hosts = super::hosts::host_table(c);
        if !hosts.rows.is_empty() {
            out.push(hosts);
        }
    }
    out.extend(super::meta::tables(&c.sources));
    out.push(environment_table(c));
    out
}

/// The report's opening line: its runs, and the baseline when it has load
/// points.
pub fn runs_line(c: &Comparison) -> String {
    let names = c
        .sources
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if c.has_points() {
        format!("Runs: {names}. Baseline: {} = 100.", c.baseline_name())
    } else {
        format!("Runs: {names}.")
    }
}

/// One table as Markdown: the first two columns (names) left-aligned, the
/// figures right-aligned.
pub fn render_table(t: &TextTable) -> String {
    let mut out = format!("## {}\n\n", t.title);
    out.push_str(&md_rows(&t.head, &t.rows, |i| i >= 2));
    if !t.note.is_empty() {
        let _ = write!(out, "\n{}\n", t.note);
    }
    out.push('\n');
    out
}

/// The whole report as Markdown.
pub fn render(c: &Comparison, opts: &ReportOptions) -> String {
    let mut out = String::from("# storlab report\n\n");
    let _ = writeln!(out, "{}\n", runs_line(c));
    for t in tables(c, opts) {
        out.push_str(&render_table(&t));
    }
    out.push_str("## Reproduce\n\n");
    for s in &c.sources {
        let _ = writeln!(
            out,
            "{}:\n\n```\n{}\n```\n",
            s.name,
            shell_line(&s.run.command)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_quoting() {
        assert_eq!(fmt_time(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_time(1_763_750_000.9), "2025-11-21 18:33:20 UTC");
        assert_eq!(fmt_time(951_782_400.0), "2000-02-29 00:00:00 UTC");
        let argv = ["storlab", "run", "-t", "file:/a b", "it's"].map(String::from);
        assert_eq!(shell_line(&argv), "storlab run -t 'file:/a b' 'it'\\''s'");
    }
}
