//! Study 002's presentation: SQLIO's output for 8K random synchronous writes
//! (IOs/sec, MBs/sec, min/avg/max latency and the histogram in 1 ms buckets)
//! per protocol on each medium, the run without a log device beside the run
//! with one; then the host CPU NFS and iSCSI cost for the same 32K
//! sequential reads.

use super::figures::{Grid, fmt_rel, job_keys, mean};
use super::{Results, Section};
use crate::report::format::{TextTable, fmt_num};
use crate::report::relative::Comparison;
use crate::report::svg::{self, Bar, BarChart, BarGroup};
use crate::report::vocab::Metric;
use crate::stats::MS_HISTOGRAM_LIMIT;

const SYNC: &str = "sqlio-8k-randwrite";
const CPU: &str = "seq-32k-read";

/// What SQLIO prints for one target on one medium.
struct Sqlio {
    target: String,
    medium: String,
    iops: f64,
    mb_s: f64,
    min_ms: f64,
    avg_ms: f64,
    max_ms: f64,
    /// % of I/Os per 1 ms bucket, 0..24 and 24+.
    hist_pct: Vec<f64>,
}

/// SQLIO's figures of every target of `c` that ran the sync-write test.
fn sqlio(c: &Comparison, medium: &str) -> Vec<Sqlio> {
    let Some(&k) = job_keys(c, SYNC).first() else {
        return Vec::new();
    };
    (0..c.targets.len())
        .filter_map(|t| {
            let points = c.points(k, t);
            let mut hist = vec![0u64; MS_HISTOGRAM_LIMIT as usize + 1];
            for p in &points {
                for (h, n) in hist.iter_mut().zip(&p.summary.ms_histogram) {
                    *h += n;
                }
            }
            let total: u64 = hist.iter().sum();
            let fold = |f: fn(f64, f64) -> f64, init: f64, get: fn(f64, f64) -> f64| {
                points
                    .iter()
                    .map(|p| get(p.summary.total.lat_min_us, p.summary.total.lat_max_us) / 1e3)
                    .fold(init, f)
            };
            Some(Sqlio {
                target: c.targets[t].clone(),
                medium: medium.to_string(),
                iops: mean(c, Metric::Iops, k, t)?,
                mb_s: mean(c, Metric::MbS, k, t)?,
                avg_ms: mean(c, Metric::LatMean, k, t)?,
                min_ms: fold(f64::min, f64::INFINITY, |min, _| min),
                max_ms: fold(f64::max, 0.0, |_, max| max),
                hist_pct: hist
                    .iter()
                    .map(|&n| n as f64 * 100.0 / total.max(1) as f64)
                    .collect(),
            })
        })
        .collect()
}

/// The bucket names: "0" .. "23", "24+".
fn buckets() -> Vec<String> {
    (0..=MS_HISTOGRAM_LIMIT)
        .map(|b| match b {
            MS_HISTOGRAM_LIMIT => format!("{b}+"),
            b => b.to_string(),
        })
        .collect()
}

/// The study's sections.
pub fn render(r: &Results) -> Vec<Section> {
    let comparisons: Vec<(String, Comparison)> = (0..r.runs.len())
        .filter_map(|i| Some((r.runs[i].name().to_string(), r.comparison(i)?)))
        .collect();
    let runs: Vec<Sqlio> = comparisons
        .iter()
        .flat_map(|(medium, c)| sqlio(c, medium))
        .collect();
    let mut out = Vec::new();
    if !runs.is_empty() {
        out.push(sync_section(&runs));
    }
    if let Some(s) = comparisons.first().and_then(|(_, c)| cpu_section(c)) {
        out.push(s);
    }
    if out.is_empty() {
        out.push(super::nothing_measured());
    }
    out
}

/// SQLIO's figures and histograms, and the log device's effect.
fn sync_section(runs: &[Sqlio]) -> Section {
    let name = |s: &Sqlio| format!("{} · {}", s.target, s.medium);
    let mut head = vec!["target · medium".to_string()];
    head.extend(["IOs/sec", "MBs/sec", "Min ms", "Avg ms", "Max ms"].map(String::from));
    let figures = TextTable {
        title: "SQLIO: throughput and latency metrics".into(),
        head,
        rows: runs
            .iter()
            .map(|s| {
                let mut row = vec![name(s)];
                row.extend([s.iops, s.mb_s, s.min_ms, s.avg_ms, s.max_ms].map(fmt_num));
                row
            })
            .collect(),
        note: String::new(),
    };
    let mut head = vec!["ms:".to_string()];
    head.extend(buckets());
    let hist = TextTable {
        title: "Latency histogram, % of I/Os per 1 ms bucket".into(),
        head,
        rows: runs
            .iter()
            .map(|s| {
                let mut row = vec![name(s)];
                row.extend(s.hist_pct.iter().map(|p| format!("{p:.0}")));
                row
            })
            .collect(),
        note: String::new(),
    };
    let mut tables = vec![figures, hist];
    tables.extend(log_device(runs));
    // A chart per target, a bar per medium in each bucket.
    let mut targets: Vec<&str> = Vec::new();
    for s in runs {
        if !targets.contains(&s.target.as_str()) {
            targets.push(&s.target);
        }
    }
    let charts = targets
        .iter()
        .map(|t| {
            let of: Vec<&Sqlio> = runs.iter().filter(|s| s.target == *t).collect();
            let groups = buckets()
                .into_iter()
                .enumerate()
                .map(|(b, label)| BarGroup {
                    bars: of
                        .iter()
                        .enumerate()
                        .map(|(i, s)| Bar {
                            series: i,
                            value: s.hist_pct[b],
                            tip: format!(
                                "{} on {}: {:.1}% in {label} ms",
                                t, s.medium, s.hist_pct[b]
                            ),
                            err: None,
                        })
                        .collect(),
                    label,
                })
                .collect();
            svg::bar_chart(&BarChart {
                title: format!("{t}: 8K sync-write latency, 1 ms buckets"),
                y_label: "% of I/Os".into(),
                series: of.iter().map(|s| s.medium.clone()).collect(),
                groups,
                reference: None,
            })
        })
        .collect();
    Section {
        title: format!("SQLIO 8K random synchronous writes ({SYNC})"),
        note: "2 threads x 4 outstanding 8K random writes, each stable when acknowledged \
               (O_SYNC, as VMware's NFS client writes), on each medium: SQLIO's figures and its \
               histogram in 1 ms buckets."
            .into(),
        tables,
        charts,
    }
}

/// With two or more media: each target's mean latency and IOPS on each,
/// and how much the first medium's latency exceeds the last's.
fn log_device(runs: &[Sqlio]) -> Option<TextTable> {
    let mut media: Vec<&str> = Vec::new();
    for s in runs {
        if !media.contains(&s.medium.as_str()) {
            media.push(&s.medium);
        }
    }
    let (first, last) = (*media.first()?, *media.last()?);
    if media.len() < 2 {
        return None;
    }
    let mut head = vec!["target".to_string()];
    head.extend(media.iter().map(|m| format!("{m} avg ms")));
    head.extend(media.iter().map(|m| format!("{m} IOs/sec")));
    head.push(format!("avg ms {first} / {last}"));
    let mut rows = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for s in runs {
        if seen.contains(&s.target.as_str()) {
            continue;
        }
        seen.push(&s.target);
        let on = |m: &str| runs.iter().find(|x| x.target == s.target && x.medium == m);
        let mut row = vec![s.target.clone()];
        row.extend(
            media
                .iter()
                .map(|m| on(m).map_or("–".into(), |x| fmt_num(x.avg_ms))),
        );
        row.extend(
            media
                .iter()
                .map(|m| on(m).map_or("–".into(), |x| fmt_num(x.iops))),
        );
        row.push(match (on(first), on(last)) {
            (Some(a), Some(b)) if b.avg_ms > 0.0 => format!("{:.1}x", a.avg_ms / b.avg_ms),
            _ => "–".into(),
        });
        rows.push(row);
    }
    Some(TextTable {
        title: "Mean latency and IOPS by medium".into(),
        head,
        rows,
        note: "the study: without its log device 34 ms, with it 8 ms (about 4x)".into(),
    })
}

/// Host CPU of each protocol for the same 32K sequential reads.
fn cpu_section(c: &Comparison) -> Option<Section> {
    let figures = [
        ("MB/s", Metric::MbS),
        ("host CPU busy (%)", Metric::HostBusy),
        ("client CPU per I/O (µs)", Metric::ClientCpuPerIo),
        ("server CPU per I/O (µs)", Metric::ServerCpuPerIo),
        ("client + server CPU per I/O (µs)", Metric::BothCpuPerIo),
    ];
    let grid = Grid::figures(&figures, |m| Grid::metric(c, CPU, m));
    if grid.is_empty() {
        return None;
    }
    // Relative to iSCSI, as the study compares NFS with it (else the baseline).
    let reference = ["iscsi", c.baseline_name()]
        .into_iter()
        .find_map(|name| grid.cols.iter().position(|t| t == name))?;
    let both = grid.cells.last().cloned().unwrap_or_default();
    let mut table = grid.table(
        "Host CPU for the same 32K sequential reads",
        "figure",
        fmt_num,
    );
    let rel = format!(
        "client + server CPU per I/O, {} = 100",
        grid.cols[reference]
    );
    let mut row = vec![rel];
    row.extend(both.iter().map(|v| match (v, both[reference]) {
        (Some(v), Some(r)) if r > 0.0 => fmt_rel(v / r * 100.0),
        _ => "–".into(),
    }));
    table.rows.push(row);
    table.note = "host CPU: the whole lab machine; client: storlab (the initiator); server: \
                  the target's server processes"
        .into();
    let per_io = Grid {
        rows: grid.rows[2..].to_vec(),
        cells: grid.cells[2..].to_vec(),
        marks: grid.marks.get(2..).map(<[_]>::to_vec).unwrap_or_default(),
        ..grid.clone()
    };
    Some(Section {
        title: format!("NFS vs iSCSI host CPU, 32K sequential reads ({CPU})"),
        note: "One VM reading 32K sequentially on each protocol: what the same reads cost in \
               CPU, the initiator's and the server's."
            .into(),
        tables: vec![table],
        charts: vec![per_io.bars("CPU per I/O by side", "µs per I/O", "µs", None)],
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{point, results, run_with};
    use super::*;
    use crate::model::{PointServerCpu, ServerCpu};
    use crate::study::{LabRun, find};

    /// A sync-write run on `medium`: nfs3 and iscsi, latency scaled by `scale`.
    fn medium(name: &str, scale: f64) -> LabRun {
        let mut pts = Vec::new();
        for (t, s) in [("nfs3", scale), ("iscsi", scale * 2.0)] {
            let mut p = point("1 VM", t, s);
            let mut h = vec![0u64; 25];
            h[0] = 3;
            h[24] = 1;
            p.summary.ms_histogram = h;
            pts.push((SYNC, p));
        }
        let mut lr = run_with(pts);
        lr.medium = Some(name.into());
        lr.lab = name.into();
        lr
    }

    #[test]
    fn sqlio_figures_and_histogram_per_target_and_medium_then_the_log_device_ratio() {
        let study = find("002").unwrap();
        let r = results(
            study,
            vec![medium("raidz-sata", 0.25), medium("raidz-sata-slog", 1.0)],
        );
        let s = render(&r);
        assert_eq!(s.len(), 1, "no CPU test measured");
        let t = &s[0].tables[0];
        assert_eq!(
            t.head[1..],
            ["IOs/sec", "MBs/sec", "Min ms", "Avg ms", "Max ms"]
        );
        assert_eq!(
            t.rows[0],
            [
                "nfs3 · raidz-sata",
                "250.0",
                "2.048",
                "0.400",
                "4.000",
                "40.00"
            ]
        );
        let h = &s[0].tables[1];
        assert_eq!(h.head.len(), 26);
        assert_eq!(h.head[25], "24+");
        assert_eq!(h.rows[3][1], "75");
        assert_eq!(h.rows[3][25], "25");
        let effect = &s[0].tables[2];
        assert_eq!(effect.rows[0][0], "nfs3");
        assert_eq!(effect.rows[0].last().unwrap(), "4.0x");
        assert_eq!(s[0].charts.len(), 2, "one histogram chart per target");
    }

    #[test]
    fn cpu_is_compared_with_iscsi() {
        let study = find("002").unwrap();
        let mut lr = run_with(vec![
            (CPU, point("1 VM", "nfs3", 1.0)),
            (CPU, point("1 VM", "iscsi", 1.0)),
        ]);
        let info = lr.run.compare.as_mut().unwrap();
        for (t, cpu_s) in [("nfs3", 0.03), ("iscsi", 0.01)] {
            info.server_cpu.push(PointServerCpu {
                target: t.into(),
                job: CPU.into(),
                point: "1 VM".into(),
                servers: vec![ServerCpu {
                    name: "srv".into(),
                    cpu_s,
                }],
            });
        }
        let s = render(&results(study, vec![lr]));
        let t = &s[0].tables[0];
        assert_eq!(t.head, ["figure", "nfs3", "iscsi"]);
        // 1000 I/Os: the servers' 0.03 and 0.01 s are 30 and 10 µs per I/O.
        assert_eq!(t.rows[2], ["client CPU per I/O (µs)", "10.00", "10.00"]);
        assert_eq!(t.rows[3], ["server CPU per I/O (µs)", "30.00", "10.00"]);
        assert_eq!(
            t.rows[4],
            ["client + server CPU per I/O (µs)", "40.00", "20.00"]
        );
        let rel = t.rows.last().unwrap();
        assert_eq!(
            rel,
            &["client + server CPU per I/O, iscsi = 100", "200", "100"]
        );
    }
}
