//! Rate pacing for one worker (fio's `rate_iops` / `rate`).
//!
//! The schedule is kept exactly in fixed point: time in units of 1/rate ns, so
//! each I/O adds an integer cost and no rounding error accumulates; 1,000,000
//! IOPS schedules one I/O per 1000 ns, and 3 IOPS three I/Os a second, exactly.

use super::Rate;

/// Default cap on how far the schedule may lag behind real time: after a stall
/// a worker may catch up with at most this much time's worth of I/O at once.
pub const DEFAULT_MAX_BURST_NS: u64 = 100_000_000;

const NS_PER_S: u128 = 1_000_000_000;

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
}

impl Pacer {
    /// A pacer for `rate`; `None` (or a zero rate, which validation rejects) never waits.
    pub fn new(rate: Option<Rate>) -> Self {
        let (per_s, by_bytes) = match rate {
            Some(Rate::Iops(n)) => (n, false),
            Some(Rate::Bytes(n)) => (n, true),
            None => (0, false),
        };
        Pacer {
            per_s,
            by_bytes,
            due_scaled: 0,
            due_ns: 0,
            max_burst_ns: DEFAULT_MAX_BURST_NS,
        }
    }

    /// Change the burst cap (how much lag behind real time is forgiven, in ns).
    pub fn with_max_burst_ns(mut self, ns: u64) -> Self {
        self.max_burst_ns = ns;
        self
    }

    /// Whether a rate is set.
    pub fn is_limited(&self) -> bool {
        self.per_s > 0
    }

    /// Earliest time, in ns since the worker started, at which the next I/O may be issued (0 when unlimited).
    #[inline]
    pub fn due_ns(&self) -> u64 {
        self.due_ns
    }

    /// An I/O of `len` bytes was issued at `now_ns`: advance the schedule. Debt is capped at `max_burst_ns` behind now (default 100 ms) so a stall is not followed by an unbounded burst.
    #[inline]
    pub fn issued(&mut self, len: u32, now_ns: u64) {
        if self.per_s == 0 {
            return;
        }
        let per_s = self.per_s as u128;
        let floor_ns = now_ns.saturating_sub(self.max_burst_ns);
        if self.due_ns < floor_ns {
            self.due_scaled = floor_ns as u128 * per_s;
        }
        let units = if self.by_bytes { len as u128 } else { 1 };
        self.due_scaled += units * NS_PER_S;
        self.due_ns = u64::try_from(self.due_scaled / per_s).unwrap_or(u64::MAX);
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
}
