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
        self.series.push(Sample::of(rec));
        self.seq += 1;
    }

    pub(super) fn host_interval(&mut self, host: &str, rec: &IntervalRecord) {
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
