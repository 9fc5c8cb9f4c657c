//! The per-I/O timeout (`--io-timeout`, job-file key `io_timeout`).
//!
//! A request that a stopped server, a cut link or a hung device never
//! completes would otherwise hold its engine thread, and the whole run, for
//! ever. [`IoWatch`] remembers when each slot's request was submitted and, at
//! most every [`IoWatch::period`], looks for the oldest one; once it has been
//! in flight for longer than the limit the engine ends the run with
//! [`message`], keeps every interval measured so far, tells the backend to
//! [`abandon`](super::Backend::abandon) its requests and drops it.
//!
//! Cost: one store per submission and one per completion; the scan over the
//! slots runs a few times per timeout period, not per I/O. A request is
//! reported between `limit` and `limit + period` after its submission.

use crate::workload::Dir;
use std::time::Duration;

pub use crate::workload::{DEFAULT_IO_TIMEOUT, MIN_IO_TIMEOUT};

/// Watches the submission time of every slot of one engine thread.
#[derive(Debug)]
pub struct IoWatch {
    /// Limit in ns; 0 = off.
    limit_ns: u64,
    /// Per slot: submission instant (ns since t0), `IDLE` when not in flight.
    since: Vec<u64>,
    /// Next instant at which [`IoWatch::overdue`] scans.
    next_check: u64,
    /// Time between scans.
    period: u64,
}

const IDLE: u64 = u64::MAX;

impl IoWatch {
    /// A watch over `slots` slots with `limit` (zero: never fires).
    pub fn new(limit: Duration, slots: usize) -> Self {
        let limit_ns = limit.as_nanos().min(u64::MAX as u128) as u64;
        // A quarter of the limit, 10 ms ..= 1 s.
        let period = (limit_ns / 4).clamp(10_000_000, 1_000_000_000);
        IoWatch {
            limit_ns,
            since: vec![IDLE; if limit_ns == 0 { 0 } else { slots }],
            next_check: period,
            period,
        }
    }

    /// Whether a limit is set.
    pub fn enabled(&self) -> bool {
        self.limit_ns > 0
    }

    /// The limit.
    pub fn limit(&self) -> Duration {
        Duration::from_nanos(self.limit_ns)
    }

    /// Time between two scans.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period)
    }

    /// Slot `slot` was submitted at `t` (ns since t0).
    #[inline]
    pub fn submitted(&mut self, slot: u32, t: u64) {
        if let Some(s) = self.since.get_mut(slot as usize) {
            *s = t;
        }
    }

    /// Slot `slot` completed.
    #[inline]
    pub fn completed(&mut self, slot: u32) {
        if let Some(s) = self.since.get_mut(slot as usize) {
            *s = IDLE;
        }
    }

    /// The latest instant (ns since t0) the engine may sleep until while
    /// I/O is in flight: the next scan; `u64::MAX` without a limit.
    #[inline]
    pub fn wake(&self) -> u64 {
        if self.enabled() {
            self.next_check
        } else {
            u64::MAX
        }
    }

    /// At `now`: if a scan is due, the slot in flight for the longest if that
    /// is longer than the limit.
    pub fn overdue(&mut self, now: u64) -> Option<u32> {
        if !self.enabled() || now < self.next_check {
            return None;
        }
        self.next_check = now + self.period;
        let (slot, &oldest) = self.since.iter().enumerate().min_by_key(|(_, t)| **t)?;
        (oldest != IDLE && now.saturating_sub(oldest) >= self.limit_ns).then_some(slot as u32)
    }

    /// How long the end-of-run drain may wait: `drain`, or the limit if shorter.
    pub fn drain_limit(&self, drain: Duration) -> Duration {
        if self.enabled() {
            drain.min(self.limit())
        } else {
            drain
        }
    }
}

/// "read of 4096 bytes at offset 123 on nbd://... did not complete within 30s".
pub fn message(dir: Dir, len: u32, offset: u64, target: &str, limit: Duration) -> String {
    let what = match dir {
        Dir::Read => "read",
        Dir::Write => "write",
    };
    format!(
        "{what} of {len} bytes at offset {offset} on {target} did not complete within {} \
         (--io-timeout / io_timeout): the server, the network or the device is not answering",
        crate::workload::units::format_duration(limit)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::worker::{self, Msg, ThreadCtx};
    use crate::io::{Backend, BackendError, Completion, Lane, QueueError, Request, Wait};
    use crate::plan::{self, TargetKind};
    use crate::target::Target;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::Instant;

    #[test]
    fn fires_only_after_the_limit_and_only_for_requests_in_flight() {
        let mut w = IoWatch::new(Duration::from_millis(100), 4);
        assert_eq!(w.period(), Duration::from_millis(25));
        w.submitted(2, 0);
        w.submitted(3, 50_000_000);
        assert_eq!(w.overdue(30_000_000), None, "30 ms < 100 ms");
        assert_eq!(w.wake(), 55_000_000, "next scan one period later");
        assert_eq!(w.overdue(54_000_000), None, "no scan before it is due");
        assert_eq!(w.overdue(120_000_000), Some(2), "the oldest is reported");
        w.completed(2);
        assert_eq!(w.overdue(146_000_000), None, "slot 3: 96 ms");
        assert_eq!(w.overdue(171_000_000), Some(3));
        w.completed(3);
        assert_eq!(w.overdue(10_000_000_000), None, "nothing in flight");
    }

    #[test]
    fn zero_is_off() {
        let mut w = IoWatch::new(Duration::ZERO, 4);
        w.submitted(0, 0);
        assert_eq!(w.wake(), u64::MAX);
        assert_eq!(w.overdue(u64::MAX / 2), None);
        assert_eq!(
            w.drain_limit(Duration::from_secs(10)),
            Duration::from_secs(10)
        );
        let w = IoWatch::new(Duration::from_secs(2), 1);
        assert_eq!(
            w.drain_limit(Duration::from_secs(10)),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn the_job_file_key_and_the_flag_set_it() {
        use crate::workload::flags::Flags;
        use crate::workload::jobfile::parse;
        let t = |text: &str| parse(text, "t.toml").map(|j| j.points[0].io_timeout);
        assert_eq!(t(""), Ok(DEFAULT_IO_TIMEOUT));
        assert_eq!(t("io_timeout = 5"), Ok(Duration::from_secs(5)));
        assert_eq!(t("io_timeout = \"250ms\""), Ok(Duration::from_millis(250)));
        for off in ["\"none\"", "\"off\"", "0", "\"0s\""] {
            assert_eq!(
                t(&format!("io_timeout = {off}")),
                Ok(Duration::ZERO),
                "{off}"
            );
        }
        let e = t("io_timeout = \"5ms\"").unwrap_err().to_string();
        assert!(
            e.contains("io_timeout") && e.contains("at least 10 ms"),
            "{e}"
        );
        let e = t("io_timeout = \"soon\"").unwrap_err().to_string();
        assert!(e.contains("io_timeout") && e.contains("soon"), "{e}");
        let flags = Flags {
            io_timeout: Some("2s".into()),
            ..Flags::default()
        };
        let job = flags.apply(None).unwrap();
        assert_eq!(job.points[0].io_timeout, Duration::from_secs(2));
    }

    #[test]
    fn message_names_the_io_and_the_target() {
        let m = message(
            Dir::Read,
            4096,
            123,
            "nbd://10.99.1.2:10810/storlab",
            Duration::from_secs(30),
        );
        assert!(
            m.starts_with(
                "read of 4096 bytes at offset 123 on nbd://10.99.1.2:10810/storlab \
                 did not complete within 30 s"
            ),
            "{m}"
        );
    }

    /// Accepts requests and never completes them; counts `abandon` calls.
    struct Stuck {
        queued: usize,
        abandoned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    // SAFETY: Stuck never touches a request's buffer.
    unsafe impl Backend for Stuck {
        fn name(&self) -> &'static str {
            "stuck"
        }
        fn depth(&self) -> usize {
            64
        }
        fn queue(&mut self, _req: Request) -> Result<(), QueueError> {
            if self.queued >= 64 {
                return Err(QueueError::Busy);
            }
            self.queued += 1;
            Ok(())
        }
        fn commit(&mut self) -> Result<(), BackendError> {
            Ok(())
        }
        fn reap(&mut self, wait: Wait, _out: &mut Vec<Completion>) -> Result<usize, BackendError> {
            let t = wait
                .timeout
                .expect("the engine always bounds reap while a limit is set");
            std::thread::sleep(t);
            Ok(0)
        }
        fn abandon(&mut self) {
            self.abandoned
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The engine loop ends a run whose I/O never completes within the limit
    /// plus one scan period, names the I/O, keeps the intervals before it and
    /// does not wait out the drain.
    #[test]
    fn the_engine_ends_a_stuck_run_and_keeps_its_intervals() {
        let mut spec = crate::workload::test_spec(1, 1, 1);
        spec.runtime = Duration::from_secs(60);
        spec.interval = Duration::from_millis(100);
        let targets = [(Target::Null, TargetKind::Single)];
        let plan = plan::build(&spec, &targets, 1);
        let stop = AtomicBool::new(false);
        let (tx, rx) = mpsc::channel();
        let limit = Duration::from_millis(400);
        let ctx = ThreadCtx::for_test(&plan, spec.content, &stop, tx, 600, limit);
        let pool = worker::make_pool(&ctx);
        let abandoned = std::sync::Arc::default();
        let b = Stuck {
            queued: 0,
            abandoned: std::sync::Arc::clone(&abandoned),
        };
        let b: Box<dyn Backend> = Box::new(b);
        let mut b = Lane::new(b, pool).unwrap();
        let start = Instant::now();
        let err = worker::run(&ctx, &mut b, start).unwrap_err();
        let took = start.elapsed();
        assert!(
            took >= limit && took < limit + Duration::from_millis(400),
            "ended after {took:?}"
        );
        assert!(err.contains("did not complete within 400 ms"), "{err}");
        assert!(err.contains("bytes at offset"), "{err}");
        assert!(err.contains("null"), "names the target: {err}");
        assert!(
            abandoned.load(std::sync::atomic::Ordering::SeqCst),
            "the backend was told to give up on its I/O"
        );
        drop(ctx);
        let intervals = rx
            .try_iter()
            .filter(|m| matches!(m, Msg::Interval { .. }))
            .count();
        assert!(
            (4..=8).contains(&intervals),
            "the intervals before the timeout are shipped: {intervals}"
        );
    }
}
