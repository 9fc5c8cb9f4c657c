//! The probe read on the point's own clock: one reading at each interval's
//! end, so a sample covers the same span as the I/O it sits beside.
//!
//! Reading the counters when an interval becomes final (every host has
//! shipped it) would shift each sample by however late that host's report
//! arrived; on a loaded machine that is tenths of a second, and a measured
//! period's bytes on the wire would no longer match the bytes its I/O moved.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::Probe;
use crate::model::NetSample;

/// How long an interval that is final waits for its reading before it goes
/// without one (the probe's contract: a missing reading never fails a point).
const TAKE_WAIT: Duration = Duration::from_secs(1);

/// Readings of a [`Probe`] taken at `start + (k + 1) * interval`, kept by
/// interval index `k` until the collector takes them.
pub(crate) struct ProbeTicks<'a> {
    probe: &'a dyn Probe,
    start: Instant,
    interval: Duration,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    readings: BTreeMap<u32, Vec<NetSample>>,
    /// Set by [`ProbeTicks::finish`]: take the last (partial) reading and end.
    finishing: bool,
    /// The ticking thread has ended: nothing more will arrive.
    ended: bool,
}

impl<'a> ProbeTicks<'a> {
    /// Readings for a point whose intervals start at `at_unix_ns` (wall
    /// clock, as the hosts were told) and last `interval` each.
    pub(crate) fn new(probe: &'a dyn Probe, at_unix_ns: u64, interval: Duration) -> Self {
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let ahead = Duration::from_nanos(at_unix_ns.saturating_sub(now_unix));
        ProbeTicks {
            probe,
            start: Instant::now() + ahead,
            interval: interval.max(Duration::from_millis(1)),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// The ticking loop: run on its own thread until [`Self::finish`].
    pub(crate) fn run(&self) {
        if !self.sleep_until(self.start) {
            self.probe.start();
        }
        let mut index = 0u32;
        loop {
            let due = self.start + self.interval * (index + 1);
            let finishing = self.sleep_until(due);
            let reading = self.probe.sample();
            let mut st = self.lock();
            st.readings.insert(index, reading);
            if finishing {
                st.ended = true;
                drop(st);
                self.changed.notify_all();
                return;
            }
            drop(st);
            self.changed.notify_all();
            index += 1;
        }
    }

    /// Sleep until `when`; true when told to finish instead.
    fn sleep_until(&self, when: Instant) -> bool {
        let mut st = self.lock();
        loop {
            if st.finishing {
                return true;
            }
            let now = Instant::now();
            if now >= when {
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, when - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// The reading for interval `index`, waiting a little for its tick.
    pub(crate) fn take(&self, index: u32) -> Vec<NetSample> {
        let deadline = Instant::now() + TAKE_WAIT;
        let mut st = self.lock();
        loop {
            if let Some(r) = st.readings.remove(&index) {
                // Readings older than this one will never be asked for.
                st.readings.retain(|k, _| *k > index);
                return r;
            }
            let now = Instant::now();
            if st.ended || now >= deadline {
                return Vec::new();
            }
            st = self
                .changed
                .wait_timeout(st, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// The point's hosts are done: take the current interval's reading now
    /// (it ended early or just ended) and stop ticking. Returns at once; the
    /// thread ends after that reading.
    pub(crate) fn finish(&self) {
        self.lock().finishing = true;
        self.changed.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Counts its readings; each sample names its ordinal in `role`.
    struct Counting(AtomicU32);

    impl Probe for Counting {
        fn start(&self) {}
        fn sample(&self) -> Vec<NetSample> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            vec![NetSample {
                role: n.to_string(),
                ..Default::default()
            }]
        }
    }

    fn now_unix() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }

    #[test]
    fn readings_follow_the_clock_not_the_taker() {
        let probe = Counting(AtomicU32::new(0));
        let ticks = ProbeTicks::new(&probe, now_unix(), Duration::from_millis(20));
        std::thread::scope(|s| {
            s.spawn(|| ticks.run());
            // Taken late: the reading is still the one of its own tick.
            std::thread::sleep(Duration::from_millis(90));
            assert_eq!(ticks.take(1)[0].role, "1");
            assert_eq!(ticks.take(2)[0].role, "2");
            ticks.finish();
        });
        // After finishing, a reading never taken is not waited for.
        let start = Instant::now();
        let _ = ticks.take(1000);
        assert!(start.elapsed() < TAKE_WAIT);
    }

    #[test]
    fn finishing_takes_the_partial_interval_at_once() {
        let probe = Counting(AtomicU32::new(0));
        let ticks = ProbeTicks::new(&probe, now_unix(), Duration::from_secs(60));
        let start = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| ticks.run());
            std::thread::sleep(Duration::from_millis(20));
            ticks.finish();
        });
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(ticks.take(0).len(), 1, "the partial interval's reading");
    }
}
