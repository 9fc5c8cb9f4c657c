//! Emulated storage media under the lab's one backing store.
//!
//! Every path to the lab's store (the block baseline, nfs-ganesha, tgt and
//! nbdkit) reaches its bytes through one FUSE file system that storlab serves
//! (`fuse/`). Before that file system answers a data operation it asks a
//! [`Medium`] when the operation would complete on the emulated device (a RAID
//! array of spindles behind a controller cache, a ZFS pool with or without a
//! log device, an SSD, RAM) and replies no earlier. The model (`model/`) and
//! its presets (a TOML data file with the source of each figure) decide those
//! times; the file system only moves bytes and keeps the appointments.

/// What an operation asks of the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Make every acknowledged write stable (fsync, SYNCHRONIZE CACHE, NBD
    /// flush, NFS COMMIT reach the medium as this); `offset` and `len` are 0.
    Flush,
}

/// One data operation arriving at the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaOp {
    /// What it does.
    pub kind: OpKind,
    /// Byte offset in the store.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u32,
    /// A write that must be stable when it completes (the file was opened
    /// O_SYNC/O_DSYNC, or the write carries FUA): with no non-volatile cache
    /// it waits for the devices or the log device.
    pub sync: bool,
}

/// An emulated storage device: when does an operation complete?
///
/// Contract:
/// * `schedule` is called once per operation, in arrival order per caller
///   thread, from many threads at once; it returns at once (it never sleeps)
///   with the time at which the operation completes, in ns on the caller's
///   clock (`now_ns` is the arrival time on that same monotonic clock).
/// * The result is never before `now_ns`. The caller replies to the operation
///   so that its client sees it complete at that time: no earlier than that
///   time less the media server's own round trip and timer lateness, which
///   it measures (`fuse::calibrate`), and never before `now_ns`.
/// * The medium keeps its own state (queues, caches, dirty data) from the
///   sequence of operations it was asked about; it never touches the bytes.
/// * A medium whose every answer is `now_ns` adds nothing: the caller may
///   then serve the store through the kernel's page cache
///   ([`Medium::page_cache`]).
pub trait Medium: Send + Sync {
    /// The preset's name, for status lines and results.
    fn name(&self) -> &str;

    /// When the operation `op`, arriving at `now_ns`, completes.
    fn schedule(&self, op: &MediaOp, now_ns: u64) -> u64;

    /// Return to the initial state: idle devices, empty caches, nothing
    /// dirty. The lab asks for it whenever the store is restored, so every
    /// target of a comparison starts on the same medium (a write-back cache
    /// left full by the previous target would slow the next one down).
    fn reset(&self) {}

    /// What the medium has done since its last reset, as of `now_ns` (the
    /// clock [`Medium::schedule`] is asked on): the work of each of its
    /// FIFO stations, read-cache hits and misses, operations and bytes by
    /// kind, the dirty data ([`stats::Counters`]). `None` for a medium that
    /// models no device (fixed delays, RAM). [`Medium::reset`] clears them.
    fn counters(&self, _now_ns: u64) -> Option<stats::Counters> {
        None
    }

    /// Whether the store may be served through the kernel's page cache (the
    /// `ram` medium: no device to emulate); otherwise every operation must
    /// reach [`Medium::schedule`] (direct I/O).
    fn page_cache(&self) -> bool {
        false
    }
}

/// RAM: every operation completes as it arrives, and the kernel's page cache
/// (which is RAM) may serve the store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ram;

impl Medium for Ram {
    fn name(&self) -> &str {
        "ram"
    }
    fn schedule(&self, _op: &MediaOp, now_ns: u64) -> u64 {
        now_ns
    }
    fn page_cache(&self) -> bool {
        true
    }
}

pub mod dirty;
pub mod fixed;
pub mod fuse;
pub mod model;
pub mod presets;
pub mod serve;
pub mod stats;
