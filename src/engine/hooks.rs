//! Hooks into every I/O of a point: the engine calls them at issue and at
//! completion, and knows nothing of what they do. Verify mode (`crate::verify`)
//! is the one implementation: it locks the blocks an I/O touches, stamps
//! headers into writes, checks reads and records acknowledged writes.
//!
//! Contract, per engine thread ([`ThreadHooks`]):
//! * Before a slot issues, the engine asks [`ThreadHooks::next_io`] which I/O
//!   it issues (the one the hooks hold back for it, else the generator's
//!   next). `None` holds the slot back: the engine retries it after
//!   [`ThreadHooks::retry_ns`], with the same I/O, so sequential streams keep
//!   their order.
//! * A write's buffer is handed to [`ThreadHooks::prepare_write`] before it is
//!   queued (the slot is not in flight, so the buffer is free to change).
//! * An I/O the backend refused (`Busy`, fatal) is returned with
//!   [`ThreadHooks::unqueued`]; every queued I/O comes back exactly once through
//!   [`ThreadHooks::completed`], with its buffer, including while draining.
//! * [`ThreadHooks::finish`] ends the thread's share; `Some` names what the hooks
//!   found wrong, and fails the run like an I/O error.
//!
//! With no hooks (`None`), the engine pays one branch per I/O.

use crate::model::HostVerify;
use crate::workload::pattern::Io;

/// One engine thread's hooks.
pub trait ThreadHooks {
    /// The I/O slot `slot` issues next on its thread-local disk `disk`: the
    /// one held back for it, else `next()`. `None`: held back; retry later.
    fn next_io(&mut self, slot: u32, disk: u32, next: &mut dyn FnMut() -> Io) -> Option<Io>;
    /// How long a held-back slot waits before it retries, ns.
    fn retry_ns(&self) -> u64;
    /// Fill the write buffer of `slot` (its I/O came from `next_io`).
    fn prepare_write(&mut self, slot: u32, buf: &mut [u8], writer: u32);
    /// The I/O of `slot` was not queued after all.
    fn unqueued(&mut self, slot: u32);
    /// The I/O of `slot` completed (`ok`: in full) with `buf` as its data;
    /// returns the number of bad blocks it found.
    fn completed(&mut self, slot: u32, ok: bool, buf: &[u8]) -> u64;
    /// The thread is done; `Some` names what the hooks found wrong.
    fn finish(&mut self) -> Option<String>;
}

/// A point's hooks, shared by its engine threads.
pub trait PointHooks: Send + Sync {
    /// The hooks of a thread whose disks are `thread_disks` (plan disk
    /// indices, in the thread's local order) and which has `slots` slots.
    fn thread(&self, thread_disks: &[u32], slots: usize) -> Box<dyn ThreadHooks + '_>;
    /// The point ended, however: save what must outlive it and say where.
    fn finish(&self) -> HostVerify;
}
