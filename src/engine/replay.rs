//! A trace replay's feed on its engine thread: the trace's next I/O, where it
//! goes and when it is due, read from the trace as the engine needs it (one
//! I/O ahead, so memory does not grow with the trace).
//!
//! Device `k` of the trace (in order of first appearance) is the worker's
//! disk `k`: the plan put it on target `k % targets`, in its own slice of a
//! single target unless `disk_layout = shared`. An I/O at trace offset `o`
//! goes to `o` past the start of its disk's region.

use crate::workload::pattern::Io;
use crate::workload::replay::{Reader, Replay, TraceIo};

/// The trace's next I/O: what it is, its thread-local disk and its due time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// The I/O, at its absolute offset on the disk.
    pub io: Io,
    /// The thread-local disk it goes to.
    pub disk: u32,
    /// When it is due, ns since the run's start.
    pub due_ns: u64,
}

/// Let this thread's sleeps end within a microsecond of when they were asked
/// to (the kernel's timer slack, 50 µs by default, lets it wake a sleeper up
/// to that late to batch wake-ups): a replaying engine thread then sleeps to
/// just before an I/O's due time instead of spinning the last 50 µs, which
/// on a busy machine costs it the CPU it needs to be on time. Best effort: a
/// kernel that refuses leaves the default.
pub fn precise_sleeps() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and touches no
    // memory of ours; it changes only the calling thread's timer slack.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// One worker's trace, read one I/O ahead.
pub struct Feed {
    reader: Reader,
    replay: Replay,
    /// Per trace device: its thread-local disk and its region's start.
    disks: Vec<(u32, u64)>,
    next: Option<Due>,
    ended: bool,
}

impl Feed {
    /// Open `replay`'s trace for a worker whose disk `k` is the thread-local
    /// disk `disks[k].0` with its region at `disks[k].1`.
    pub fn open(replay: &Replay, disks: Vec<(u32, u64)>) -> Result<Feed, String> {
        Ok(Feed {
            reader: Reader::open(&replay.path).map_err(|e| e.to_string())?,
            replay: replay.clone(),
            disks,
            next: None,
            ended: false,
        })
    }

    /// The next I/O, without taking it; `None` once the trace has ended.
    /// `Err` names the trace line that could not be read.
    pub fn peek(&mut self) -> Result<Option<Due>, String> {
        if self.next.is_none() && !self.ended {
            match self.reader.next_io().map_err(|e| e.to_string())? {
                Some(t) => self.next = Some(self.place(t)?),
                None => self.ended = true,
            }
        }
        Ok(self.next)
    }

    /// The I/O [`Feed::peek`] gave was queued: the next one is the trace's next.
    pub fn take(&mut self) {
        self.next = None;
    }

    /// Where and when `t` goes. A trace that changed since it was read
    /// before the run (a device or an I/O larger than the buffers then) is
    /// an error naming it.
    fn place(&self, t: TraceIo) -> Result<Due, String> {
        if t.len > self.replay.shape.max_len {
            return Err(format!(
                "{}: an I/O of {} bytes, larger than the largest ({} bytes) when storlab read the trace before the run",
                self.replay.path.display(),
                t.len,
                self.replay.shape.max_len
            ));
        }
        let &(disk, base) = self.disks.get(t.device as usize).ok_or_else(|| {
            format!(
                "{}: device {:?} was not in the trace when storlab read it before the run",
                self.replay.path.display(),
                self.reader
                    .devices()
                    .get(t.device as usize)
                    .cloned()
                    .unwrap_or_default()
            )
        })?;
        Ok(Due {
            io: Io {
                dir: t.dir,
                offset: base + t.offset,
                len: t.len,
            },
            disk,
            due_ns: self.replay.due_ns(t.at_ns),
        })
    }
}
