//! A backend together with the buffers its requests lease: the one place that
//! makes leases ([`IoBuf`](super::IoBuf)), and so the only way safe code
//! queues I/O. It keeps what the unsafe lease constructor asks: a slot is
//! leased once at a time and never read while in flight, and the pool is freed
//! only after the backend is dropped, and never while the storage may still
//! write into it.

use super::{Backend, BackendError, BufferPool, Completion, QueueError, Request, Wait};
use crate::workload::Dir;
use std::mem::ManuallyDrop;
use std::time::Duration;

/// A backend and its buffer pool, one per engine thread (or test).
///
/// Slot `s` of a request is buffer `s` of the pool. While a slot is in flight
/// (queued and not yet reaped) its buffer cannot be borrowed: [`Lane::buf`]
/// and [`Lane::buf_mut`] panic.
pub struct Lane<B: ?Sized + Backend = dyn Backend> {
    /// Dropped before the pool, in `drop`.
    backend: ManuallyDrop<Box<B>>,
    /// Freed after the backend, and only when no request may still use it.
    pool: ManuallyDrop<BufferPool>,
    /// Per slot: leased to a request the backend has not completed.
    busy: Vec<bool>,
    in_flight: usize,
}

/// One I/O of a batch run by [`Lane::run`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    /// Index of the disk in the backend's list.
    pub disk: u32,
    /// Read or write.
    pub dir: Dir,
    /// Byte offset on the disk.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

impl Io {
    /// `len` bytes in direction `dir` at `offset` on disk 0.
    pub fn new(dir: Dir, offset: u64, len: u32) -> Io {
        Io {
            disk: 0,
            dir,
            offset,
            len,
        }
    }

    /// A read of `len` bytes at `offset` on disk 0.
    pub fn read(offset: u64, len: u32) -> Io {
        Io::new(Dir::Read, offset, len)
    }

    /// A write of `len` bytes at `offset` on disk 0.
    pub fn write(offset: u64, len: u32) -> Io {
        Io::new(Dir::Write, offset, len)
    }
}

impl<B: ?Sized + Backend> Lane<B> {
    /// Put `backend` and `pool` together, registering the pool with the
    /// backend ([`Backend::register_buffers`]).
    pub fn new(mut backend: Box<B>, pool: BufferPool) -> Result<Lane<B>, BackendError> {
        backend.register_buffers(&pool)?;
        Ok(Lane {
            busy: vec![false; pool.count()],
            backend: ManuallyDrop::new(backend),
            pool: ManuallyDrop::new(pool),
            in_flight: 0,
        })
    }

    /// [`Lane::new`] without registering the pool (to compare plain buffers).
    #[cfg(test)]
    pub(crate) fn unregistered(backend: Box<B>, pool: BufferPool) -> Lane<B> {
        Lane {
            busy: vec![false; pool.count()],
            backend: ManuallyDrop::new(backend),
            pool: ManuallyDrop::new(pool),
            in_flight: 0,
        }
    }

    /// The backend, to ask it what it is (name, depth, features, its own
    /// queries). There is no `&mut` access: swapping the backend out would let
    /// it outlive the pool its requests lease from.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Number of slots (buffers in the pool).
    pub fn slots(&self) -> usize {
        self.pool.count()
    }

    /// Size of each slot's buffer.
    pub fn buf_size(&self) -> usize {
        self.pool.size()
    }

    /// Requests queued and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn idle(&self, slot: u32) -> usize {
        let s = slot as usize;
        assert!(
            !self.busy[s],
            "slot {slot}'s buffer is in use by a request in flight"
        );
        s
    }

    /// Slot `slot`'s buffer (a read's data once its completion is reaped).
    /// Panics while the slot is in flight.
    pub fn buf(&self, slot: u32) -> &[u8] {
        self.pool.slice(self.idle(slot))
    }

    /// Slot `slot`'s buffer, to fill before a write. Panics while the slot is
    /// in flight.
    pub fn buf_mut(&mut self, slot: u32) -> &mut [u8] {
        let s = self.idle(slot);
        self.pool.slice_mut(s)
    }

    /// Queue `len` bytes at `offset` of `disk` in slot `slot`'s buffer.
    /// Panics when the slot is in flight or `len` exceeds the buffer.
    #[inline]
    pub fn queue(
        &mut self,
        slot: u32,
        disk: u32,
        dir: Dir,
        offset: u64,
        len: u32,
    ) -> Result<(), QueueError> {
        let s = self.idle(slot);
        // SAFETY: the slot is not in flight, so no other lease of it lives, and
        // none is made nor any slice of it handed out (`idle` checks) until
        // `reap` returns its completion and clears `busy`; a refused request
        // is not touched after `queue` returns (Backend's contract). The pool
        // lives in `self`, is freed only after the backend is dropped, and
        // never when `retire` said the storage may still write (Drop below).
        let buf = unsafe { self.pool.lend(s, len) };
        self.backend.queue(Request {
            slot,
            disk,
            dir,
            offset,
            buf,
        })?;
        self.busy[s] = true;
        self.in_flight += 1;
        Ok(())
    }

    /// [`Backend::commit`].
    #[inline]
    pub fn commit(&mut self) -> Result<(), BackendError> {
        self.backend.commit()
    }

    /// [`Backend::commit_each`].
    pub fn commit_each(&self) -> bool {
        self.backend.commit_each()
    }

    /// [`Backend::reap`]; the slots of what it returns are free again.
    #[inline]
    pub fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        let start = out.len();
        let r = self.backend.reap(wait, out);
        for c in &out[start..] {
            let busy = &mut self.busy[c.slot as usize];
            assert!(
                *busy,
                "{}: completion for idle slot {}",
                self.backend.name(),
                c.slot
            );
            *busy = false;
        }
        self.in_flight -= out.len() - start;
        r
    }

    /// [`Backend::abandon`].
    pub fn abandon(&mut self) {
        self.backend.abandon()
    }

    /// [`Backend::check`].
    pub fn check(&mut self) -> Result<(), BackendError> {
        self.backend.check()
    }

    /// The backend's outages since the last call ([`Backend::take_outages`]).
    pub fn take_outages(&mut self, out: &mut Vec<super::Outage>) {
        self.backend.take_outages(out);
    }

    /// Run `ios` with at most `depth` in flight (and no more than the pool's
    /// slots): `fill(i, buf)` prepares the buffer of `ios[i]` before it is
    /// queued (a write's data), `done(i, result, buf)` sees its completion and
    /// its buffer (a read's data), and stops the batch by returning an error.
    /// Each reap waits at most `timeout`. Fails with `done`'s error, the
    /// backend's, or when nothing completes within `timeout`; what is still
    /// in flight then stays with the lane, which retires it when dropped.
    pub fn run(
        &mut self,
        ios: &[Io],
        depth: usize,
        timeout: Duration,
        mut fill: impl FnMut(usize, &mut [u8]),
        mut done: impl FnMut(usize, Result<u32, i32>, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let depth = depth.clamp(1, self.slots().max(1));
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut owner = vec![0usize; depth];
        let mut out = Vec::with_capacity(depth);
        let (mut next, mut left) = (0, ios.len());
        while left > 0 {
            let mut queued = false;
            while next < ios.len() {
                let Some(s) = free.pop() else { break };
                let io = ios[next];
                fill(next, &mut self.buf_mut(s)[..io.len as usize]);
                match self.queue(s, io.disk, io.dir, io.offset, io.len) {
                    Ok(()) => {
                        owner[s as usize] = next;
                        next += 1;
                        queued = true;
                    }
                    Err(QueueError::Busy) if self.in_flight > 0 => {
                        free.push(s);
                        break;
                    }
                    Err(QueueError::Busy) => {
                        return Err(format!(
                            "{}: busy with nothing in flight",
                            self.backend.name()
                        ));
                    }
                    Err(QueueError::Fatal(e)) => return Err(e.to_string()),
                }
            }
            if queued {
                self.commit().map_err(|e| e.to_string())?;
            }
            out.clear();
            if self
                .reap(Wait::at_least(1).or_after(timeout), &mut out)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err(format!(
                    "{} I/O(s) got no answer in {timeout:?}",
                    self.in_flight
                ));
            }
            for c in &out {
                let i = owner[c.slot as usize];
                done(i, c.result, &self.buf(c.slot)[..ios[i].len as usize])?;
                free.push(c.slot);
                left -= 1;
            }
        }
        Ok(())
    }
}

impl<B: ?Sized + Backend> Drop for Lane<B> {
    fn drop(&mut self) {
        let clean = self.in_flight == 0 || self.backend.retire();
        // SAFETY: `backend` is dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.backend) };
        if clean {
            // SAFETY: dropped once and not used after; the backend is gone and
            // with it every use of the pool's leases (Backend's contract).
            unsafe { ManuallyDrop::drop(&mut self.pool) };
        } else {
            eprintln!(
                "storlab: {} requests were never given back by the storage; their buffers \
                 ({} bytes) are kept, not freed, until storlab exits",
                self.in_flight,
                self.pool.count() * self.pool.size()
            );
        }
    }
}
