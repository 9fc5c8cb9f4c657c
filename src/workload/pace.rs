//! Rate pacing for one worker (fio's `rate_iops` / `rate`), closed or open loop.
//!
//! The schedule is kept exactly in fixed point: time in units of 1/rate ns, so
//! each I/O adds an integer cost and no rounding error accumulates; 1,000,000
//! IOPS schedules one I/O per 1000 ns, and 3 IOPS three I/Os a second, exactly.
//!
//! Two ways to pace ([`RateMode`]):
//! * **closed** (fio's behaviour, the default): an I/O waits for its due time
//!   and for a free slot; lag behind the schedule after a stall is forgiven
//!   beyond a burst cap, and latency counts from submission. A slow target
//!   slows the schedule down with it, so queueing it causes is not measured
//!   (coordinated omission).
//! * **open** (vdbench's curve, wrk2's constant throughput): the n-th I/O of a
//!   worker is due at `start + n / rate` whatever happens, lag is never
//!   forgiven, and latency counts from the due time. When every slot is busy,
//!   due I/Os wait behind the schedule and that wait is part of their latency.

use super::Rate;
use serde::{Deserialize, Serialize};

/// Default cap on how far the schedule may lag behind real time: after a stall
/// a worker may catch up with at most this much time's worth of I/O at once.
pub const DEFAULT_MAX_BURST_NS: u64 = 100_000_000;

const NS_PER_S: u128 = 1_000_000_000;

/// How a rate cap schedules I/O, and so where latency is measured from (the
/// job-file key and flag `rate_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateMode {
    /// Closed loop, fio-like: a stall delays the schedule (lag past the burst
    /// cap is forgiven); latency from submission.
    #[default]
    Closed,
    /// Open loop: a fixed schedule that never forgives lag; latency from each
    /// I/O's scheduled time, so queueing behind a slow target is measured.
    Open,
}

impl RateMode {
    /// Every accepted spelling, for errors.
    pub const ALLOWED: &'static str = "closed, open";

    /// Parse `closed` or `open`.
    pub fn parse(s: &str) -> Option<RateMode> {
        match s.trim() {
            "closed" => Some(RateMode::Closed),
            "open" => Some(RateMode::Open),
            _ => None,
        }
    }

    /// The name as written in job files and JSON.
    pub fn name(self) -> &'static str {
        match self {
            RateMode::Closed => "closed",
            RateMode::Open => "open",
        }
    }

    /// Whether this is the default (closed), for `skip_serializing_if`.
    pub fn is_closed(&self) -> bool {
        *self == RateMode::Closed
    }
}

/// Where latency counts from: the earlier of the submission time and the
/// scheduled time [`Pacer::issued`] returned (which is `u64::MAX`, so the
/// submission time wins, unless the pacer is open loop).
#[inline]
pub fn latency_origin(submit_ns: u64, sched_ns: u64) -> u64 {
    submit_ns.min(sched_ns)
}

/// The issue schedule of one worker.
#[derive(Clone, Debug)]
pub struct Pacer {
    /// I/Os or bytes per second; 0 when unlimited.
    per_s: u64,
    /// Whether the cost of an I/O is its length (bytes) or 1 (IOPS).
    by_bytes: bool,
    /// Due time scaled by `per_s`: `due_ns = due_scaled / per_s`.
    due_scaled: u128,
    /// `due_scaled / per_s`, cached so `due_ns` is a plain load.
    due_ns: u64,
    max_burst_ns: u64,
    /// Open loop: never forgive lag; latency from the due time.
    open: bool,
}

impl Pacer {
    /// A closed-loop pacer for `rate`; `None` (or a zero rate, which validation rejects) never waits.
    pub fn new(rate: Option<Rate>) -> Self {
        Pacer::with_mode(rate, RateMode::Closed)
    }

    /// A pacer for `rate` paced as `mode` says.
    pub fn with_mode(rate: Option<Rate>, mode: RateMode) -> Self {
        let (per_s, by_bytes) = match rate {
            Some(Rate::Iops(n)) => (n, false),
            Some(Rate::Bytes(n)) => (n, true),
            None => (0, false),
        };
        let open = mode == RateMode::Open;
        Pacer {
            per_s,
            by_bytes,
            due_scaled: 0,
            due_ns: 0,
            max_burst_ns: if open { u64::MAX } else { DEFAULT_MAX_BURST_NS },
            open,
        }
    }

    /// Change the burst cap (how much lag behind real time is forgiven, in ns).
    /// An open-loop pacer forgives nothing whatever the cap.
    pub fn with_max_burst_ns(mut self, ns: u64) -> Self {
        if !self.open {
            self.max_burst_ns = ns;
        }
        self
    }

    /// Whether a rate is set.
    pub fn is_limited(&self) -> bool {
        self.per_s > 0
    }

    /// Whether latency counts from the scheduled time (open loop with a rate).
    pub fn is_open(&self) -> bool {
        self.open && self.per_s > 0
    }

    /// Earliest time, in ns since the worker started, at which the next I/O may be issued (0 when unlimited).
    #[inline]
    pub fn due_ns(&self) -> u64 {
        self.due_ns
    }

    /// An I/O of `len` bytes was issued at `now_ns`: advance the schedule.
    /// Closed loop: debt is capped at `max_burst_ns` behind now (default 100
    /// ms) so a stall is not followed by an unbounded burst. Open loop: the
    /// schedule never moves for a stall.
    ///
    /// Returns the I/O's scheduled time when open loop (its latency origin,
    /// see [`latency_origin`]), else `u64::MAX` (latency from submission).
    #[inline]
    pub fn issued(&mut self, len: u32, now_ns: u64) -> u64 {
        if self.per_s == 0 {
            return u64::MAX;
        }
        let per_s = self.per_s as u128;
        if !self.open {
            let floor_ns = now_ns.saturating_sub(self.max_burst_ns);
            if self.due_ns < floor_ns {
                self.due_scaled = floor_ns as u128 * per_s;
            }
        }
        let sched = self.due_ns;
        let units = if self.by_bytes { len as u128 } else { 1 };
        self.due_scaled += units * NS_PER_S;
        self.due_ns = u64::try_from(self.due_scaled / per_s).unwrap_or(u64::MAX);
        if self.open { sched } else { u64::MAX }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue every I/O exactly when due and count those due within one second.
    fn count_in_second(p: &mut Pacer, len: u32) -> u64 {
        let mut n = 0;
        loop {
            let t = p.due_ns();
            if t >= 1_000_000_000 {
                return n;
            }
            p.issued(len, t);
            n += 1;
        }
    }

    #[test]
    fn unlimited() {
        let mut p = Pacer::new(None);
        assert!(!p.is_limited());
        p.issued(4096, 5);
        assert_eq!(p.due_ns(), 0);
    }

    #[test]
    fn iops_exact() {
        for rate in [1u64, 3, 7, 1000, 33_333, 1_000_000, 3_000_000] {
            let mut p = Pacer::new(Some(Rate::Iops(rate)));
            assert!(p.is_limited());
            assert_eq!(count_in_second(&mut p, 4096), rate, "rate {rate}");
        }
    }

    #[test]
    fn bytes_rate() {
        let mut p = Pacer::new(Some(Rate::Bytes(10 << 20)));
        // 10 MiB/s in 4 KiB I/Os is 2560 I/Os a second.
        assert_eq!(count_in_second(&mut p, 4096), 2560);
        let mut p = Pacer::new(Some(Rate::Bytes(1000)));
        p.issued(500, 0);
        assert_eq!(p.due_ns(), 500_000_000);
    }

    #[test]
    fn burst_cap() {
        let mut p = Pacer::new(Some(Rate::Iops(1000)));
        p.issued(1, 0);
        assert_eq!(p.due_ns(), 1_000_000);
        // A 10 s stall: the schedule restarts 100 ms behind now, so at most ~100
        // I/Os are due at once rather than 10,000.
        let now = 10_000_000_000;
        let mut burst = 0;
        while p.due_ns() <= now {
            p.issued(1, now);
            burst += 1;
        }
        assert_eq!(burst, 101);
        let mut p = Pacer::new(Some(Rate::Iops(1000))).with_max_burst_ns(0);
        p.issued(1, 0);
        p.issued(1, 5_000_000_000);
        assert_eq!(p.due_ns(), 5_001_000_000);
    }

    #[test]
    fn open_due_times_are_exact() {
        // The n-th I/O is due at n / rate seconds, exactly, for every n.
        for rate in [3u64, 7, 1000, 33_333, 1_000_000] {
            let mut p = Pacer::with_mode(Some(Rate::Iops(rate)), RateMode::Open);
            assert!(p.is_open());
            for n in 0..10_000u64 {
                let due = (n as u128 * 1_000_000_000 / rate as u128) as u64;
                assert_eq!(p.due_ns(), due, "rate {rate} I/O {n}");
                // Issued late or on time, the scheduled time is its due time.
                let now = due + (n % 3) * 1_000;
                assert_eq!(p.issued(4096, now), due, "rate {rate} I/O {n}");
            }
        }
        // A byte rate: 1000 B/s in 500-byte I/Os is due every 0.5 s.
        let mut p = Pacer::with_mode(Some(Rate::Bytes(1000)), RateMode::Open);
        assert_eq!(p.issued(500, 0), 0);
        assert_eq!(p.issued(500, 7_000_000_000), 500_000_000);
        assert_eq!(p.due_ns(), 1_000_000_000);
    }

    #[test]
    fn open_never_forgives_lag() {
        // A 10 s stall at 1000 IOPS: every one of the 10,000 I/Os due meanwhile
        // is still due (at its own time), where closed loop forgives all but 100 ms.
        let mut open =
            Pacer::with_mode(Some(Rate::Iops(1000)), RateMode::Open).with_max_burst_ns(0);
        let mut closed = Pacer::new(Some(Rate::Iops(1000)));
        open.issued(1, 0);
        closed.issued(1, 0);
        let now = 10_000_000_000;
        let mut backlog = 0;
        let mut worst = 0;
        while open.due_ns() <= now {
            let sched = open.issued(1, now);
            worst = worst.max(now - latency_origin(now, sched));
            backlog += 1;
        }
        assert_eq!(backlog, 10_000);
        // The first I/O after the stall was due at 1 ms: it waited 9.999 s.
        assert_eq!(worst, 9_999_000_000);
        assert_eq!(open.due_ns(), now + 1_000_000);
        let mut burst = 0;
        while closed.due_ns() <= now {
            assert_eq!(closed.issued(1, now), u64::MAX);
            burst += 1;
        }
        assert_eq!(burst, 101);
    }

    #[test]
    fn latency_origin_is_the_schedule_only_when_open() {
        // Closed loop and unlimited pacers leave latency to the submission time.
        let mut closed = Pacer::new(Some(Rate::Iops(100)));
        assert!(!closed.is_open());
        let sched = closed.issued(1, 50_000_000);
        assert_eq!(latency_origin(60_000_000, sched), 60_000_000);
        let mut unlimited = Pacer::with_mode(None, RateMode::Open);
        assert!(!unlimited.is_open() && !unlimited.is_limited());
        assert_eq!(latency_origin(5, unlimited.issued(1, 5)), 5);
        // Open loop: an I/O due at 20 ms, submitted at 35 ms (its slot was
        // busy) and complete at 40 ms has a latency of 20 ms, not 5 ms.
        let mut open = Pacer::with_mode(Some(Rate::Iops(50)), RateMode::Open);
        open.issued(1, 0);
        let sched = open.issued(1, 35_000_000);
        assert_eq!(sched, 20_000_000);
        assert_eq!(40_000_000 - latency_origin(35_000_000, sched), 20_000_000);
    }

    #[test]
    fn rate_mode_names() {
        for m in [RateMode::Closed, RateMode::Open] {
            assert_eq!(RateMode::parse(m.name()), Some(m));
        }
        assert_eq!(RateMode::parse("poisson"), None);
        assert_eq!(RateMode::default(), RateMode::Closed);
    }
}
