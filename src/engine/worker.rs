//! One engine thread: keeps every worker's outstanding I/Os in flight over one
//! backend, stamps time, records statistics and ships a snapshot per interval.
//!
//! Time is nanoseconds since the run's common start instant `t0`. Interval `k`
//! covers `[k * interval, (k + 1) * interval)`; a completion belongs to the
//! interval in which the engine observed it. The clock is read once per batch
//! of submissions and once per batch of completions, not per I/O: every request
//! of a batch is stamped with the instant just before it was committed, and
//! every completion of a reap with the instant just after the reap returned.

use super::hooks::PointHooks;
use super::timeout::{self, IoWatch};
use crate::io::{BufferPool, Completion, Lane, QueueError};
use crate::plan::{Disk, ThreadPlan};
use crate::stats::{Recorder, Snapshot};
use crate::workload::content;
use crate::workload::pace::{self, Pacer};
use crate::workload::pattern::Generator;
use crate::workload::{Content, Dir};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// How long the engine waits for in-flight I/O after the end of a run before
/// giving up on it.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// What a thread sends to the runner.
#[derive(Debug)]
pub enum Msg {
    /// The thread opened its backend and is ready to start (or failed to).
    Ready {
        /// Thread number.
        thread: usize,
        /// Backend features, or the error that stopped it from opening.
        result: Result<String, String>,
    },
    /// One interval of every worker on a thread.
    Interval {
        /// Thread number.
        thread: usize,
        /// Interval number from 0.
        index: u32,
        /// Nanoseconds since t0 at which this interval's data ends (short for a
        /// final partial interval).
        end_ns: u64,
        /// (worker index over the point, its snapshot)
        workers: Vec<(u32, Snapshot)>,
    },
    /// The thread finished: `Err` names what failed.
    Done {
        /// Thread number.
        thread: usize,
        /// Outcome.
        result: Result<(), String>,
    },
}

/// Timing of one point, shared by every thread.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Interval length in ns.
    pub interval_ns: u64,
    /// Intervals in the run (ramp + measure).
    pub intervals: u32,
}

/// Everything a thread needs besides its backend.
pub struct ThreadCtx<'a> {
    /// Thread number.
    pub thread: usize,
    /// Its workers and disks.
    pub plan: &'a ThreadPlan,
    /// All disks of the plan (for names in errors).
    pub disks: &'a [Disk],
    /// Timing.
    pub timing: Timing,
    /// Per-worker byte limit.
    pub io_limit: Option<u64>,
    /// Content written.
    pub content: Content,
    /// Seed.
    pub seed: u64,
    /// Set to stop the run early (Ctrl-C, another thread's error).
    pub stop: &'a AtomicBool,
    /// Where snapshots go.
    pub tx: Sender<Msg>,
    /// Longest an I/O may be in flight before the run ends with an error
    /// naming it ([`timeout`]); zero: no limit.
    pub io_timeout: Duration,
    /// Hooks on every I/O (verify mode); `None`: none.
    pub hooks: Option<&'a dyn PointHooks>,
}

/// One outstanding-I/O slot.
struct Slot {
    worker: u32,
    /// Index into the worker's disk list (for the generator).
    wdisk: u32,
    /// Index into the thread's disk list (for the backend).
    disk: u32,
    dir: Dir,
    len: u32,
    offset: u64,
    submit_ns: u64,
    /// Scheduled time of an open-loop I/O (its latency origin), else u64::MAX.
    sched_ns: u64,
}

/// Per-worker state on the thread.
struct Worker {
    index: u32,
    pattern: Generator,
    pacer: Pacer,
    rec: Recorder,
    issued_bytes: u64,
    write_seq: u64,
}

/// Build the thread's buffer pool, pre-filled with the content to write.
pub fn make_pool(ctx: &ThreadCtx) -> BufferPool {
    let slots: usize = ctx
        .plan
        .workers
        .iter()
        .map(|w| w.access.iodepth as usize)
        .sum();
    let size = ctx
        .plan
        .workers
        .iter()
        .map(|w| w.access.bs.max() as usize)
        .max()
        .unwrap_or(4096);
    let mut pool = BufferPool::new(slots, size);
    for s in 0..slots {
        content::fill(pool.slice_mut(s), ctx.content, ctx.seed, s as u64);
    }
    pool
}

/// Run the thread's share of the point until the end, `stop`, or an error.
/// Returns `Err` with a message naming the disk and offset on an I/O error.
pub fn run(ctx: &ThreadCtx, lane: &mut Lane, t0: Instant) -> Result<(), String> {
    let now_ns = || t0.elapsed().as_nanos() as u64;
    let mut workers: Vec<Worker> = Vec::with_capacity(ctx.plan.workers.len());
    let mut slots: Vec<Slot> = Vec::new();
    for (wi, w) in ctx.plan.workers.iter().enumerate() {
        let local: Vec<u32> = w
            .disks
            .iter()
            .map(|d| {
                ctx.plan
                    .disks
                    .iter()
                    .position(|x| x == d)
                    .expect("worker disk on its thread") as u32
            })
            .collect();
        workers.push(Worker {
            index: w.index,
            pattern: w.generator(),
            pacer: Pacer::with_mode(w.access.rate, w.access.rate_mode),
            rec: Recorder::new(),
            issued_bytes: 0,
            write_seq: 0,
        });
        for j in 0..w.access.iodepth {
            let wdisk = j % local.len() as u32;
            slots.push(Slot {
                worker: wi as u32,
                wdisk,
                disk: local[wdisk as usize],
                dir: Dir::Read,
                len: 0,
                offset: 0,
                submit_ns: 0,
                sched_ns: u64::MAX,
            });
        }
    }
    let interval_ns = ctx.timing.interval_ns;
    let end_ns = interval_ns.saturating_mul(ctx.timing.intervals as u64);
    let mut free: Vec<u32> = (0..slots.len() as u32).rev().collect();
    let mut waiting: Vec<u32> = Vec::new(); // slots held back by a rate cap
    let mut batch: Vec<u32> = Vec::with_capacity(slots.len());
    let mut done: Vec<Completion> = Vec::with_capacity(slots.len());
    let mut in_flight = 0usize;
    let mut retired = 0usize; // slots whose worker reached its io_limit
    let mut interval = 0u32;
    let mut next_boundary = interval_ns;
    let mut failure: Option<String> = None;
    let mut watch = IoWatch::new(ctx.io_timeout, slots.len());
    let mut timed_out = false;
    let mut verify = ctx.hooks.map(|h| h.thread(&ctx.plan.disks, slots.len()));

    let ship = |workers: &mut Vec<Worker>, index: u32, end: u64| {
        let snaps = workers
            .iter_mut()
            .map(|w| (w.index, w.rec.take()))
            .collect();
        let _ = ctx.tx.send(Msg::Interval {
            thread: ctx.thread,
            index,
            end_ns: end,
            workers: snaps,
        });
    };

    let dedupe = matches!(ctx.content, Content::Mixed { dedupe_pct, .. } if dedupe_pct > 0);
    let mut now = now_ns();
    loop {
        if ctx.stop.load(Ordering::Relaxed)
            || now >= end_ns
            || (retired == slots.len() && in_flight == 0)
        {
            break;
        }
        // Issue every free slot whose worker may go.
        let mut next_due = u64::MAX;
        while let Some(s) = free.pop() {
            let slot = &mut slots[s as usize];
            let w = &mut workers[slot.worker as usize];
            if w.pacer.is_limited() {
                let due = w.pacer.due_ns();
                if due > now {
                    next_due = next_due.min(due);
                    waiting.push(s);
                    continue;
                }
            }
            if let Some(limit) = ctx.io_limit
                && w.issued_bytes >= limit
            {
                retired += 1;
                continue;
            }
            let io = match verify.as_mut() {
                // The hooks may hold a slot back (verify mode: its blocks
                // are busy); it keeps its I/O and retries (super::hooks).
                Some(v) => {
                    match v.next_io(s, slot.disk, &mut || w.pattern.next(slot.wdisk as usize)) {
                        Some(io) => io,
                        None => {
                            next_due = next_due.min(now + v.retry_ns());
                            waiting.push(s);
                            continue;
                        }
                    }
                }
                None => w.pattern.next(slot.wdisk as usize),
            };
            if io.dir == Dir::Write {
                w.write_seq += 1;
                // The slot is not in flight, so its buffer is ours to change.
                let data = &mut lane.buf_mut(s)[..io.len as usize];
                if let Some(v) = verify.as_mut() {
                    v.prepare_write(s, data, w.index);
                } else if dedupe {
                    // A stamp would make every block unique; refill so the
                    // dedupable share repeats the canonical block.
                    content::fill(
                        data,
                        ctx.content,
                        ctx.seed,
                        w.write_seq ^ ((w.index as u64) << 40),
                    );
                } else {
                    content::stamp(data, ctx.content, w.write_seq);
                }
            }
            match lane.queue(s, slot.disk, io.dir, io.offset, io.len) {
                Ok(()) => {
                    slot.dir = io.dir;
                    slot.len = io.len;
                    slot.offset = io.offset;
                    w.issued_bytes += io.len as u64;
                    slot.sched_ns = w.pacer.issued(io.len, now);
                    batch.push(s);
                }
                Err(QueueError::Busy) => {
                    if let Some(v) = verify.as_mut() {
                        v.unqueued(s);
                    }
                    free.push(s);
                    break;
                }
                Err(QueueError::Fatal(e)) => {
                    if let Some(v) = verify.as_mut() {
                        v.unqueued(s);
                    }
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        free.append(&mut waiting);
        if failure.is_some() {
            break;
        }
        if !batch.is_empty() {
            let t = now_ns();
            for &s in &batch {
                slots[s as usize].submit_ns = t;
                watch.submitted(s, t);
            }
            in_flight += batch.len();
            batch.clear();
            if let Err(e) = lane.commit() {
                failure = Some(e.to_string());
                break;
            }
        }
        // Wait for completions, but never past the next interval boundary, the
        // end, or the next rate-capped issue time.
        let wake = next_boundary.min(end_ns).min(next_due);
        let (min, timeout) = if in_flight > 0 {
            let wake = wake.min(watch.wake());
            (
                1,
                Some(Duration::from_nanos(wake.saturating_sub(now).max(1))),
            )
        } else if retired == slots.len() {
            break;
        } else {
            std::thread::sleep(Duration::from_nanos(
                wake.saturating_sub(now_ns()).min(50_000_000),
            ));
            now = now_ns();
            let before = interval;
            while now >= next_boundary && interval < ctx.timing.intervals {
                ship(&mut workers, interval, next_boundary);
                interval += 1;
                next_boundary += interval_ns;
            }
            if interval != before
                && let Err(e) = lane.check()
            {
                failure = Some(e.to_string());
                break;
            }
            continue;
        };
        if let Err(e) = lane.reap(min, timeout, &mut done) {
            failure = Some(e.to_string());
            break;
        }
        now = now_ns();
        let before = interval;
        while now >= next_boundary && interval < ctx.timing.intervals {
            ship(&mut workers, interval, next_boundary);
            interval += 1;
            next_boundary += interval_ns;
        }
        if interval != before
            && failure.is_none()
            && let Err(e) = lane.check()
        {
            failure = Some(e.to_string());
        }
        for c in done.drain(..) {
            in_flight -= 1;
            watch.completed(c.slot);
            let slot = &slots[c.slot as usize];
            let w = &mut workers[slot.worker as usize];
            match c.result {
                Ok(n) if n == slot.len => {
                    let origin = pace::latency_origin(slot.submit_ns, slot.sched_ns);
                    w.rec.record(slot.dir, n as u64, now - origin)
                }
                other => {
                    w.rec.record_error(slot.dir);
                    if failure.is_none() {
                        let mut m = io_error_message(ctx, slot, other);
                        if let Some(detail) = lane.backend().error_detail() {
                            m = format!("{m} [{detail}]");
                        }
                        failure = Some(m);
                    }
                }
            }
            if let Some(v) = verify.as_mut() {
                let ok = matches!(c.result, Ok(n) if n == slot.len);
                let data = &lane.buf(c.slot)[..slot.len as usize];
                w.rec.record_verify_errors(v.completed(c.slot, ok, data));
            }
            free.push(c.slot);
        }
        if failure.is_none()
            && let Some(s) = watch.overdue(now)
        {
            let slot = &slots[s as usize];
            let disk = &ctx.disks[ctx.plan.disks[slot.disk as usize] as usize];
            let (name, limit) = (disk.name(), watch.limit());
            let mut m = timeout::message(slot.dir, slot.len, slot.offset, &name, limit);
            // What the backend saw go wrong may explain the silence (an NFS
            // server answering with wrong XIDs).
            if let Some(detail) = lane.backend().error_detail() {
                m = format!("{m} [{detail}]");
            }
            failure = Some(m);
            timed_out = true;
        }
        if failure.is_some() {
            break;
        }
    }
    // Ship what the last (possibly partial) interval holds; then drain.
    if interval < ctx.timing.intervals {
        let end = now.min(next_boundary);
        ship(&mut workers, interval, end);
    }
    let drain = watch.drain_limit(DRAIN_TIMEOUT);
    let drain_deadline = Instant::now() + drain;
    while in_flight > 0 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || timed_out {
            // What the storage never answered is given up, not waited for.
            lane.abandon();
            let target = ctx.disks[ctx.plan.disks[0] as usize].name();
            let msg = format!(
                "{in_flight} I/Os on {target} still in flight {drain:?} after the run ended"
            );
            return Err(failure.unwrap_or(msg));
        }
        match lane.reap(in_flight, Some(left), &mut done) {
            Ok(_) => {
                for c in done.drain(..) {
                    in_flight -= 1;
                    if let Some(v) = verify.as_mut() {
                        let len = slots[c.slot as usize].len as usize;
                        let ok = matches!(c.result, Ok(n) if n as usize == len);
                        v.completed(c.slot, ok, &lane.buf(c.slot)[..len]);
                    }
                }
            }
            Err(e) => return Err(failure.unwrap_or_else(|| e.to_string())),
        }
    }
    let bad = verify.as_mut().and_then(|v| v.finish());
    match (failure, bad) {
        (Some(f), Some(b)) => Err(format!("{f}; {b}")),
        (Some(f), None) | (None, Some(f)) => Err(f),
        (None, None) => Ok(()),
    }
}

fn io_error_message(ctx: &ThreadCtx, slot: &Slot, result: Result<u32, i32>) -> String {
    let disk = &ctx.disks[ctx.plan.disks[slot.disk as usize] as usize];
    let what = match slot.dir {
        Dir::Read => "read",
        Dir::Write => "write",
    };
    let cause = match result {
        Err(errno) => std::io::Error::from_raw_os_error(errno).to_string(),
        Ok(n) => format!("short {what}: {n} of {} bytes", slot.len),
    };
    format!(
        "I/O error on {} at offset {} ({what} of {} bytes): {cause}",
        disk.name(),
        slot.offset,
        slot.len
    )
}
