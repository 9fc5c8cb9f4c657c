//! The backend contract: what the engine asks of a place where bytes go.
//!
//! A backend only moves bytes: it accepts [`Request`]s, starts them, and
//! reports which have finished as [`Completion`]s. It never reads the clock
//! for statistics; the engine (`crate::engine`) stamps every I/O and records
//! every histogram, so all backends are measured the same way. Buffers come
//! from one [`BufferPool`] per engine thread.

pub mod buffers;
pub mod fsops;
mod lane;
pub mod reap;

use crate::workload::Dir;
use std::fmt;
use std::time::Duration;

pub use buffers::{BufferPool, IoBuf};
pub use lane::{Io, Lane};
pub use reap::{Polled, reap_polled};

/// One I/O handed to a backend.
#[derive(Debug)]
pub struct Request {
    /// The engine's slot for this I/O; echoed back in its [`Completion`].
    /// It is also the index of the slot's buffer in the registered [`BufferPool`].
    pub slot: u32,
    /// Index of the disk in the list the backend was opened with.
    pub disk: u32,
    /// Read or write.
    pub dir: Dir,
    /// Byte offset on the disk.
    pub offset: u64,
    /// The slot's buffer, leased to this request: its length is the
    /// request's length.
    pub buf: IoBuf,
}

impl Request {
    /// Length in bytes (the lease's).
    #[inline]
    pub fn len(&self) -> u32 {
        self.buf.len()
    }

    /// Whether the request moves no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

/// The outcome of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot of the request.
    pub slot: u32,
    /// Bytes transferred, or the errno the storage reported.
    pub result: Result<u32, i32>,
}

/// Why a request could not be queued.
#[derive(Debug)]
pub enum QueueError {
    /// The backend holds as many requests as it can: reap some, then retry.
    Busy,
    /// The backend cannot go on (connection lost, ring broken).
    Fatal(BackendError),
}

/// An error from a backend, naming the target it concerns.
#[derive(Debug)]
pub struct BackendError {
    /// The target (path or URL) or backend the error concerns.
    pub target: String,
    /// What failed.
    pub message: String,
}

impl BackendError {
    /// Build an error about `target`.
    pub fn new(target: impl Into<String>, message: impl Into<String>) -> Self {
        BackendError {
            target: target.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.target, self.message)
    }
}

impl std::error::Error for BackendError {}

/// How long [`Backend::reap`] waits: until at least `min` requests have
/// finished, or until `timeout` has passed since the call began, whichever is
/// first (io_uring's wait for a number of completions with a timeout).
///
/// `Wait::at_least(n)` waits without bound, `.or_after(t)` adds the bound and
/// [`Wait::POLL`] only collects what has already finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// Completions to wait for; a backend with fewer in flight waits for
    /// those ([`Wait::want`]).
    pub min: usize,
    /// The longest the call waits: `None` waits without bound, `Some(ZERO)`
    /// only polls.
    pub timeout: Option<Duration>,
}

impl Wait {
    /// Collect what has finished without waiting: `min` 0, timeout zero.
    pub const POLL: Wait = Wait {
        min: 0,
        timeout: Some(Duration::ZERO),
    };

    /// Until `min` requests have finished, without a time bound.
    pub const fn at_least(min: usize) -> Wait {
        Wait { min, timeout: None }
    }

    /// The same wait, ending once `timeout` has passed.
    pub const fn or_after(self, timeout: Duration) -> Wait {
        Wait {
            min: self.min,
            timeout: Some(timeout),
        }
    }

    /// The completions to wait for with `in_flight` requests in flight:
    /// `min`, bounded by `in_flight`.
    #[inline]
    pub fn want(self, in_flight: usize) -> usize {
        self.min.min(in_flight)
    }
}

/// A storage backend, driven by one engine thread (fio's `ioengine_ops`).
///
/// The lifecycle is `register_buffers` once, then any number of rounds of
/// `queue`* → `commit` → `reap`, then drop. Callers drive it through a
/// [`Lane`], which owns the backend and the buffers its requests lease. The
/// contract:
///
/// * **Queue depth.** `queue` accepts at least [`Backend::depth`] requests that
///   have not yet been returned by `reap`. Past that it may return
///   [`QueueError::Busy`]; the engine then reaps before queueing again. Busy is
///   an ordinary condition, never an error.
/// * **Commit.** `commit` makes every queued request eligible to start. A backend
///   may defer the actual submission to the next `reap` (io_uring submits and
///   waits in one system call), but a request queued before `commit` must make
///   progress without further `queue` calls. A backend whose
///   [`Backend::commit_each`] is true starts each request at its `commit`, and
///   the engine then commits every request as it queues it.
/// * **Reap.** `reap(wait, out)` appends finished requests to `out` and
///   returns how many it appended. It returns once at least `wait.min` have
///   finished (bounded by the number in flight: [`Wait::want`]), or when
///   `wait.timeout` has passed since the call began, whichever is first;
///   `timeout = None` waits without bound, `Some(ZERO)` only polls. Returning
///   fewer than `min` after the timeout is not an error. Timeouts do not
///   accumulate across calls: the engine computes each one from its own clock.
///   Backends that poll their own sockets share one loop for this,
///   [`reap_polled`], whose rule also fixes what min 0 means: one pass over
///   the sockets without blocking.
/// * **Errors.** A failed I/O is a [`Completion`] with `Err(errno)`; the backend
///   stays usable. An `Err` from `commit` or `reap` means the backend is broken:
///   the requests still in flight are lost, the engine stops the worker, and it
///   drops the backend without reaping them (a backend must make that drop safe,
///   waiting for or cancelling what the kernel or library still owns).
/// * **Durability.** With `OpenOptions::sync`, a write is completed only once the
///   storage has made it stable (O_DSYNC/O_SYNC locally, FILE_SYNC over NFS,
///   FUA or SYNCHRONIZE CACHE over iSCSI, FUA over NBD).
/// * **Size.** A request that reaches past the end of its disk never completes
///   with its full length: it fails with an errno (NBD, iSCSI) or completes
///   short (`Ok(n)` with `n` below the length: files, NFS), which the engine
///   counts as an error. Alignment is the storage's business: a backend that
///   cannot carry an unaligned request fails it with `EINVAL` (iSCSI: block
///   size; files with O_DIRECT: the kernel) and goes on.
/// * **Time.** A backend never reads the clock for statistics; the engine stamps
///   submission before `commit` and completion after `reap`.
///
/// tests/backend_contract.rs checks every backend against this contract.
///
/// # Safety
/// Implementations promise, about the buffer each request leases
/// ([`Request::buf`]):
/// * it is read or written (by the backend, its library or the kernel) only
///   after `queue` accepted the request (returned `Ok`) and until `reap`
///   returns that request's completion, which it returns once, with the
///   request's slot; a request `queue` refused is not touched after it returns;
/// * once drop has returned, no buffer of a request the backend accepted and
///   did not complete is read or written again, unless [`Backend::retire`]
///   returned false before the drop: then some may still be written later,
///   and the [`Lane`] never frees them.
///
/// The engine relies on this to reuse a slot's buffer the moment its
/// completion is reaped, and to free the pool after the backend is dropped.
pub unsafe trait Backend: Send {
    /// Short backend name ("file", "null").
    fn name(&self) -> &'static str;

    /// How many requests may be outstanding at once.
    fn depth(&self) -> usize;

    /// What the backend uses, for the run's record ("io_uring, registered
    /// buffers"); empty when there is nothing to say.
    fn features(&self) -> String {
        String::new()
    }

    /// Called once, before the first `queue`, with the pool every
    /// `Request::buf` will lease from. Backends that can pin buffers (io_uring's
    /// registered buffers) do it here; the default does nothing.
    fn register_buffers(&mut self, _pool: &BufferPool) -> Result<(), BackendError> {
        Ok(())
    }

    /// Queue one request. See the trait docs for `Busy`.
    fn queue(&mut self, req: Request) -> Result<(), QueueError>;

    /// Start everything queued (or arrange for the next `reap` to start it).
    fn commit(&mut self) -> Result<(), BackendError>;

    /// Whether the engine should commit each request as soon as it is queued,
    /// stamping it then, rather than once per batch of refills. A backend says
    /// yes when its `commit` starts the request at once and a device works on
    /// it while the next is prepared (O_DIRECT files: the device sees each
    /// request a submission earlier, as fio's default `iodepth_batch_submit=1`
    /// gives it); no (the default) where a batch costs one system call or one
    /// message instead of one per request. A workload's `iodepth_batch_submit`
    /// decides over this wish (`engine::worker::commit_every`).
    fn commit_each(&self) -> bool {
        false
    }

    /// Collect finished requests, waiting as `wait` says: see the trait docs.
    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError>;

    /// What the storage said about the last failed request beyond its errno
    /// (a SCSI status and sense), added to the run's error; `None` by default.
    fn error_detail(&self) -> Option<String> {
        None
    }

    /// The engine gave up on the requests in flight (one exceeded the I/O
    /// timeout, [`timeout`]): the backend is about to be dropped without
    /// reaping them, and its drop must not wait for the storage (no draining,
    /// no flush or COMMIT, no orderly close) beyond what memory safety needs.
    /// The default does nothing, for backends whose drop never waits.
    fn abandon(&mut self) {}

    /// The backend is about to be dropped with requests in flight: make sure
    /// the storage no longer touches their buffers (close the connection,
    /// cancel, or wait for a bounded time) and say so with true; false when
    /// some may still be written later (the kernel still owns them after the
    /// wait), and the [`Lane`] then never frees the pool. The default says
    /// true, for backends whose drop alone retires everything (a library that
    /// writes into buffers only inside calls on its handle, closed at drop).
    fn retire(&mut self) -> bool {
        true
    }

    /// What the storage says disk `disk` (its index among the disks this
    /// backend opened) is, independent of the URL or path that reached it: a
    /// file's device and inode, an NFS file's fsid and fileid, a LUN's
    /// device identification (NAA or EUI-64), an NBD export's name and size.
    /// Two targets that reach the same storage report the same identity, so
    /// verify maps and headers follow the storage, not the address
    /// (docs/verify.md). `None` (the default) when the backend cannot tell.
    fn identity(&self, _disk: usize) -> Option<String> {
        None
    }

    /// Move the outages that ended since the last call into `out`: stretches
    /// in which the backend had lost its storage (a connection) and won it
    /// back within [`OpenOptions::reconnect`], sending again what was in
    /// flight. Asked once per measured interval. The default has none.
    fn take_outages(&mut self, _out: &mut Vec<Outage>) {}

    /// Whether the storage is still there, asked once per measured interval
    /// (not per I/O): an error names the target and what happened to it, and
    /// ends the run like a failed I/O. For storage that can vanish while its
    /// I/O still succeeds (a file unlinked under an open descriptor). The
    /// default says yes.
    fn check(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}

/// One outage a backend rode through ([`Backend::take_outages`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outage {
    /// The target whose connection was lost.
    pub target: String,
    /// What ended the connection.
    pub why: String,
    /// When the backend saw it lost.
    pub lost: std::time::Instant,
    /// When the backend had it back (reconnected, requests sent again).
    pub back: std::time::Instant,
    /// Requests that were in flight on it and were sent again.
    pub retried: u32,
}

/// How a backend opens its disks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Bypass the page cache (O_DIRECT) where the backend has one.
    pub direct: bool,
    /// Per-write durability.
    pub sync: Option<crate::workload::SyncMode>,
    /// Whether any request will write.
    pub write: bool,
    /// Requests in flight the backend must accept (sum of its workers' iodepth).
    pub depth: u32,
    /// Bytes every disk must hold (the plan's largest region end: offset +
    /// size, or offset + slices x size on a sliced single target): a backend
    /// that can learn a disk's size refuses to open a smaller one, naming both sizes.
    pub size_needed: u64,
    /// `--sqpoll`: a kernel thread polls the submission queue
    /// (IORING_SETUP_SQPOLL); io_uring backends only, others refuse it.
    pub sqpoll: bool,
    /// `--sqpoll_cpu`: the CPU the SQPOLL thread is pinned to.
    pub sqpoll_cpu: Option<u32>,
    /// `--hipri`: completions are polled (IORING_SETUP_IOPOLL, O_DIRECT only);
    /// io_uring backends only, others refuse it.
    pub hipri: bool,
    /// `--ioengine`: io_uring, or psync (pread/pwrite on the engine thread);
    /// the file backend's choice, others refuse psync.
    pub ioengine: crate::workload::IoEngine,
    /// `--reconnect-timeout`: a protocol backend that loses a connection
    /// reconnects for up to this long and sends again what was in flight
    /// ([`Outage`]); `None`: a lost connection breaks the backend. Backends
    /// without connections ignore it.
    pub reconnect: Option<std::time::Duration>,
}
