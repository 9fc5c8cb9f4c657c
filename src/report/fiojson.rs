//! fio-compatible JSON out (`storlab run --output-format fio-json` and
//! `fio-jsonplus`): a document with fio's keys and JSON types, so tools that
//! read fio's `--output-format=json` / `json+` read storlab's runs.
//!
//! One `jobs[]` entry per load point (as fio with `group_reporting` writes
//! one per stonewall group), `groupid` its index. What it holds:
//! - `read`/`write`: bytes, bandwidth, IOPS and runtime of the measured
//!   intervals; `bw_*`/`iops_*` statistics over the intervals (storlab's
//!   samples, fio's `*_samples`); `trim` and `sync` are zero: storlab issues
//!   neither.
//! - Latency: storlab times each I/O from its submission to its completion
//!   (with an open-loop rate, from its scheduled time) and does not split
//!   submission latency out, so `slat_ns` has `N` = 0 as fio writes it for an
//!   engine that does not measure it, and `clat_ns` and `lat_ns` both carry
//!   the measured latency. min, max and mean are exact; stddev and the
//!   percentiles come from the histogram (within about 0.4%).
//! - `fio-jsonplus` adds `clat_ns.bins` in fio's bin layout ([`super::fiobins`]).
//! - `usr_cpu`/`sys_cpu`: the process's user and system time over the
//!   measured time, %; `ctx`: its context switches then.
//! - `steadystate` (a point run under the steady-state gate): the gate and
//!   the window it judged, as fio writes it ([`super::fiosteady`]).
//! - `fio version` names storlab ("storlab-VERSION"): the writer is not fio.
//!
//! fio keys left out because storlab does not measure them: [`NOT_MEASURED`].

use super::fiobins;
use crate::model::{Phase, PointResult, RunRecord};
use crate::stats::histogram::LatHist;
use crate::stats::snapshot::DirStats;
use crate::workload::Dir;
use serde_json::{Map, Value, json};

/// fio's default percentile list.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Keys of fio's job objects that storlab leaves out: it does not count
/// short or dropped I/Os, page faults, queue-depth distributions or
/// latency-target results, and keeps no ETA.
pub const NOT_MEASURED: &[&str] = &[
    "short_ios",
    "drop_ios",
    "majf",
    "minf",
    "iodepth_level",
    "iodepth_submit",
    "iodepth_complete",
    "latency_depth",
    "latency_target",
    "latency_percentile",
    "latency_window",
    "eta",
];

/// Which document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// fio's `json`.
    Json,
    /// fio's `json+`: with latency bins.
    JsonPlus,
}

/// The fio-style document of a run.
pub fn document(run: &RunRecord, flavor: Flavor) -> Value {
    let many_jobs = run.jobs.len() > 1;
    let jobs: Vec<Value> = run
        .jobs
        .iter()
        .flat_map(|j| j.points.iter().map(move |p| (j, p)))
        .enumerate()
        .map(|(i, (j, p))| {
            let name = if many_jobs {
                format!("{}: {}", j.name, p.label)
            } else {
                p.label.clone()
            };
            job(p, &name, i, flavor)
        })
        .collect();
    let secs = run.started_unix.max(0.0);
    json!({
        "fio version": format!("storlab-{}", run.environment.storlab_version),
        "timestamp": secs as u64,
        "timestamp_ms": (secs * 1000.0) as u64,
        "time": ctime_utc(secs as u64),
        "global options": {},
        "jobs": jobs,
    })
}

fn pct(part: f64, whole: f64) -> f64 {
    let r = part / whole * 100.0;
    if r.is_finite() { r } else { 0.0 }
}

/// One load point as a fio job.
fn job(p: &PointResult, name: &str, groupid: usize, flavor: Flavor) -> Value {
    let measured: Vec<_> = p
        .intervals
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let secs = p.summary.seconds;
    let elapsed: f64 = p.intervals.iter().map(|r| r.seconds).sum();
    let samples = |d: Dir| -> Vec<(f64, f64)> {
        measured
            .iter()
            .map(|r| {
                let (b, n, t) = (
                    r.stats.dir(d).bytes as f64,
                    r.stats.dir(d).ios as f64,
                    r_secs(r.seconds),
                );
                (b / 1024.0 / t, n / t)
            })
            .collect()
    };
    let idle = DirStats::default();
    let mut opts = Map::new();
    opts.insert("name".into(), json!(name));
    if let [g] = p.spec.groups.as_slice() {
        let a = &g.access;
        let bs: Vec<String> = a.bs.0.iter().map(|(s, w)| format!("{s}/{w}")).collect();
        opts.insert("bssplit".into(), json!(bs.join(":")));
        opts.insert("rwmixread".into(), json!(a.read_pct.to_string()));
        opts.insert("percentage_random".into(), json!(a.random_pct.to_string()));
        if !a.distribution.is_uniform() {
            opts.insert(
                "random_distribution".into(),
                json!(a.distribution.to_string()),
            );
        }
        if let Some(t) = a.think {
            opts.insert("thinktime".into(), json!(t.time.as_micros().to_string()));
            opts.insert("thinktime_blocks".into(), json!(t.blocks.to_string()));
            if !t.spin.is_zero() {
                opts.insert(
                    "thinktime_spin".into(),
                    json!(t.spin.as_micros().to_string()),
                );
            }
        }
        opts.insert("iodepth".into(), json!(a.iodepth.to_string()));
    }
    opts.insert("numjobs".into(), json!(p.spec.total_workers().to_string()));
    opts.insert("size".into(), json!(p.spec.size.to_string()));
    opts.insert("direct".into(), json!(u8::from(p.spec.direct).to_string()));
    if p.spec.sqpoll {
        opts.insert("sqthread_poll".into(), json!("1"));
    }
    if p.spec.hipri {
        opts.insert("hipri".into(), json!("1"));
    }
    if p.spec.ioengine != crate::workload::IoEngine::default() {
        opts.insert("ioengine".into(), json!(p.spec.ioengine.name()));
    }
    let cpu = &p.summary.cpu;
    let ctx: u64 = measured.iter().map(|r| r.cpu.ctx).sum();
    let failed = p.error.is_some() || p.measured.total_errors() > 0;
    let mut job = json!({
        "jobname": name,
        "groupid": groupid,
        "error": u8::from(failed),
        "elapsed": elapsed.round() as u64,
        "job options": opts,
        "read": direction(&p.measured.read, secs, &samples(Dir::Read), flavor),
        "write": direction(&p.measured.write, secs, &samples(Dir::Write), flavor),
        "trim": direction(&idle, secs, &[], flavor),
        "sync": { "total_ios": 0, "lat_ns": lat(&LatHist::default()) },
        "job_runtime": (secs * 1000.0).round() as u64,
        "usr_cpu": pct(cpu.proc_user_s, secs),
        "sys_cpu": pct(cpu.proc_sys_s, secs),
        "ctx": ctx,
        "latency_ns": distribution(&p.measured.total_lat(), 1, &LAT_EDGES[..10], false),
        "latency_us": distribution(&p.measured.total_lat(), 1_000, &LAT_EDGES[..10], false),
        "latency_ms": distribution(&p.measured.total_lat(), 1_000_000, &LAT_EDGES, true),
        "storlab": {
            "latency_from": if p.spec.latency_from_schedule() { "scheduled time" } else { "submission" },
            "not_measured": NOT_MEASURED,
        },
    });
    if let (Some(g), Value::Object(o)) = (&p.spec.steady, &mut job) {
        o.insert("steadystate".into(), super::fiosteady::object(p, g));
    }
    job
}

fn r_secs(s: f64) -> f64 {
    if s > 0.0 { s } else { f64::NAN }
}

/// fio's latency distribution edges (upper bounds) in its unit.
const LAT_EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// fio's `latency_ns`/`_us`/`_ms`: % of I/Os in `[previous edge, edge)` of
/// `unit` ns each; the ns and µs tables cover only their unit's range, the
/// ms table ends with `>=2000`. Each histogram bucket counts at its midpoint.
fn distribution(h: &LatHist, unit: u64, edges: &[u64], open_end: bool) -> Value {
    let mut counts = vec![0u64; edges.len() + 1];
    for (lo, hi, c) in h.iter() {
        let mid = (lo + (hi - lo) / 2).clamp(h.min_ns(), h.max_ns());
        if unit > 1 && mid < unit {
            continue; // below this table's unit: the finer table has it
        }
        let v = mid / unit;
        match edges.iter().position(|&e| v < e) {
            Some(i) => counts[i] += c,
            None => counts[edges.len()] += c,
        }
    }
    let mut out = Map::new();
    for (i, e) in edges.iter().enumerate() {
        out.insert(
            e.to_string(),
            json!(pct(counts[i] as f64, h.count() as f64)),
        );
    }
    if open_end {
        let last = edges.last().copied().unwrap_or(0);
        out.insert(
            format!(">={last}"),
            json!(pct(counts[edges.len()] as f64, h.count() as f64)),
        );
    }
    Value::Object(out)
}

/// min/max/mean/stddev/N of a histogram; stddev from bucket midpoints.
fn lat(h: &LatHist) -> Value {
    let mean = h.mean_ns();
    let var: f64 = h
        .iter()
        .map(|(lo, hi, c)| {
            let mid = (lo + (hi - lo) / 2).clamp(h.min_ns(), h.max_ns()) as f64;
            c as f64 * (mid - mean).powi(2)
        })
        .sum::<f64>()
        / (h.count().max(2) - 1) as f64;
    json!({
        "min": h.min_ns(),
        "max": h.max_ns(),
        "mean": mean,
        "stddev": if h.count() > 1 { var.sqrt() } else { 0.0 },
        "N": h.count(),
    })
}

/// min, max, mean, sample stddev of interval rates.
fn rate_stats(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let dev = if v.len() > 1 {
        (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    (min, max, mean, dev)
}

/// One direction's object; `samples` are each measured interval's (KiB/s, IOPS).
fn direction(d: &DirStats, secs: f64, samples: &[(f64, f64)], flavor: Flavor) -> Value {
    let active = d.ios > 0 || d.errors > 0;
    let samples = if active { samples } else { &[] };
    let bw_bytes = if secs > 0.0 {
        (d.bytes as f64 / secs) as u64
    } else {
        0
    };
    let bw: Vec<f64> = samples
        .iter()
        .map(|s| s.0)
        .filter(|x| x.is_finite())
        .collect();
    let iops: Vec<f64> = samples
        .iter()
        .map(|s| s.1)
        .filter(|x| x.is_finite())
        .collect();
    let (bw_min, bw_max, bw_mean, bw_dev) = rate_stats(&bw);
    let (iops_min, iops_max, iops_mean, iops_dev) = rate_stats(&iops);
    let mut clat = lat(&d.lat);
    if !d.lat.is_empty() {
        let mut ps = Map::new();
        for q in PERCENTILES {
            ps.insert(format!("{q:.6}"), json!(d.lat.percentile(q)));
        }
        clat["percentile"] = Value::Object(ps);
        if flavor == Flavor::JsonPlus {
            let bins: Map<String, Value> = fiobins::bins(&d.lat)
                .into_iter()
                .map(|(v, c)| (v.to_string(), json!(c)))
                .collect();
            clat["bins"] = Value::Object(bins);
        }
    }
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": if secs > 0.0 { d.ios as f64 / secs } else { 0.0 },
        "runtime": if active { (secs * 1000.0).round() as u64 } else { 0 },
        "total_ios": d.ios,
        "slat_ns": lat(&LatHist::default()),
        "clat_ns": clat,
        "lat_ns": lat(&d.lat),
        "bw_min": bw_min.round() as u64,
        "bw_max": bw_max.round() as u64,
        "bw_agg": pct(bw_mean, bw_bytes as f64 / 1024.0),
        "bw_mean": bw_mean,
        "bw_dev": bw_dev,
        "bw_samples": bw.len(),
        "iops_min": iops_min.round() as u64,
        "iops_max": iops_max.round() as u64,
        "iops_mean": iops_mean,
        "iops_stddev": iops_dev,
        "iops_samples": iops.len(),
    })
}

/// `Wed Nov 25 09:22:08 2026` (fio's `time`, ctime's layout), in UTC.
fn ctime_utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let (year, month, day) = super::format::civil_date(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {day:2} {} {year}",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        super::format::clock_time(secs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_layout() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(1_795_598_528), "Wed Nov 25 09:22:08 2026");
    }

    #[test]
    fn distributions_and_stddev_from_the_histogram() {
        let mut h = crate::stats::histogram::Histogram::new();
        for v in [1u64, 3, 1_500, 1_500, 3_000_000, 5_000_000_000] {
            h.record(v);
        }
        let h = h.snapshot();
        let ns = distribution(&h, 1, &LAT_EDGES[..10], false);
        assert_eq!(
            (ns["2"].as_f64(), ns["4"].as_f64()),
            (Some(pct(1.0, 6.0)), Some(pct(1.0, 6.0)))
        );
        let us = distribution(&h, 1_000, &LAT_EDGES[..10], false);
        assert_eq!(us["2"].as_f64(), Some(pct(2.0, 6.0)));
        let ms = distribution(&h, 1_000_000, &LAT_EDGES, true);
        assert_eq!(
            (ms["4"].as_f64(), ms[">=2000"].as_f64()),
            (Some(pct(1.0, 6.0)), Some(pct(1.0, 6.0)))
        );
        let l = lat(&h);
        assert_eq!((l["min"].as_u64(), l["N"].as_u64()), (Some(1), Some(6)));
        let sd = l["stddev"].as_f64().unwrap();
        assert!((sd / 2.0409e9 - 1.0).abs() < 0.01, "{sd}");
    }
}
