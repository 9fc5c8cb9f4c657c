//! The report's tables as plain rows ([`TextTable`]), shared by the Markdown
//! and HTML reports, and the Markdown report itself.

use super::format::{TextTable, fmt_cell, fmt_num, fmt_relative};
use super::relative::{Comparison, Metric};
use crate::model::RunRecord;
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
    let rows = c
        .table(m)
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.job.clone(), r.label.clone()];
            for cell in &r.cells {
                match cell {
                    Some(cell) => {
                        cells.push(fmt_cell(cell));
                        cells.push(fmt_relative(cell));
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
    let mut note = format!(
        "{}: relative to {} = 100; {better}.",
        m.name(),
        c.baseline_name()
    );
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
    let mut rows = Vec::new();
    for s in c.curves() {
        for curve in &s.curves {
            let mut row = vec![s.job.clone(), c.targets[curve.target].clone()];
            match curve.knee() {
                Some(k) => {
                    let p = &curve.points[k];
                    row.extend([p.label.clone(), fmt_num(p.iops), fmt_num(p.mean_ms)]);
                }
                None => row.extend(["–".into(), "–".into(), "–".into()]),
            }
            match curve.max_iops_under(opts.p99_under_ms) {
                Some(i) => {
                    let p = &curve.points[i];
                    row.extend([p.label.clone(), fmt_num(p.iops), fmt_num(p.p99_ms)]);
                }
                None => row.extend(["none".into(), "–".into(), "–".into()]),
            }
            rows.push(row);
        }
    }
    TextTable {
        title: "Sweeps: knee and max IOPS under a p99 bound".into(),
        head: [
            "job",
            "target",
            "knee point",
            "knee IOPS",
            "knee mean ms",
            &format!("max IOPS, p99 ≤ {bound} ms: point"),
            "IOPS",
            "p99 ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        note: "The knee is the load point with the most IOPS per ms of mean latency (past it, latency grows faster than throughput).".into(),
    }
}

/// Throughput average and peak next to host CPU average and peak (study 003).
pub fn throughput_table(c: &Comparison) -> TextTable {
    let mut rows = Vec::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        for (t, target) in c.targets.iter().enumerate() {
            let pts = c.points(k, t);
            if pts.is_empty() {
                continue;
            }
            let avg = |f: &dyn Fn(&crate::stats::Summary) -> f64| {
                pts.iter().map(|p| f(&p.summary)).sum::<f64>() / pts.len() as f64
            };
            let (link_avg, link_peak) = match super::hosts::link_pct(c, k, t) {
                Some((a, p)) => (
                    format!("{:.1}", super::stats_ci::mean(&a)),
                    format!("{:.1}", super::stats_ci::mean(&p)),
                ),
                None => ("–".into(), "–".into()),
            };
            rows.push(vec![
                job.clone(),
                label.clone(),
                target.clone(),
                format!("{:.3}", avg(&|s| s.total.gbit_s)),
                format!("{:.3}", avg(&|s| s.peak_gbit_s)),
                link_avg,
                link_peak,
                format!("{:.1}", avg(&|s| s.cpu.host_busy_pct)),
                format!("{:.1}", avg(&|s| s.cpu.host_busy_peak_pct)),
            ]);
        }
    }
    TextTable {
        title: "Throughput and host CPU".into(),
        head: [
            "job",
            "load point",
            "target",
            "Gb/s avg",
            "Gb/s peak",
            "avg % of link",
            "peak % of link",
            "host CPU % avg",
            "host CPU % peak",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        note: "Peak is the best single interval. % of link is against the lab's shaped link rate (see Environment), shown only when the run recorded one.".into(),
    }
}

/// The measuring machine of every run.
pub fn environment_table(c: &Comparison) -> TextTable {
    let rows = c
        .sources
        .iter()
        .map(|s| {
            let e = &s.run.environment;
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
                format!("{:.1}", e.memory_bytes as f64 / (1u64 << 30) as f64),
                e.storlab_version.clone(),
                link.as_ref()
                    .map(|l| l.describe())
                    .unwrap_or_else(|| "–".into()),
                link.as_ref()
                    .and_then(|l| l.mtu)
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    TextTable {
        title: "Environment".into(),
        head: [
            "run",
            "started",
            "status",
            "host",
            "OS",
            "kernel",
            "CPU",
            "cores",
            "memory GiB",
            "storlab",
            "link",
            "MTU",
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
    if r.error.is_some() {
        "error"
    } else if r.interrupted {
        "interrupted"
    } else if r.complete {
        "complete"
    } else {
        "incomplete"
    }
}

/// A command line a POSIX shell runs as given.
pub fn shell_line(argv: &[String]) -> String {
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
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Every table of the report, in order.
pub fn tables(c: &Comparison, opts: &ReportOptions) -> Vec<TextTable> {
    let mut out: Vec<TextTable> = Metric::ALL.iter().map(|&m| metric_table(c, m)).collect();
    let sweeps = sweep_table(c, opts);
    if !sweeps.rows.is_empty() {
        out.push(sweeps);
    }
    out.push(throughput_table(c));
    let hosts = super::hosts::host_table(c);
    if !hosts.rows.is_empty() {
        out.push(hosts);
    }
    out.push(environment_table(c));
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// One table as Markdown.
pub fn render_table(t: &TextTable) -> String {
    let mut out = format!("## {}\n\n", t.title);
    let line = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells
                .iter()
                .map(|c| md_cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    out.push_str(&line(&t.head));
    out.push_str(&format!(
        "|{}\n",
        t.head
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 2 { " --- |" } else { " ---: |" })
            .collect::<String>()
    ));
    for r in &t.rows {
        out.push_str(&line(r));
    }
    if !t.note.is_empty() {
        let _ = write!(out, "\n{}\n", t.note);
    }
    out.push('\n');
    out
}

/// The whole report as Markdown.
pub fn render(c: &Comparison, opts: &ReportOptions) -> String {
    let mut out = String::from("# storlab report\n\n");
    let _ = writeln!(
        out,
        "Runs: {}. Baseline: {} = 100.\n",
        c.sources
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        c.baseline_name()
    );
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
