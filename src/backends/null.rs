//! The null backend: every request completes at once with its full length.
//!
//! It moves no bytes and makes no system call, so a run against it measures the
//! engine's own ceiling; it is also the backend of the engine's tests.

use crate::io::{Backend, BackendError, Completion, QueueError, Request, Wait};

/// Completes every request instantly with `Ok(len)`.
///
/// Queued requests wait in a fixed-capacity list (allocated once, at `depth`)
/// until `reap`, which starts and finishes all of them; `commit` has nothing to do.
#[derive(Debug)]
pub struct NullBackend {
    depth: usize,
    pending: Vec<Completion>,
}

impl NullBackend {
    /// A backend accepting `depth` outstanding requests (at least 1).
    pub fn new(depth: usize) -> Self {
        let depth = depth.max(1);
        NullBackend {
            depth,
            pending: Vec::with_capacity(depth),
        }
    }
}

// SAFETY: the null backend never reads or writes a request's buffer; it
// keeps only slots and lengths.
unsafe impl Backend for NullBackend {
    fn name(&self) -> &'static str {
        "null"
    }

    fn depth(&self) -> usize {
        self.depth
    }

    #[inline]
    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if self.pending.len() >= self.depth {
            return Err(QueueError::Busy);
        }
        self.pending.push(Completion {
            slot: req.slot,
            result: Ok(req.len()),
        });
        Ok(())
    }

    #[inline]
    fn commit(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    /// Every request in flight has finished, so this returns all of them at
    /// once, whatever `wait` says, and never blocks.
    #[inline]
    fn reap(&mut self, _wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        let n = self.pending.len();
        out.extend_from_slice(&self.pending);
        self.pending.clear();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferPool, Io, Lane};
    use crate::workload::Dir;
    use std::time::{Duration, Instant};

    fn lane(depth: usize) -> Lane<NullBackend> {
        Lane::new(Box::new(NullBackend::new(depth)), BufferPool::new(16, 4096)).unwrap()
    }

    fn queue(l: &mut Lane<NullBackend>, slot: u32, len: u32) -> Result<(), QueueError> {
        l.queue(slot, 0, Dir::Read, slot as u64 * 4096, len)
    }

    #[test]
    fn busy_past_depth_then_accepts_after_reap() {
        let mut b = lane(4);
        assert_eq!(b.backend().depth(), 4);
        for s in 0..4 {
            queue(&mut b, s, 512).unwrap();
        }
        assert!(matches!(queue(&mut b, 9, 512), Err(QueueError::Busy)));
        b.commit().unwrap();
        let mut out = Vec::new();
        assert_eq!(b.reap(Wait::at_least(1), &mut out).unwrap(), 4);
        let slots: Vec<u32> = out.iter().map(|c| c.slot).collect();
        assert_eq!(slots, vec![0, 1, 2, 3]);
        assert!(out.iter().all(|c| c.result == Ok(512)));
        queue(&mut b, 9, 4096).unwrap();
        b.commit().unwrap();
        out.clear();
        assert_eq!(b.reap(Wait::at_least(1), &mut out).unwrap(), 1);
        assert_eq!(
            out,
            vec![Completion {
                slot: 9,
                result: Ok(4096)
            }]
        );
    }

    #[test]
    fn reap_min_is_bounded_by_in_flight_and_never_blocks() {
        let mut b = lane(8);
        let mut out = Vec::new();
        let t = Instant::now();
        // Nothing in flight: min is bounded by 0, timeout None must not hang.
        assert_eq!(b.reap(Wait::at_least(8), &mut out).unwrap(), 0);
        queue(&mut b, 1, 8).unwrap();
        queue(&mut b, 2, 8).unwrap();
        b.commit().unwrap();
        assert_eq!(b.reap(Wait::at_least(8), &mut out).unwrap(), 2);
        // Polling with nothing left appends nothing.
        assert_eq!(b.reap(Wait::POLL, &mut out).unwrap(), 0);
        assert_eq!(
            b.reap(Wait::at_least(1).or_after(Duration::from_secs(5)), &mut out)
                .unwrap(),
            0
        );
        assert!(t.elapsed() < Duration::from_secs(1));
        // reap appends, it does not overwrite.
        queue(&mut b, 3, 8).unwrap();
        assert_eq!(
            b.reap(Wait::at_least(1).or_after(Duration::ZERO), &mut out)
                .unwrap(),
            1
        );
        assert_eq!(
            out.iter().map(|c| c.slot).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn no_allocation_per_request() {
        let mut b = lane(16);
        let cap = b.backend().pending.capacity();
        let mut out = Vec::with_capacity(16);
        for round in 0..1000u32 {
            for s in 0..16 {
                queue(&mut b, s, round).unwrap();
            }
            b.commit().unwrap();
            out.clear();
            assert_eq!(b.reap(Wait::at_least(16), &mut out).unwrap(), 16);
        }
        assert_eq!(b.backend().pending.capacity(), cap);
        assert_eq!(out.capacity(), 16);
    }

    // The lane's own guarantees, with the backend that moves nothing.

    #[test]
    #[should_panic(expected = "in use by a request in flight")]
    fn a_slot_in_flight_cannot_be_borrowed() {
        let mut l = lane(4);
        l.queue(1, 0, Dir::Read, 0, 4096).unwrap();
        let _ = l.buf(1);
    }

    #[test]
    #[should_panic(expected = "in use by a request in flight")]
    fn a_slot_in_flight_cannot_be_queued_again() {
        let mut l = lane(4);
        l.queue(1, 0, Dir::Read, 0, 4096).unwrap();
        let _ = l.queue(1, 0, Dir::Read, 0, 4096);
    }

    #[test]
    #[should_panic(expected = "a 8192-byte request in a 4096-byte buffer")]
    fn a_request_longer_than_its_buffer_is_refused() {
        let _ = lane(4).queue(0, 0, Dir::Read, 0, 8192);
    }

    #[test]
    fn reaping_frees_the_slot_and_run_sees_every_io_once() {
        let mut l = lane(2);
        l.queue(0, 0, Dir::Write, 0, 512).unwrap();
        assert_eq!(l.in_flight(), 1);
        let mut out = Vec::new();
        assert_eq!(l.reap(Wait::at_least(1), &mut out).unwrap(), 1);
        assert_eq!(l.in_flight(), 0);
        l.buf_mut(0)[0] = 7;
        let ios: Vec<Io> = (0..10).map(|i| Io::write(i * 512, 512)).collect();
        let mut seen = vec![0; ios.len()];
        let mut filled = vec![0; ios.len()];
        l.run(
            &ios,
            8,
            Duration::from_secs(1),
            |i, buf| {
                assert_eq!(buf.len(), 512);
                filled[i] += 1;
            },
            |i, r, _| {
                assert_eq!(r, Ok(512));
                seen[i] += 1;
                Ok(())
            },
        )
        .unwrap();
        assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        // The null backend takes two at a time: the third fill is retried.
        assert!(filled.iter().all(|&n| n >= 1), "{filled:?}");
        assert_eq!(l.in_flight(), 0);
    }
}
