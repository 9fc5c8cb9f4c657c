//! The steady-state gate's setting: which figure must settle, how, and over
//! how long a window, and how long into the ramp the gate starts watching
//! (fio's `steadystate`, `steadystate_duration` and `steadystate_ramp_time`).
//!
//! `steadystate = "iops:5%"` ends the ramp once every interval of the last
//! window lies within 5% of the window's mean IOPS; `"iops_slope:1%"` once the
//! least-squares slope over the window is at most 1% of the mean per second.
//! `bw` and `lat` (mean latency) work the same. With the gate, `ramp_time` is
//! the longest ramp: a point that never settles measures after it, flagged.

use super::error::SpecError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The figure the gate watches (the fleet's merged figure, per interval).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyMetric {
    /// I/Os per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency.
    Lat,
}

/// How settled is settled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyCriterion {
    /// Every interval of the window within this % of the window's mean.
    Band(f64),
    /// The least-squares slope over the window at most this % of the
    /// window's mean per second (up or down).
    Slope(f64),
}

/// The gate: a criterion on a metric, over a window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyGate {
    /// What must settle.
    pub metric: SteadyMetric,
    /// How.
    pub criterion: SteadyCriterion,
    /// Over how long (whole intervals).
    #[serde(with = "super::secs")]
    pub window: Duration,
    /// How long into the ramp the gate starts watching (intervals ending
    /// before it are not looked at); 0 by default.
    #[serde(with = "super::secs", default)]
    pub delay: Duration,
}

/// What `steadystate` accepts.
pub const STEADY_ALLOWED: &str = "iops:P%, iops_slope:P%, bw:P%, bw_slope:P%, lat:P%, lat_slope:P% (P above 0, at most 100), or none";

/// Parse `steadystate` ("iops:5%", "bw_slope:0.5%").
pub fn parse_steady(key: &str, s: &str) -> Result<(SteadyMetric, SteadyCriterion), SpecError> {
    let bad = || SpecError::invalid(key, s, STEADY_ALLOWED);
    let (what, limit) = s.trim().split_once(':').ok_or_else(bad)?;
    let (metric, slope) = match what.trim() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        "lat" => (SteadyMetric::Lat, false),
        "lat_slope" => (SteadyMetric::Lat, true),
        _ => return Err(bad()),
    };
    let pct: f64 = limit
        .trim()
        .strip_suffix('%')
        .ok_or_else(bad)?
        .trim()
        .parse()
        .map_err(|_| bad())?;
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(bad());
    }
    let criterion = if slope {
        SteadyCriterion::Slope(pct)
    } else {
        SteadyCriterion::Band(pct)
    };
    Ok((metric, criterion))
}

impl fmt::Display for SteadyMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
            SteadyMetric::Lat => "lat",
        })
    }
}

impl fmt::Display for SteadyGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.criterion {
            SteadyCriterion::Band(p) => write!(f, "{}:{p}%", self.metric)?,
            SteadyCriterion::Slope(p) => write!(f, "{}_slope:{p}%", self.metric)?,
        }
        write!(f, " over {} s", self.window.as_secs_f64())?;
        if !self.delay.is_zero() {
            write!(f, " after {} s", self.delay.as_secs_f64())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_metric_and_both_criteria() {
        assert_eq!(
            parse_steady("steadystate", "iops:5%").unwrap(),
            (SteadyMetric::Iops, SteadyCriterion::Band(5.0))
        );
        assert_eq!(
            parse_steady("steadystate", " bw_slope: 0.5% ").unwrap(),
            (SteadyMetric::Bw, SteadyCriterion::Slope(0.5))
        );
        assert_eq!(
            parse_steady("steadystate", "lat:20%").unwrap().0,
            SteadyMetric::Lat
        );
    }

    #[test]
    fn refuses_what_it_cannot_read_naming_the_key_and_the_forms() {
        for bad in [
            "iops",
            "iops:5",
            "iops:0%",
            "iops:101%",
            "mbps:5%",
            "iops:x%",
        ] {
            let e = parse_steady("steadystate", bad).unwrap_err().to_string();
            assert!(e.contains("steadystate"), "{bad}: {e}");
            assert!(e.contains("iops_slope:P%"), "{bad}: {e}");
        }
    }
}
