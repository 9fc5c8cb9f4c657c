//! The human summary printed at the end of a run.

use crate::model::JobRecord;
use crate::model::PointResult;
use std::fmt::Write;

/// A simple left/right aligned table.
struct Table {
    head: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn render(&self) -> String {
        let n = self.head.len();
        let mut w: Vec<usize> = self.head.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<String>, out: &mut String| {
            for (i, c) in cells.iter().enumerate() {
                if i == 0 {
                    let _ = write!(out, "{c:<width$}", width = w[0]);
                } else {
                    let _ = write!(out, "  {c:>width$}", width = w[i]);
                }
            }
            out.push('\n');
        };
        line(self.head.iter().map(|s| s.to_string()).collect(), &mut out);
        for r in &self.rows {
            line(r.clone(), &mut out);
        }
        out
    }
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

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
    let mut t = Table {
        head: vec![
            "load point",
            "VMs",
            "OIO",
            "IOPS",
            "read IOPS",
            "write IOPS",
            "MB/s",
            "peak MB/s",
            "Gb/s",
            "CPU s/MIO",
            "host CPU%",
            "IOPS/CPU%",
        ],
        rows: Vec::new(),
    };
    let mut lat = Table {
        head: vec![
            "load point",
            "min ms",
            "mean ms",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "p99.99 ms",
            "max ms",
            "errors",
        ],
        rows: Vec::new(),
    };
    for p in &job.points {
        let s = &p.summary;
        t.rows.push(vec![
            p.label.clone(),
            p.spec.total_vms().to_string(),
            p.spec.total_iodepth().to_string(),
            num(s.total.iops),
            num(s.read.iops),
            num(s.write.iops),
            num(s.total.mb_s),
            num(s.peak_mb_s),
            format!("{:.3}", s.total.gbit_s),
            format!("{:.2}", s.cpu.cpu_s_per_mio),
            format!("{:.1}", s.cpu.host_busy_pct),
            num(s.cpu.iops_per_cpu_pct),
        ]);
        lat.rows.push(vec![
            p.label.clone(),
            ms(s.total.lat_min_us),
            ms(s.total.lat_mean_us),
            ms(s.total.p50_us),
            ms(s.total.p90_us),
            ms(s.total.p99_us),
            ms(s.total.p999_us),
            ms(s.total.p9999_us),
            ms(s.total.lat_max_us),
            s.total.errors.to_string(),
        ]);
    }
    out.push_str(&t.render());
    out.push('\n');
    out.push_str(&lat.render());
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
    }
    out
}

/// Load points run more than once (`--repeat`): each figure's mean and the
/// half-width of its 95% confidence interval. Empty when nothing repeated.
fn repeats(job: &JobRecord) -> String {
    use crate::report::stats_ci::Estimate;
    let mut labels: Vec<&str> = Vec::new();
    for p in &job.points {
        if !labels.contains(&p.label.as_str()) {
            labels.push(&p.label);
        }
    }
    let mut t = Table {
        head: vec!["load point", "runs", "IOPS", "MB/s", "mean ms", "p99 ms"],
        rows: Vec::new(),
    };
    for label in labels {
        let ps: Vec<&PointResult> = job.points.iter().filter(|p| p.label == label).collect();
        if ps.len() < 2 {
            continue;
        }
        let cell = |f: &dyn Fn(&PointResult) -> f64, scale: f64, digits: usize| {
            let e = Estimate::of(&ps.iter().map(|p| f(p) / scale).collect::<Vec<_>>());
            format!(
                "{:.*} ± {:.*}",
                digits,
                e.mean,
                digits,
                e.ci95.unwrap_or(0.0)
            )
        };
        t.rows.push(vec![
            label.to_string(),
            ps.len().to_string(),
            cell(&|p| p.summary.total.iops, 1.0, 0),
            cell(&|p| p.summary.total.mb_s, 1.0, 1),
            cell(&|p| p.summary.total.lat_mean_us, 1000.0, 3),
            cell(&|p| p.summary.total.p99_us, 1000.0, 3),
        ]);
    }
    if t.rows.is_empty() {
        return String::new();
    }
    format!(
        "\nrepeated load points: mean ± 95% confidence interval\n{}",
        t.render()
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
