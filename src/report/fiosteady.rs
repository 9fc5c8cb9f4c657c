//! fio's `steadystate` object of a gated point, for the fio-compatible JSON
//! ([`super::fiojson`]): the gate as fio writes it (`ss`, `duration`),
//! whether it settled (`attained`), the window it judged (the last ramp
//! intervals it watched: the settled window, or the ramp's last one), that
//! window's IOPS and bytes per second per interval with their means, and the
//! figure the criterion was judged on (`criterion`: the largest deviation
//! from the mean, or the slope, as % of the mean; `max_deviation` and
//! `slope` in the watched figure's units, the one the criterion does not use
//! 0 as in fio). fio samples once a second; storlab's samples are its
//! intervals.

use crate::model::{Phase, PointResult};
use crate::runner::steady::{figure, mean, slope};
use crate::workload::steady::{SteadyCriterion, SteadyGate};
use serde_json::{Value, json};

/// The `steadystate` object of `p`, run under `gate`.
pub fn object(p: &PointResult, gate: &SteadyGate) -> Value {
    let interval = p.spec.interval.as_secs_f64();
    let n = (gate.window.as_secs_f64() / interval).round().max(2.0) as usize;
    let delay = gate.delay.as_secs_f64() - 1e-9;
    let watched: Vec<_> = p
        .intervals
        .iter()
        .filter(|r| r.phase == Phase::Ramp && r.start_s >= delay)
        .collect();
    let window = &watched[watched.len().saturating_sub(n)..];
    let per_s = |r: &crate::model::IntervalRecord, v: u64| {
        if r.seconds > 0.0 {
            (v as f64 / r.seconds).round() as u64
        } else {
            0
        }
    };
    let iops: Vec<u64> = window
        .iter()
        .map(|r| per_s(r, r.stats.total_ios()))
        .collect();
    let bw: Vec<u64> = window
        .iter()
        .map(|r| per_s(r, r.stats.total_bytes()))
        .collect();
    let pts: Vec<(f64, f64)> = window
        .iter()
        .filter_map(|r| {
            figure(gate.metric, &r.stats, r.seconds).map(|v| (r.start_s + r.seconds, v))
        })
        .collect();
    let m = mean(&pts);
    let of_mean = |v: f64| if m > 0.0 { v / m * 100.0 } else { 0.0 };
    let (limit, suffix, achieved, max_dev, sl) = match gate.criterion {
        SteadyCriterion::Band(l) => {
            let dev = pts.iter().map(|p| (p.1 - m).abs()).fold(0.0, f64::max);
            (l, "", of_mean(dev), dev, 0.0)
        }
        SteadyCriterion::Slope(l) => {
            let s = slope(&pts);
            (l, "_slope", of_mean(s.abs()), 0.0, s)
        }
    };
    let avg = |v: &[u64]| v.iter().sum::<u64>() / (v.len().max(1) as u64);
    json!({
        "ss": format!("{}{suffix}:{limit:.6}%", gate.metric),
        "duration": gate.window.as_secs(),
        "attained": u8::from(p.steady.as_ref().is_some_and(|o| o.settled_at_s.is_some())),
        "criterion": format!("{achieved:.6}%"),
        "max_deviation": max_dev,
        "slope": sl,
        "data": {
            "bw_mean": avg(&bw),
            "iops_mean": avg(&iops),
            "iops": iops,
            "bw": bw,
        },
    })
}
