//! The steady-state gate at work on the fleet's merged intervals: it decides
//! when the ramp ends (the watched figure has settled over the window) and,
//! after the point, flags measured intervals that left the settled band.
//!
//! Pure: it sees (interval end, snapshot, seconds) as the aggregator makes
//! them final, in order, and never touches a host.

use crate::model::SteadyOutcome;
use crate::stats::Snapshot;
use crate::workload::steady::{SteadyCriterion, SteadyGate, SteadyMetric};

/// The watched figure of one interval; none when it did no I/O (latency)
/// or lasted no time.
pub fn figure(m: SteadyMetric, s: &Snapshot, seconds: f64) -> Option<f64> {
    if seconds <= 0.0 {
        return None;
    }
    match m {
        SteadyMetric::Iops => Some(s.total_ios() as f64 / seconds),
        SteadyMetric::Bw => Some(s.total_bytes() as f64 / seconds),
        SteadyMetric::Lat => {
            let lat = s.total_lat();
            (!lat.is_empty()).then(|| lat.mean_ns())
        }
    }
}

/// A figure as shown in the outcome.
fn show(m: SteadyMetric, v: f64) -> String {
    match m {
        SteadyMetric::Iops => format!("{v:.0} IOPS"),
        SteadyMetric::Bw => format!("{:.1} MB/s", v / 1e6),
        SteadyMetric::Lat => format!("{:.1} µs", v / 1e3),
    }
}

/// Mean of the values of (time, value) points.
pub fn mean(pts: &[(f64, f64)]) -> f64 {
    pts.iter().map(|p| p.1).sum::<f64>() / pts.len().max(1) as f64
}

/// Least-squares slope of the values over time (per second).
pub fn slope(pts: &[(f64, f64)]) -> f64 {
    let n = pts.len() as f64;
    let mt = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let mv = mean(pts);
    let (mut num, mut den) = (0.0, 0.0);
    for &(t, v) in pts {
        num += (t - mt) * (v - mv);
        den += (t - mt) * (t - mt);
    }
    if den > 0.0 { num / den } else { 0.0 }
}

/// Whether the points (time s, value) meet the criterion.
pub(super) fn settled(c: SteadyCriterion, pts: &[(f64, f64)]) -> bool {
    let m = mean(pts);
    if pts.len() < 2 || m <= 0.0 {
        return false;
    }
    match c {
        SteadyCriterion::Band(p) => pts.iter().all(|&(_, v)| (v - m).abs() <= p / 100.0 * m),
        SteadyCriterion::Slope(p) => slope(pts).abs() <= p / 100.0 * m,
    }
}

/// The gate over one point: fed each final interval in order.
pub(super) struct Gate {
    gate: SteadyGate,
    window: usize,
    ramp_intervals: u32,
    /// Ramp intervals' (end time, figure), the last `window` of them kept.
    ramp: Vec<(f64, f64)>,
    /// The measured intervals' (index, end time, figure).
    measured: Vec<(u32, f64, f64)>,
    /// The interval after which the ramp ended (set once).
    settled_after: Option<u32>,
    steady_mean: f64,
}

impl Gate {
    /// The gate for a point whose longest ramp is `ramp_intervals` intervals
    /// of `interval_s` seconds.
    pub(super) fn new(gate: SteadyGate, ramp_intervals: u32, interval_s: f64) -> Self {
        let window = (gate.window.as_secs_f64() / interval_s).round().max(2.0) as usize;
        Gate {
            gate,
            window,
            ramp_intervals,
            ramp: Vec::new(),
            measured: Vec::new(),
            settled_after: None,
            steady_mean: 0.0,
        }
    }

    /// The first measured interval: after the settled one, or after the full ramp.
    pub(super) fn measure_from(&self) -> u32 {
        self.settled_after
            .map_or(self.ramp_intervals, |i| (i + 1).min(self.ramp_intervals))
    }

    /// Take interval `index` (final, in order) ending at `end_s`; true when
    /// the ramp ends with it.
    pub(super) fn take(&mut self, index: u32, end_s: f64, s: &Snapshot, seconds: f64) -> bool {
        // `steadystate_ramp_time`: intervals starting before it are not watched.
        if index < self.measure_from() && end_s - seconds < self.gate.delay.as_secs_f64() - 1e-9 {
            return false;
        }
        let Some(v) = figure(self.gate.metric, s, seconds) else {
            if index < self.measure_from() {
                self.ramp.clear(); // an idle interval breaks the window
            }
            return false;
        };
        if index >= self.measure_from() {
            self.measured.push((index, end_s, v));
            return false;
        }
        self.ramp.push((end_s, v));
        if self.ramp.len() > self.window {
            self.ramp.remove(0);
        }
        self.steady_mean = mean(&self.ramp);
        if self.ramp.len() == self.window && settled(self.gate.criterion, &self.ramp) {
            self.settled_after = Some(index);
            return index + 1 < self.ramp_intervals;
        }
        false
    }

    /// What the gate found, once the point is over.
    pub(super) fn outcome(&self, interval_s: f64) -> SteadyOutcome {
        let m = self.gate.metric;
        let ramp_s = self.measure_from() as f64 * interval_s;
        let mut flags = Vec::new();
        if self.settled_after.is_none() {
            flags.push(format!(
                "{} did not settle within the ramp ({ramp_s:.0} s): measured after the full ramp",
                m
            ));
        }
        let base = self.steady_mean;
        match self.gate.criterion {
            SteadyCriterion::Band(p) => {
                for &(i, t, v) in &self.measured {
                    if base > 0.0 && (v - base).abs() > p / 100.0 * base {
                        flags.push(format!(
                            "interval {i} (to {t:.1} s): {} is {:+.0}% off the steady {}",
                            show(m, v),
                            (v - base) / base * 100.0,
                            show(m, base)
                        ));
                    }
                }
            }
            SteadyCriterion::Slope(p) => {
                let pts: Vec<(f64, f64)> = self.measured.iter().map(|&(_, t, v)| (t, v)).collect();
                let (sl, mm) = (slope(&pts), mean(&pts));
                if pts.len() >= 2 && mm > 0.0 && sl.abs() > p / 100.0 * mm {
                    flags.push(format!(
                        "the measured period drifts {:+.2}% of its mean per second (limit {p}%)",
                        sl / mm * 100.0
                    ));
                }
            }
        }
        SteadyOutcome {
            gate: self.gate.to_string(),
            settled_at_s: self.settled_after.map(|_| ramp_s),
            ramp_s,
            steady_value: show(m, base),
            flags,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Recorder;
    use crate::workload::Dir;
    use std::time::Duration;

    fn snap(ios: u64) -> Snapshot {
        let mut r = Recorder::new();
        for _ in 0..ios {
            r.record(Dir::Read, 4096, 100_000);
        }
        r.take()
    }

    fn gate(c: SteadyCriterion) -> SteadyGate {
        SteadyGate {
            metric: SteadyMetric::Iops,
            criterion: c,
            window: Duration::from_secs(3),
            delay: Duration::ZERO,
        }
    }

    /// Feed `ios` per 1 s interval; the index where the ramp ended, if it did.
    fn feed(g: &mut Gate, ios: &[u64]) -> Option<u32> {
        let mut ended = None;
        for (i, &n) in ios.iter().enumerate() {
            if g.take(i as u32, i as f64 + 1.0, &snap(n), 1.0) && ended.is_none() {
                ended = Some(i as u32);
            }
        }
        ended
    }

    #[test]
    fn a_steady_figure_ends_the_ramp_after_one_window_and_is_not_flagged() {
        let mut g = Gate::new(gate(SteadyCriterion::Band(5.0)), 10, 1.0);
        let ended = feed(&mut g, &[10, 50, 100, 101, 99, 100, 100, 102, 98, 100]);
        assert_eq!(ended, Some(4), "window 100,101,99 is within 5%");
        assert_eq!(g.measure_from(), 5);
        let o = g.outcome(1.0);
        assert_eq!(o.settled_at_s, Some(5.0));
        assert!(o.flags.is_empty(), "{:?}", o.flags);
    }

    #[test]
    fn the_gate_does_not_watch_before_its_delay() {
        let figures = [100, 100, 100, 100, 100, 100, 100, 100, 100, 100];
        let mut g = Gate::new(gate(SteadyCriterion::Band(5.0)), 10, 1.0);
        assert_eq!(feed(&mut g, &figures), Some(2));
        let delayed = SteadyGate {
            delay: Duration::from_secs(4),
            ..gate(SteadyCriterion::Band(5.0))
        };
        let mut g = Gate::new(delayed, 10, 1.0);
        // Intervals 0..=3 start before 4 s; the window is 4, 5, 6.
        assert_eq!(feed(&mut g, &figures), Some(6));
        assert_eq!(g.outcome(1.0).settled_at_s, Some(7.0));
        assert!(
            delayed.to_string().ends_with("over 3 s after 4 s"),
            "{delayed}"
        );
    }

    #[test]
    fn a_drop_in_the_measured_period_is_flagged_with_its_interval() {
        let mut g = Gate::new(gate(SteadyCriterion::Band(5.0)), 4, 1.0);
        feed(&mut g, &[100, 100, 100, 100, 100, 60, 100]);
        let o = g.outcome(1.0);
        assert_eq!(o.flags.len(), 1, "{:?}", o.flags);
        assert!(o.flags[0].contains("interval 5") && o.flags[0].contains("-40%"));
    }

    #[test]
    fn a_ramp_that_never_settles_uses_the_full_ramp_and_says_so() {
        let mut g = Gate::new(gate(SteadyCriterion::Band(2.0)), 5, 1.0);
        assert_eq!(feed(&mut g, &[10, 20, 40, 80, 160, 160, 160]), None);
        assert_eq!(g.measure_from(), 5);
        let o = g.outcome(1.0);
        assert_eq!(o.settled_at_s, None);
        assert!(o.flags[0].contains("did not settle"), "{:?}", o.flags);
    }

    #[test]
    fn the_slope_criterion_accepts_noise_and_refuses_a_climb() {
        let flat = [(1.0, 100.0), (2.0, 96.0), (3.0, 104.0), (4.0, 100.0)];
        let climb = [(1.0, 100.0), (2.0, 110.0), (3.0, 120.0), (4.0, 130.0)];
        assert!(settled(SteadyCriterion::Slope(2.0), &flat));
        assert!(!settled(SteadyCriterion::Slope(2.0), &climb));
        assert!(!settled(SteadyCriterion::Band(5.0), &climb));
    }
}
