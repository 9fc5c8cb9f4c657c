//! How a backend that services its own sockets waits in [`Backend::reap`]
//! (NBD, iSCSI and NFS: libnbd, libiscsi and storlab's RPC client each leave
//! the polling to their caller). One loop with one rule, so the three agree
//! on what `Wait { min: 0, .. }` and a zero timeout mean.
//!
//! The rule:
//! * every call services the sockets once without blocking and collects what
//!   finished, whatever `wait` says: [`Wait::POLL`] (min 0, timeout zero)
//!   makes progress, and a caller that already has enough still drains what
//!   arrived;
//! * then, while fewer than [`Wait::want`] have been collected (`min`, bounded
//!   by what was in flight when the call began) and some are still in flight,
//!   it blocks until a socket is ready, for at most what is left of
//!   `wait.timeout` since the call began, and collects again;
//! * it returns when enough were collected, nothing is left in flight, nothing
//!   is left to wait on, or the timeout has passed. Fewer than `min` after the
//!   timeout is not an error.
//!
//! [`Backend::reap`]: super::Backend::reap

use std::time::{Duration, Instant};

use super::{BackendError, Completion, Wait};

/// What [`reap_polled`] needs from a backend that polls its own sockets.
pub trait Polled {
    /// Service every socket without blocking (read what arrived, send what
    /// is queued), then move every finished request into `out`, returning how
    /// many. Each one moved is no longer counted by [`Polled::in_flight`].
    /// Right after a [`Polled::block`] that serviced the sockets itself, it
    /// may skip the service (one poll(2) fewer per wait).
    fn collect(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError>;

    /// Requests accepted by `queue` and not yet moved out by `collect`.
    fn in_flight(&self) -> usize;

    /// Block until some socket is ready, or `limit` has passed (`None`:
    /// without bound). It may service what is ready itself; the next
    /// [`Polled::collect`] services the rest. False when there is nothing to
    /// wait on (no socket has a request outstanding).
    fn block(&mut self, limit: Option<Duration>) -> Result<bool, BackendError>;
}

/// [`Backend::reap`](super::Backend::reap) for a [`Polled`] backend, by the
/// rule in this module's docs.
pub fn reap_polled<P: Polled + ?Sized>(
    p: &mut P,
    wait: Wait,
    out: &mut Vec<Completion>,
) -> Result<usize, BackendError> {
    let deadline = wait.timeout.map(|t| Instant::now() + t);
    let want = wait.want(p.in_flight());
    let mut got = p.collect(out)?;
    while got < want && p.in_flight() > 0 {
        let limit = match deadline {
            None => None,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                Some(left)
            }
        };
        if !p.block(limit)? {
            break;
        }
        got += p.collect(out)?;
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend whose requests finish `per_block` at a time, each time it
    /// blocks (or, with `sleep`, after sleeping for the limit it was given).
    #[derive(Default)]
    struct Fake {
        in_flight: usize,
        /// Finished and not yet collected.
        ready: usize,
        /// How many finish at each block.
        per_block: usize,
        /// Finished before the call (arrived on the socket already).
        arrived: usize,
        collects: usize,
        blocks: Vec<Option<Duration>>,
        /// Sleep for the limit (a socket that stays silent).
        silent: bool,
        /// No socket has anything outstanding.
        idle: bool,
    }

    impl Polled for Fake {
        fn collect(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
            self.collects += 1;
            self.ready += std::mem::take(&mut self.arrived);
            let n = self.ready.min(self.in_flight);
            for slot in 0..n {
                out.push(Completion {
                    slot: slot as u32,
                    result: Ok(4096),
                });
            }
            self.ready -= n;
            self.in_flight -= n;
            Ok(n)
        }
        fn in_flight(&self) -> usize {
            self.in_flight
        }
        fn block(&mut self, limit: Option<Duration>) -> Result<bool, BackendError> {
            self.blocks.push(limit);
            if self.idle {
                return Ok(false);
            }
            if self.silent {
                std::thread::sleep(limit.expect("a silent socket needs a timeout"));
            } else {
                self.ready += self.per_block;
            }
            Ok(true)
        }
    }

    #[test]
    fn poll_services_once_and_never_blocks() {
        let mut f = Fake {
            in_flight: 8,
            arrived: 3,
            per_block: 1,
            ..Fake::default()
        };
        let mut out = Vec::new();
        assert_eq!(reap_polled(&mut f, Wait::POLL, &mut out).unwrap(), 3);
        assert_eq!((f.collects, f.blocks.len(), out.len()), (1, 0, 3));
        // min 0 without a timeout is the same: nothing is wanted.
        let mut f = Fake {
            in_flight: 8,
            ..Fake::default()
        };
        assert_eq!(reap_polled(&mut f, Wait::at_least(0), &mut out).unwrap(), 0);
        assert_eq!((f.collects, f.blocks.len()), (1, 0));
    }

    #[test]
    fn a_met_minimum_still_drains_what_arrived() {
        let mut f = Fake {
            in_flight: 8,
            arrived: 5,
            ..Fake::default()
        };
        let mut out = Vec::new();
        assert_eq!(reap_polled(&mut f, Wait::at_least(2), &mut out).unwrap(), 5);
        assert_eq!((f.collects, f.blocks.len()), (1, 0));
    }

    #[test]
    fn blocks_without_bound_until_min_and_bounds_min_by_in_flight() {
        let mut f = Fake {
            in_flight: 3,
            per_block: 1,
            ..Fake::default()
        };
        let mut out = Vec::new();
        // 10 wanted, 3 in flight: it returns with the 3.
        assert_eq!(
            reap_polled(&mut f, Wait::at_least(10), &mut out).unwrap(),
            3
        );
        assert_eq!(f.blocks, vec![None, None, None]);
        assert_eq!((f.collects, f.in_flight), (4, 0));
    }

    #[test]
    fn the_timeout_counts_from_the_call_and_short_is_not_an_error() {
        let mut f = Fake {
            in_flight: 4,
            arrived: 1,
            silent: true,
            ..Fake::default()
        };
        let mut out = Vec::new();
        let t = Duration::from_millis(30);
        let start = Instant::now();
        let got = reap_polled(&mut f, Wait::at_least(4).or_after(t), &mut out).unwrap();
        let took = start.elapsed();
        assert_eq!(got, 1);
        assert!(
            took >= t,
            "returned after {took:?}, before the {t:?} timeout"
        );
        assert!(took < t * 10, "took {took:?} for a {t:?} timeout");
        // Each block was given what was left, never more than the timeout.
        assert!(!f.blocks.is_empty());
        assert!(
            f.blocks.iter().all(|l| l.is_some_and(|l| l <= t)),
            "{:?}",
            f.blocks
        );
        // A zero timeout collects once and returns.
        let mut f = Fake {
            in_flight: 4,
            silent: true,
            ..Fake::default()
        };
        let got = reap_polled(&mut f, Wait::at_least(4).or_after(Duration::ZERO), &mut out);
        assert_eq!(got.unwrap(), 0);
        assert_eq!((f.collects, f.blocks.len()), (1, 0));
    }

    #[test]
    fn nothing_to_wait_on_returns_what_was_collected() {
        let mut f = Fake {
            in_flight: 4,
            arrived: 1,
            idle: true,
            ..Fake::default()
        };
        let mut out = Vec::new();
        assert_eq!(reap_polled(&mut f, Wait::at_least(4), &mut out).unwrap(), 1);
        assert_eq!((f.collects, f.blocks.len()), (1, 1));
    }
}
