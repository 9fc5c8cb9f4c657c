//! A FIFO station's work on the model's clock, for its busy share: the work
//! scheduled so far and the part of it that may still lie ahead (the model
//! schedules an operation's service when it arrives, so a queued one is
//! work not yet done). Segments are kept only while they may end after the
//! latest arrival; consecutive ones merge, so a station holds a few.

use std::collections::VecDeque;

/// One station's scheduled work.
#[derive(Clone, Debug, Default)]
pub struct Busy {
    /// Work scheduled so far, ns (done or not).
    total: f64,
    /// Scheduled work that may end after the latest arrival: disjoint
    /// `[start, end)` segments in order.
    ahead: VecDeque<(f64, f64)>,
}

impl Busy {
    /// The station serves from `start` to `end` (ns), scheduled by an
    /// arrival at `now`. FIFO: `start` is never before the end of the work
    /// scheduled before it.
    pub fn add(&mut self, start: f64, end: f64, now: f64) {
        if end <= start {
            return;
        }
        while self.ahead.front().is_some_and(|&(_, e)| e <= now) {
            self.ahead.pop_front();
        }
        self.total += end - start;
        match self.ahead.back_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => self.ahead.push_back((start, end)),
        }
    }

    /// The work done by `t`, ns.
    pub fn done_by(&self, t: f64) -> f64 {
        let ahead: f64 = self
            .ahead
            .iter()
            .map(|&(s, e)| (e - s.max(t)).max(0.0))
            .sum();
        (self.total - ahead).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_counts_once_it_is_done_and_gaps_are_idle() {
        let mut b = Busy::default();
        b.add(0.0, 10.0, 0.0);
        b.add(10.0, 20.0, 5.0);
        // Queued behind a gap (a commit waiting for a transaction group).
        b.add(50.0, 60.0, 6.0);
        assert_eq!(b.done_by(5.0), 5.0);
        assert_eq!(b.done_by(20.0), 20.0);
        assert_eq!(b.done_by(40.0), 20.0, "idle from 20 to 50");
        assert_eq!(b.done_by(55.0), 25.0);
        assert_eq!(b.done_by(100.0), 30.0);
        // A later arrival forgets what ended before it and keeps the total.
        b.add(100.0, 110.0, 100.0);
        assert_eq!(b.done_by(105.0), 35.0);
        assert_eq!(b.ahead.len(), 1);
    }
}
