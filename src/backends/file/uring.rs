//! The unsafe/FFI boundary of the file backend: a thin io_uring ring wrapper
//! and the block-device size ioctl. Every system call of the file backend and
//! of prepare is here; the one that hands the kernel a buffer it keeps
//! ([`Ring::push_rw`]) is an `unsafe fn`, called from the backend's `queue`
//! (docs/unsafe.md).

use crate::io::{BufferPool, Completion, IoBuf};
use io_uring::{IoUring, opcode, types};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Largest number of buffers io_uring accepts in one registration.
const MAX_REG_BUFFERS: usize = 1 << 14;

/// user_data of the cancel request drop issues (slots are u32, so never equal).
pub(crate) const CANCEL_TAG: u64 = u64::MAX;

/// Which file a request targets: an index into the registered file table or a
/// plain descriptor.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// Registered file index.
    Fixed(u32),
    /// Plain file descriptor.
    Fd(RawFd),
}

/// What the ring was built with, for the environment report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RingSetup {
    /// IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (bound to the
    /// first thread that queues).
    pub single_issuer: bool,
    /// IORING_SETUP_COOP_TASKRUN.
    pub coop_taskrun: bool,
    /// IORING_SETUP_SQPOLL: a kernel thread takes submissions off the ring.
    pub sqpoll: bool,
    /// IORING_SETUP_IOPOLL: completions are polled for, not interrupt-driven.
    pub iopoll: bool,
}

/// The polling modes asked for (`--sqpoll`, `--sqpoll_cpu`, `--hipri`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Polling {
    /// IORING_SETUP_SQPOLL with this idle time in milliseconds: the kernel
    /// thread sleeps after that long without submissions, and sets
    /// IORING_SQ_NEED_WAKEUP; the next submit wakes it (IORING_ENTER_SQ_WAKEUP).
    pub sqpoll_idle_ms: Option<u32>,
    /// IORING_SETUP_SQ_AFF: pin the SQPOLL thread to this CPU.
    pub sqpoll_cpu: Option<u32>,
    /// IORING_SETUP_IOPOLL (O_DIRECT only).
    pub iopoll: bool,
}

/// One io_uring instance, created disabled when the kernel allows it so that
/// the engine thread that first queues becomes its single issuer.
pub(crate) struct Ring {
    ring: IoUring,
    setup: RingSetup,
    enabled: bool,
}

fn is_flag_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
    )
}

impl Ring {
    /// A ring with `sq` submission entries (power of two) and `cq` completion
    /// entries, polling as `poll` asks (an error when the kernel refuses it:
    /// the caller names the option).
    pub fn new(sq: u32, cq: u32, poll: Polling) -> io::Result<Ring> {
        let base = RingSetup {
            sqpoll: poll.sqpoll_idle_ms.is_some(),
            iopoll: poll.iopoll,
            ..RingSetup::default()
        };
        // Task-work flags make no sense with SQPOLL (the kernel thread runs
        // the task work; the kernel refuses them with EINVAL): SQPOLL alone.
        if base.sqpoll {
            return Ring::build(sq, cq, base, poll);
        }
        // Best first: single issuer with deferred task work (Linux 6.1), as
        // fio does; then cooperative task work (Linux 5.19); then neither.
        // A kernel without a flag refuses it with EINVAL or EOPNOTSUPP.
        for setup in [
            RingSetup {
                single_issuer: true,
                ..base
            },
            RingSetup {
                coop_taskrun: true,
                ..base
            },
        ] {
            match Ring::build(sq, cq, setup, poll) {
                Err(e) if is_flag_error(&e) => {}
                built => return built,
            }
        }
        Ring::build(sq, cq, base, poll)
    }

    /// Build a ring with `setup`'s flags; a single issuer's ring starts
    /// disabled (the thread that first queues enables it).
    fn build(sq: u32, cq: u32, setup: RingSetup, poll: Polling) -> io::Result<Ring> {
        let mut b = IoUring::builder();
        b.setup_cqsize(cq).setup_clamp();
        if setup.single_issuer {
            b.setup_submit_all()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag()
                .setup_r_disabled();
        } else if setup.coop_taskrun {
            b.setup_submit_all()
                .setup_coop_taskrun()
                .setup_taskrun_flag();
        }
        if let Some(idle) = poll.sqpoll_idle_ms {
            b.setup_sqpoll(idle);
            if let Some(cpu) = poll.sqpoll_cpu {
                b.setup_sqpoll_cpu(cpu);
            }
        }
        if poll.iopoll {
            b.setup_iopoll();
        }
        Ok(Ring {
            ring: b.build(sq)?,
            setup,
            enabled: !setup.single_issuer,
        })
    }

    /// How the ring was set up.
    pub fn setup(&self) -> RingSetup {
        self.setup
    }

    /// Whether the kernel supports timed waits in io_uring_enter (Linux 5.11).
    pub fn has_ext_arg(&self) -> bool {
        self.ring.params().is_feature_ext_arg()
    }

    /// Whether an SQPOLL ring may use plain descriptors (Linux 5.11; older
    /// kernels' polling thread takes registered files only).
    pub fn sqpoll_takes_plain_files(&self) -> bool {
        self.ring.params().is_feature_sqpoll_nonfixed()
    }

    /// Whether the ring may be used (it is enabled on first use when created disabled).
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Enable a ring created disabled; the calling thread becomes its issuer.
    pub fn enable(&mut self) -> io::Result<()> {
        if !self.enabled {
            self.ring.submitter().register_enable_rings()?;
            self.enabled = true;
        }
        Ok(())
    }

    /// Register `fds` as the fixed file table (index = position).
    pub fn register_files(&self, fds: &[RawFd]) -> io::Result<()> {
        self.ring.submitter().register_files(fds)
    }

    /// Register every slot buffer of `pool`, one iovec per slot (index = slot).
    pub fn register_buffers(&self, pool: &BufferPool) -> io::Result<()> {
        if pool.count() == 0 || pool.count() > MAX_REG_BUFFERS {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let iov: Vec<libc::iovec> = (0..pool.count())
            .map(|slot| libc::iovec {
                iov_base: pool.addr(slot).as_ptr().cast(),
                iov_len: pool.size().max(1),
            })
            .collect();
        // SAFETY: every iovec covers `size` bytes of one slot inside the pool's
        // live allocation; the kernel pins those pages for as long as they are
        // registered, and the engine keeps the pool alive while it runs I/O.
        unsafe { self.ring.submitter().register_buffers(&iov) }
    }

    /// Number of entries waiting in the submission queue.
    #[inline]
    pub fn sq_pending(&mut self) -> usize {
        self.ring.submission().len()
    }

    /// Push one read or write of `buf` (its whole length). `buf_index`
    /// selects ReadFixed/WriteFixed. Returns false when the submission queue
    /// is full (nothing was pushed).
    ///
    /// # Safety
    /// When this returns true, the kernel reads or writes `buf`'s bytes until
    /// the completion carrying `user_data` is drained (or the ring is torn
    /// down), whatever becomes of the `IoBuf` handle: the caller keeps `buf`'s
    /// lease alive until then, which means reporting that completion for the
    /// request that holds the lease, and not letting the ring go while the
    /// kernel still owns it ([`Ring::discard`] after a cancel, or leaking the
    /// buffers). With `buf_index`, the registered buffer of that index must
    /// contain the lease (the kernel checks and fails the request otherwise).
    #[inline]
    pub unsafe fn push_rw(
        &mut self,
        write: bool,
        target: Target,
        buf: &IoBuf,
        offset: u64,
        buf_index: Option<u16>,
        user_data: u64,
    ) -> bool {
        let len = buf.len();
        let buf = buf.as_mut_ptr();
        // io-uring's bound for "a file or a registered file" is sealed, so a
        // macro, not a generic fn, builds the same four opcodes for either.
        macro_rules! rw {
            ($file:expr) => {
                match (buf_index, write) {
                    (Some(bi), false) => opcode::ReadFixed::new($file, buf, len, bi)
                        .offset(offset)
                        .build(),
                    (Some(bi), true) => opcode::WriteFixed::new($file, buf, len, bi)
                        .offset(offset)
                        .build(),
                    (None, false) => opcode::Read::new($file, buf, len).offset(offset).build(),
                    (None, true) => opcode::Write::new($file, buf, len).offset(offset).build(),
                }
            };
        }
        let entry = match target {
            Target::Fixed(i) => rw!(types::Fixed(i)),
            Target::Fd(fd) => rw!(types::Fd(fd)),
        }
        .user_data(user_data);
        // SAFETY: the entry names `len` bytes of the lease, which the caller
        // keeps alive until its completion is drained (this function's contract).
        unsafe { self.ring.submission().push(&entry).is_ok() }
    }

    /// Submit what is queued and wait for `want` completions; `timeout` bounds
    /// the wait (`Some` requires [`Ring::has_ext_arg`]). ETIME, EINTR, EBUSY and
    /// EAGAIN are not errors: the caller just drains what is there.
    ///
    /// With SQPOLL the kernel thread submits: this enters the kernel only to
    /// wait, or to wake the thread (IORING_ENTER_SQ_WAKEUP) when it has gone
    /// idle and set IORING_SQ_NEED_WAKEUP. With IOPOLL every enter carries
    /// GETEVENTS, which polls the device for completions (the kernel spins
    /// instead of sleeping, so `timeout` is only checked between polls). The
    /// io-uring crate's submit calls set both flags.
    pub fn submit_wait(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<()> {
        let sub = self.ring.submitter();
        let res = match timeout {
            None => sub.submit_and_wait(want),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                sub.submit_with_args(want, &args)
            }
        };
        match res {
            Ok(_) => Ok(()),
            Err(e) => match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) => {
                    Ok(())
                }
                _ => Err(e),
            },
        }
    }

    /// Whether the kernel has completions it will post only when asked
    /// (deferred or cooperative task work, a CQ overflow backlog, or, on an
    /// IOPOLL ring without SQPOLL, every completion: only an enter with
    /// GETEVENTS polls the device).
    #[inline]
    pub fn needs_getevents(&mut self) -> bool {
        if self.setup.iopoll && !self.setup.sqpoll {
            return true;
        }
        let sq = self.ring.submission();
        sq.taskrun() || sq.cq_overflow()
    }

    /// Move every posted completion into `out`; returns how many.
    #[inline]
    pub fn drain(&mut self, out: &mut Vec<Completion>) -> usize {
        let mut n = 0;
        for cqe in self.ring.completion() {
            let res = cqe.result();
            out.push(Completion {
                slot: cqe.user_data() as u32,
                result: if res < 0 { Err(-res) } else { Ok(res as u32) },
            });
            n += 1;
        }
        n
    }

    /// Ask the kernel to cancel every request it has not finished (Linux 5.19;
    /// older kernels fail the cancel itself, which is harmless). Its own
    /// completion carries [`CANCEL_TAG`].
    pub fn push_cancel_all(&mut self) -> bool {
        let entry = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(CANCEL_TAG);
        // SAFETY: a cancel request refers to no user memory.
        unsafe { self.ring.submission().push(&entry).is_ok() }
    }

    /// Discard every posted completion; returns how many were requests (not cancels).
    pub fn discard(&mut self) -> usize {
        self.ring
            .completion()
            .filter(|c| c.user_data() != CANCEL_TAG)
            .count()
    }
}

/// Read the first `len` bytes of `fd` (opened O_DIRECT) once through a
/// throwaway IOPOLL ring: Ok(bytes read) when the kernel polls this file's
/// device, the errno otherwise (EOPNOTSUPP: the file system or the device
/// cannot poll, as a device without poll queues). The buffer is freed only
/// once the kernel has given it back; it is leaked when that cannot be told.
pub(crate) fn probe_iopoll(fd: RawFd, len: usize) -> io::Result<u32> {
    let mut ring: IoUring = IoUring::builder().setup_iopoll().build(2)?;
    let pool = BufferPool::new(1, len);
    let entry = opcode::Read::new(types::Fd(fd), pool.addr(0).as_ptr(), len as u32)
        .offset(0)
        .build()
        .user_data(1);
    // SAFETY: the entry names `len` bytes of the pool's one buffer (a private
    // pool: no lease on it exists to alias); the pool is dropped below only after the request's completion has been reaped,
    // and leaked when the wait fails before that.
    unsafe {
        if ring.submission().push(&entry).is_err() {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
    }
    let res = loop {
        if let Some(c) = ring.completion().next() {
            break c.result();
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => {
                std::mem::forget(pool);
                return Err(e);
            }
        }
    };
    drop(pool);
    if res < 0 {
        Err(io::Error::from_raw_os_error(-res))
    } else {
        Ok(res as u32)
    }
}

/// `_IOR(0x12, 114, u64)`: the read direction (2) shifted left by 30 in the
/// generic ioctl encoding (x86, arm, riscv, s390), by 29 where sizes have 13
/// bits (powerpc, mips, sparc).
const BLKGETSIZE64: u64 = {
    let read = if cfg!(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc64"
    )) {
        2 << 29
    } else {
        2 << 30
    };
    read | (8 << 16) | (0x12 << 8) | 114
};

/// Size in bytes of the block device open as `fd` (ioctl BLKGETSIZE64).
pub(crate) fn block_device_size(fd: RawFd) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points to a
    // live local; an invalid fd or a non-block file only makes the ioctl fail.
    let rc = unsafe { libc::ioctl(fd, BLKGETSIZE64 as _, &mut size as *mut u64) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(size)
    }
}
