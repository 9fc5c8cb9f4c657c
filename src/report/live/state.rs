//! What the live page shows, kept as the run measures and handed to the page
//! as JSON (`GET /state`).

use crate::model::{IntervalRecord, Phase, PointResult};
use crate::report::vocab::{Figures, Metric};
use crate::workload::Spec;
use serde::Serialize;
use std::collections::BTreeMap;

/// Seconds of history the page is given per series (a chart's width).
const KEEP: usize = 300;
/// Notes kept (prepare progress, lost hosts).
const NOTES: usize = 20;

/// One second (one interval) of one series.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// The interval's index in its point.
    pub index: u32,
    /// Seconds since the point started, at the interval's end.
    pub t: f64,
    /// "ramp" or "run".
    pub phase: &'static str,
    /// I/Os per second.
    pub iops: f64,
    /// MB/s (10^6 bytes).
    pub mb_s: f64,
    /// Latency, ms: mean, median, 99th and 99.9th percentiles.
    pub lat_mean_ms: f64,
    /// Median latency, ms.
    pub lat_p50_ms: f64,
    /// 99th percentile latency, ms.
    pub lat_p99_ms: f64,
    /// 99.9th percentile latency, ms.
    pub lat_p999_ms: f64,
    /// Failed I/Os in the interval.
    pub errors: u64,
}

impl Sample {
    fn of(rec: &IntervalRecord) -> Sample {
        let summary = rec.summary();
        let f = Figures::of(&summary);
        let v = |m: Metric| m.value(&f).filter(|v| v.is_finite()).unwrap_or(0.0);
        Sample {
            index: rec.index,
            t: rec.start_s + rec.seconds,
            phase: match rec.phase {
                Phase::Ramp => "ramp",
                Phase::Measure => "run",
            },
            iops: v(Metric::Iops),
            mb_s: v(Metric::MbS),
            lat_mean_ms: v(Metric::LatMean),
            lat_p50_ms: v(Metric::LatP50),
            lat_p99_ms: v(Metric::LatP99),
            lat_p999_ms: v(Metric::LatP999),
            errors: summary.total.errors,
        }
    }
}

/// The last [`KEEP`] samples of one series.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    /// Oldest first.
    pub samples: Vec<Sample>,
}

impl Series {
    fn push(&mut self, s: Sample) {
        if self.samples.len() == KEEP {
            self.samples.remove(0);
        }
        self.samples.push(s);
    }
}

/// The last point's end: what bound it and its error.
#[derive(Clone, Debug, Serialize)]
pub struct LastPoint {
    /// "job · point · target".
    pub name: String,
    /// What bound it, in words; `None` when nothing was judged.
    pub bound: Option<String>,
    /// Its error, if it failed.
    pub error: Option<String>,
}

/// Everything the page shows.
#[derive(Debug, Serialize)]
pub struct State {
    /// The run's name (the command).
    pub run: String,
    /// Bumped at every change, so the page redraws only when needed.
    pub seq: u64,
    /// The job being measured.
    pub job: String,
    /// The target (or contender) being measured.
    pub target: String,
    /// The load point being measured, and its intervals in all.
    pub point: String,
    /// Intervals the point has in all (ramp and measured).
    pub intervals: u32,
    /// The fleet's summed series of the current target, this point.
    pub series: Series,
    /// Each host's own series this point (a fleet run).
    pub hosts: BTreeMap<String, Series>,
    /// The last point that ended.
    pub last: Option<LastPoint>,
    /// Every point's error so far, "job · point · target: error".
    pub errors: Vec<String>,
    /// Notes (prepare progress, a lost host), newest last.
    pub notes: Vec<String>,
    /// Points ended so far.
    pub points_done: u32,
    /// The run has ended.
    pub done: bool,
    /// Counters over the whole run by target and host ("": the fleet's
    /// merged series), for `GET /metrics`.
    #[serde(skip)]
    pub totals: BTreeMap<(String, String), Totals>,
}

/// What a series completed over the whole run, by direction.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Completed I/Os: read, write.
    pub ios: [u64; 2],
    /// Bytes of completed I/Os: read, write.
    pub bytes: [u64; 2],
    /// Failed I/Os: read, write.
    pub errors: [u64; 2],
    /// Intervals counted.
    pub intervals: u64,
}

impl Totals {
    fn add(&mut self, rec: &IntervalRecord) {
        for (i, d) in [&rec.stats.read, &rec.stats.write].into_iter().enumerate() {
            self.ios[i] += d.ios;
            self.bytes[i] += d.bytes;
            self.errors[i] += d.errors;
        }
        self.intervals += 1;
    }
}

impl State {
    /// Nothing measured yet.
    pub fn new(run: &str) -> State {
        State {
            run: run.to_string(),
            seq: 0,
            job: String::new(),
            target: String::new(),
            point: String::new(),
            intervals: 0,
            series: Series::default(),
            hosts: BTreeMap::new(),
            last: None,
            errors: Vec::new(),
            notes: Vec::new(),
            points_done: 0,
            done: false,
            totals: BTreeMap::new(),
        }
    }

    pub(super) fn set_job(&mut self, job: &str, target: &str) {
        self.job = job.to_string();
        self.target = target.to_string();
        self.seq += 1;
    }

    pub(super) fn point_started(&mut self, spec: &Spec, intervals: u32) {
        self.point = spec.label.clone();
        self.intervals = intervals;
        self.series = Series::default();
        self.hosts.clear();
        self.seq += 1;
    }

    pub(super) fn interval(&mut self, _spec: &Spec, rec: &IntervalRecord) {
        let key = (self.target.clone(), String::new());
        self.totals.entry(key).or_default().add(rec);
        self.series.push(Sample::of(rec));
        self.seq += 1;
    }

    pub(super) fn host_interval(&mut self, host: &str, rec: &IntervalRecord) {
        let key = (self.target.clone(), host.to_string());
        self.totals.entry(key).or_default().add(rec);
        self.hosts
            .entry(host.to_string())
            .or_default()
            .push(Sample::of(rec));
        self.seq += 1;
    }

    pub(super) fn note(&mut self, msg: &str) {
        if self.notes.len() == NOTES {
            self.notes.remove(0);
        }
        self.notes.push(msg.to_string());
        self.seq += 1;
    }

    pub(super) fn point_done(&mut self, p: &PointResult) {
        let name = [self.job.as_str(), p.label.as_str(), self.target.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" · ");
        if let Some(e) = &p.error {
            self.errors.push(format!("{name}: {e}"));
        }
        self.last = Some(LastPoint {
            name,
            bound: p.bound.as_ref().map(|b| b.to_string()),
            error: p.error.clone(),
        });
        self.points_done += 1;
        self.seq += 1;
    }
}

/// Escape a Prometheus label value (backslash, quote, newline).
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl State {
    /// The controller's series in Prometheus text format (`GET /metrics`):
    /// `host="all"` is the fleet's merged series, each other host its own.
    /// Counters run over the whole run; gauges are the last interval's.
    pub fn prometheus(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let host_of = |h: &str| {
            if h.is_empty() {
                "all".to_string()
            } else {
                escape(h)
            }
        };
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
        };
        type Pick = fn(&Totals) -> &[u64; 2];
        let counters: [(&str, &str, Pick); 3] = [
            (
                "storlab_run_ios_total",
                "Completed I/Os in this run.",
                |t| &t.ios,
            ),
            (
                "storlab_run_bytes_total",
                "Bytes of completed I/Os in this run.",
                |t| &t.bytes,
            ),
            (
                "storlab_run_errors_total",
                "Failed I/Os in this run.",
                |t| &t.errors,
            ),
        ];
        for (name, help, pick) in counters {
            head(&mut out, name, "counter", help);
            for ((target, h), t) in &self.totals {
                for (i, dir) in ["read", "write"].iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "{name}{{target=\"{}\",host=\"{}\",direction=\"{dir}\"}} {}",
                        escape(target),
                        host_of(h),
                        pick(t)[i]
                    );
                }
            }
        }
        head(
            &mut out,
            "storlab_run_intervals_total",
            "counter",
            "Intervals measured in this run.",
        );
        for ((target, h), t) in &self.totals {
            let _ = writeln!(
                out,
                "storlab_run_intervals_total{{target=\"{}\",host=\"{}\"}} {}",
                escape(target),
                host_of(h),
                t.intervals
            );
        }
        let tg = escape(&self.target);
        let last: Vec<(String, &Sample)> = self
            .series
            .samples
            .last()
            .map(|s| ("all".to_string(), s))
            .into_iter()
            .chain(
                self.hosts
                    .iter()
                    .filter_map(|(h, s)| s.samples.last().map(|x| (escape(h), x))),
            )
            .collect();
        type Gauge = (&'static str, &'static str, fn(&Sample) -> f64);
        let gauges: [Gauge; 3] = [
            (
                "storlab_run_iops",
                "I/Os per second in the last interval.",
                |s| s.iops,
            ),
            (
                "storlab_run_bytes_per_second",
                "Bytes per second in the last interval.",
                |s| s.mb_s * 1e6,
            ),
            (
                "storlab_run_latency_mean_seconds",
                "Mean latency in the last interval.",
                |s| s.lat_mean_ms / 1e3,
            ),
        ];
        for (name, help, pick) in gauges {
            head(&mut out, name, "gauge", help);
            for (h, s) in &last {
                let _ = writeln!(out, "{name}{{target=\"{tg}\",host=\"{h}\"}} {}", pick(s));
            }
        }
        head(
            &mut out,
            "storlab_run_latency_seconds",
            "gauge",
            "Latency percentiles in the last interval.",
        );
        for (h, s) in &last {
            for (q, v) in [
                ("0.5", s.lat_p50_ms),
                ("0.99", s.lat_p99_ms),
                ("0.999", s.lat_p999_ms),
            ] {
                let _ = writeln!(
                    out,
                    "storlab_run_latency_seconds{{target=\"{tg}\",host=\"{h}\",quantile=\"{q}\"}} {}",
                    v / 1e3
                );
            }
        }
        head(
            &mut out,
            "storlab_run_points_done_total",
            "counter",
            "Load points ended in this run.",
        );
        let _ = writeln!(out, "storlab_run_points_done_total {}", self.points_done);
        head(
            &mut out,
            "storlab_run_point_info",
            "gauge",
            "The load point being measured (1).",
        );
        let _ = writeln!(
            out,
            "storlab_run_point_info{{run=\"{}\",job=\"{}\",point=\"{}\",target=\"{}\"}} 1",
            escape(&self.run),
            escape(&self.job),
            escape(&self.point),
            escape(&self.target)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Phase;

    /// examples/grafana/storlab.json, the dashboard shipped for these series.
    const DASHBOARD: &str = include_str!("../../../examples/grafana/storlab.json");

    fn state_with_an_interval() -> State {
        let spec = crate::workload::test_spec(1, 1, 1);
        let mut s = State::new("storlab run");
        s.set_job("oltp", "nfs3");
        s.point_started(&spec, 3);
        let mut r = crate::stats::Recorder::new();
        r.record(crate::workload::Dir::Read, 4096, 250_000);
        let rec = IntervalRecord {
            index: 0,
            phase: Phase::Measure,
            start_s: 0.0,
            seconds: 1.0,
            stats: r.take(),
            cpu: Default::default(),
            net: Vec::new(),
        };
        s.interval(&spec, &rec);
        s.host_interval("h1", &rec);
        s
    }

    #[test]
    fn metrics_name_the_fleet_and_each_host() {
        let text = state_with_an_interval().prometheus();
        for want in [
            "storlab_run_ios_total{target=\"nfs3\",host=\"all\",direction=\"read\"} 1",
            "storlab_run_ios_total{target=\"nfs3\",host=\"h1\",direction=\"read\"} 1",
            "storlab_run_iops{target=\"nfs3\",host=\"all\"} 1",
            "storlab_run_point_info{run=\"storlab run\",job=\"oltp\",point=\"",
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
        // Every sample line is NAME{labels} VALUE, its value a number.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let v = l.rsplit(' ').next().unwrap();
            assert!(v.parse::<f64>().is_ok(), "{l}");
        }
    }

    #[test]
    fn the_grafana_dashboard_queries_only_series_the_controller_serves() {
        let d: serde_json::Value = serde_json::from_str(DASHBOARD).expect("dashboard JSON");
        let text = state_with_an_interval().prometheus();
        let mut exprs = 0;
        for p in d["panels"].as_array().unwrap() {
            for t in p["targets"].as_array().unwrap() {
                let e = t["expr"].as_str().unwrap();
                exprs += 1;
                let names: Vec<&str> = e
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with("storlab_"))
                    .collect();
                assert!(!names.is_empty(), "{e} names no storlab series");
                for n in names {
                    assert!(
                        text.contains(&format!("# TYPE {n} ")),
                        "the dashboard queries {n}, which /metrics does not serve"
                    );
                }
            }
        }
        assert!(exprs >= 6, "{exprs} queries");
    }
}
