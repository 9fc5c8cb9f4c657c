//! The human summaries printed at the end of a run: a job's figures per load
//! point, the SQLIO-style histogram, and `storlab compare`'s tables relative
//! to the baseline.

use super::format::aligned;
use super::relative::Comparison;
use super::stats_ci::Estimate;
use super::vocab::{Figures, Metric};
use crate::model::JobRecord;
use crate::model::{PointResult, SteadyOutcome};
use std::fmt::Write;

/// Rows as plain text: the first column (names) left-aligned, figures right.
fn render(head: &[String], rows: &[Vec<String>]) -> String {
    aligned(head, rows, "", |i| i == 0)
}

/// Column headers: `first` then each metric's column.
fn head(first: &[&str], metrics: &[Metric]) -> Vec<String> {
    let mut h: Vec<String> = first.iter().map(|s| s.to_string()).collect();
    h.extend(metrics.iter().map(|m| m.column().to_string()));
    h
}

/// The throughput and CPU columns of a job's summary.
const THROUGHPUT: [Metric; 9] = [
    Metric::Iops,
    Metric::ReadIops,
    Metric::WriteIops,
    Metric::MbS,
    Metric::PeakMbS,
    Metric::Gbits,
    Metric::ClientCpuPerIo,
    Metric::HostBusy,
    Metric::IopsPerCpuPct,
];

/// The columns of repeated load points.
const REPEATED: [Metric; 4] = [Metric::Iops, Metric::MbS, Metric::LatMean, Metric::LatP99];

/// Throughput and CPU of every load point of a job, then latency, then which
/// points were interrupted or ended by an error (and the error).
pub fn job_summary(job: &JobRecord) -> String {
    job_summary_with(job, true)
}

/// [`job_summary`]; `errors: false` leaves the points' errors out, for a caller
/// that tells the run's error itself (`storlab run`, on stderr, once).
pub fn job_summary_with(job: &JobRecord, errors: bool) -> String {
    let mut out = String::new();
    let profile = job
        .profile
        .map(|p| format!(" ({p:?} profile)").to_lowercase())
        .unwrap_or_default();
    let _ = writeln!(out, "\n{}{profile}: {}", job.name, job.description);
    if let Some(p) = job.points.first() {
        let _ = writeln!(
            out,
            "target {} · {} I/O · backend {} · {} engine thread(s)",
            p.targets.join(", "),
            p.spec.io_mode(),
            p.backend,
            p.threads
        );
    }
    let latency: Vec<Metric> = Metric::LATENCY_MS
        .into_iter()
        .chain([Metric::Errors])
        .collect();
    let mut main = Vec::new();
    let mut lat = Vec::new();
    for p in &job.points {
        let f = Figures::of(&p.summary);
        let mut row = vec![
            p.label.clone(),
            p.spec.total_vms().to_string(),
            p.spec.total_iodepth().to_string(),
        ];
        row.extend(THROUGHPUT.iter().map(|m| m.cell(&f)));
        main.push(row);
        let mut row = vec![p.label.clone()];
        row.extend(latency.iter().map(|m| m.cell(&f)));
        lat.push(row);
    }
    out.push_str(&render(
        &head(&["load point", "VMs", "OIO"], &THROUGHPUT),
        &main,
    ));
    out.push('\n');
    out.push_str(&render(&head(&["load point"], &latency), &lat));
    out.push_str(&repeats(job));
    for p in &job.points {
        if p.interrupted {
            let _ = writeln!(
                out,
                "{}: interrupted; the figures cover what was measured",
                p.label
            );
        }
        if let Some(e) = p.error.as_ref().filter(|_| errors) {
            let _ = writeln!(out, "{}: ended by an error: {e}", p.label);
        }
        if let Some(s) = &p.steady {
            out.push_str(&steady_line(&p.label, s));
        }
        if let Some(b) = &p.bound {
            let _ = writeln!(out, "{}: bound by {b}", p.label);
        }
        if let Some(l) = &p.summary.issue_lag {
            let _ = writeln!(
                out,
                "{}: issued behind the trace's times by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} I/Os)",
                p.label, l.p50_us, l.p99_us, l.max_us, l.ios
            );
        }
    }
    out
}

/// What the steady-state gate found for one point: when the ramp ended, the
/// settled figure, and each flag on its own line.
pub fn steady_line(label: &str, s: &SteadyOutcome) -> String {
    let when = match s.settled_at_s {
        Some(t) => format!("steady after {t:.1} s"),
        None => format!("not steady after the full ramp ({:.1} s)", s.ramp_s),
    };
    let verdict = if s.flags.is_empty() {
        "the measured period stayed steady"
    } else {
        "FLAGGED"
    };
    let mut out = format!(
        "{label}: steady-state gate {}: {when} at {}; {verdict}\n",
        s.gate, s.steady_value
    );
    for f in &s.flags {
        out.push_str(&format!("  {label}: {f}\n"));
    }
    out
}

/// Load points run more than once (`--repeat`): each figure's mean and the
/// half-width of its 95% confidence interval. Empty when nothing repeated.
fn repeats(job: &JobRecord) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for p in &job.points {
        if !labels.contains(&p.label.as_str()) {
            labels.push(&p.label);
        }
    }
    let mut rows = Vec::new();
    for label in labels {
        let ps: Vec<&PointResult> = job.points.iter().filter(|p| p.label == label).collect();
        if ps.len() < 2 {
            continue;
        }
        let mut row = vec![label.to_string(), ps.len().to_string()];
        for m in REPEATED {
            let v: Vec<f64> = ps
                .iter()
                .filter_map(|p| m.value(&Figures::of(&p.summary)))
                .collect();
            row.push(m.fmt_estimate(&Estimate::of(&v)));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\nrepeated load points: mean ± 95% confidence interval\n{}",
        render(&head(&["load point", "runs"], &REPEATED), &rows)
    )
}

/// SQLIO-style latency histogram of one point: I/Os in 1 ms buckets 0..24 ms and 24+.
pub fn ms_histogram(p: &PointResult) -> String {
    let h = &p.summary.ms_histogram;
    let total: u64 = h.iter().sum();
    let mut out = format!("latency histogram, {} (ms: % of I/Os)\n", p.label);
    for (i, c) in h.iter().enumerate() {
        let label = if i + 1 == h.len() {
            format!("{i}+")
        } else {
            i.to_string()
        };
        let pct = if total > 0 {
            *c as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let bar = "#".repeat((pct / 2.0).round() as usize);
        let _ = writeln!(out, "{label:>4}: {pct:5.1} {bar}");
    }
    out
}

/// The figures of `storlab compare`'s tables, each with its figure relative
/// to the baseline (`true`) or without.
const COMPARED: [(Metric, bool); 9] = [
    (Metric::Iops, true),
    (Metric::MbS, true),
    (Metric::LatMean, true),
    (Metric::LatP99, true),
    (Metric::ClientCpuPerIo, false),
    (Metric::ServerCpuPerIo, false),
    (Metric::BothCpuPerIo, true),
    (Metric::ServerCpuPerMb, false),
    (Metric::HostBusy, false),
];

/// The mark beside a figure measured while every CPU of the machine was
/// busy: the figure measures this machine (the point's bound says so).
pub const MACHINE_MARK: &str = "!";

/// What a table's note says of [`MACHINE_MARK`].
pub const MACHINE_NOTE: &str = "! = measured while this machine's CPUs were saturated: the figure measures this machine, not the protocol or the storage";

/// The studies' table for every load point of a comparison: a row per
/// target with each figure and, in the `rel` columns, the figure relative to
/// the baseline = 100 (repeats: mean ±95% confidence interval, "≈" within
/// noise); then, for repeated points, whether each target's IOPS differ from
/// the baseline's beyond the noise.
pub fn comparison_tables(c: &Comparison) -> String {
    let tables: Vec<_> = COMPARED.iter().map(|&(m, _)| c.table(m)).collect();
    let mut head = vec!["target".to_string()];
    for (m, rel) in COMPARED {
        head.push(m.column().into());
        if rel {
            head.push("rel".into());
        }
    }
    head.push("bound".into());
    let baseline = c.baseline_name();
    let on = match c.measured_on() {
        d if d.is_empty() => String::new(),
        d => format!("; {d}"),
    };
    let mut out = String::new();
    for (k, (job, label)) in c.keys.iter().enumerate() {
        let title = if label == job {
            job.clone()
        } else {
            format!("{job} · {label}")
        };
        let _ = writeln!(
            out,
            "\n{title}   (relative to {baseline} = 100{on}; latency and CPU: lower is better)"
        );
        let mut flagged = false;
        let mut rows = Vec::new();
        for (t, target) in c.targets.iter().enumerate() {
            if c.points(k, t).is_empty() {
                continue;
            }
            let mark = if c.machine_bound(k, t) {
                flagged = true;
                MACHINE_MARK
            } else {
                ""
            };
            let mut row = vec![target.clone()];
            for (&(m, rel), table) in COMPARED.iter().zip(&tables) {
                let cell = table.rows[k].cells[t].as_ref();
                row.push(cell.map_or_else(|| "–".into(), |x| format!("{}{mark}", x.fmt(m))));
                if rel {
                    row.push(cell.map_or_else(|| "–".into(), |x| x.fmt_relative()));
                }
            }
            row.push(c.bound(k, t).map_or_else(|| "–".into(), |b| b.cell()));
            rows.push(row);
        }
        out.push_str(&render(&head, &rows));
        let _ = writeln!(
            out,
            "(CPU per I/O by side: client = storlab over the measured intervals; server = the \
             target's server processes around the whole point; rel: client + server; host busy: \
             every process of this machine; bound: what limited the point, `storlab results show` \
             has the figures that decided)"
        );
        if flagged {
            let _ = writeln!(out, "({MACHINE_NOTE})");
        }
        out.push_str(&noise(c, &tables[0], k));
    }
    out
}

/// For a repeated point: each target's IOPS as mean ± 95% confidence
/// interval and whether it differs from the baseline's beyond the noise
/// (Welch's t-test). Empty when nothing was repeated.
fn noise(c: &Comparison, iops: &super::relative::Table, k: usize) -> String {
    let cells = &iops.rows[k].cells;
    if cells.iter().flatten().all(|x| x.est.n < 2) {
        return String::new();
    }
    let baseline = c.baseline_name();
    let mut out = String::new();
    for (t, cell) in cells.iter().enumerate() {
        let Some(cell) = cell else { continue };
        let verdict = match cell.within_noise {
            None if t == c.baseline => "baseline".to_string(),
            None => format!("no {baseline} figure to compare with"),
            Some(true) => format!("within noise of {baseline}"),
            Some(false) => format!("differs from {baseline} beyond noise"),
        };
        let _ = writeln!(
            out,
            "  {}: {} {} (95% CI, n = {}): {verdict}",
            c.targets[t],
            Metric::Iops.name(),
            cell.fmt(Metric::Iops),
            cell.est.n
        );
    }
    out
}
