//! One engine thread: keeps every worker's outstanding I/Os in flight over one
//! backend, stamps time, records statistics and ships a snapshot per interval.
//!
//! Time is nanoseconds since the run's common start instant `t0`. Interval `k`
//! covers `[k * interval, (k + 1) * interval)`; a completion belongs to the
//! interval in which the engine observed it. The clock is read once per batch
//! of submissions and once per batch of completions, not per I/O: every request
//! of a batch is stamped with the instant just before it was committed, and
//! every completion of a reap with the instant just after the reap returned.

use super::hooks::{PointHooks, ThreadHooks};
use super::replay::{Due, Feed};
use super::timeout::{self, IoWatch};
use crate::io::{BufferPool, Completion, Lane, QueueError, Wait};
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

/// How close to a replayed I/O's due time the engine stops sleeping and
/// spins, when nothing is in flight to wake it (its sleeps end within a µs
/// of when asked: [`super::replay::precise_sleeps`]).
const REPLAY_SPIN_NS: u64 = 50_000;

/// What a thread sends to the runner.
#[derive(Debug)]
pub enum Msg {
    /// The thread opened its backend and is ready to start (or failed to).
    Ready {
        /// Thread number.
        thread: usize,
        /// Backend features, or the error that stopped it from opening.
        result: Result<String, String>,
        /// What the storage says each of the thread's disks is (plan disk
        /// index, [`crate::io::Backend::identity`]), where it says.
        identities: Vec<(u32, String)>,
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
    /// The trace every worker replays instead of its access pattern
    /// ([`super::replay`]); `None`: none.
    pub replay: Option<&'a crate::workload::replay::Replay>,
}

#[cfg(test)]
impl<'a> ThreadCtx<'a> {
    /// Thread 0 of `plan` with 100 ms intervals, no byte limit, seed 1 and no
    /// hooks, for the engine's tests.
    pub(crate) fn for_test(
        plan: &'a crate::plan::Plan,
        content: Content,
        stop: &'a AtomicBool,
        tx: Sender<Msg>,
        intervals: u32,
        io_timeout: Duration,
    ) -> ThreadCtx<'a> {
        ThreadCtx {
            thread: 0,
            plan: &plan.threads[0],
            disks: &plan.disks,
            timing: Timing {
                interval_ns: 100_000_000,
                intervals,
            },
            io_limit: None,
            content,
            seed: 1,
            stop,
            tx,
            io_timeout,
            hooks: None,
            replay: None,
        }
    }
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
    /// Its I/Os in flight (a burst ends when they have all completed).
    in_flight: u32,
    /// The pause between bursts, if any, and where it stands.
    think: Option<Thinking>,
    /// The trace it replays instead of its pattern, if any.
    feed: Option<Feed>,
}

/// A worker's bursts and pauses ([`crate::workload::Think`]), ns.
struct Thinking {
    blocks: u32,
    time_ns: u64,
    spin_ns: u64,
    /// I/Os left to issue in this burst.
    left: u32,
    /// When the pause under way began (`None`: none under way).
    since: Option<u64>,
}

impl Thinking {
    fn new(t: &crate::workload::Think) -> Self {
        Thinking {
            blocks: t.blocks.max(1),
            time_ns: t.time.as_nanos() as u64,
            spin_ns: t.spin.min(t.time).as_nanos() as u64,
            left: t.blocks.max(1),
            since: None,
        }
    }

    /// Whether the worker may issue at `now`: inside a burst, or once its
    /// burst has completed and the pause after it is over. `Err(due)`: not
    /// before `due` (`u64::MAX`: when its I/O in flight completes).
    fn may_issue(&mut self, in_flight: u32, now: u64) -> Result<(), u64> {
        if self.left > 0 {
            return Ok(());
        }
        if in_flight > 0 {
            return Err(u64::MAX);
        }
        let until = *self.since.get_or_insert(now) + self.time_ns;
        if now < until {
            return Err(until);
        }
        self.since = None;
        self.left = self.blocks;
        Ok(())
    }

    /// Until when the pause under way spins (`None`: no pause under way).
    fn spin_until(&self) -> Option<u64> {
        self.since.map(|t| t + self.spin_ns)
    }
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

/// How many queued requests the engine commits at once on thread `plan`
/// (it also commits at the end of each refill): the workers'
/// `submit_batch` (the smallest set), else 1 where the backend asks for
/// each request ([`crate::io::Backend::commit_each`]), else `usize::MAX`
/// (one commit per refill).
pub fn commit_every(plan: &ThreadPlan, backend_asks_each: bool) -> usize {
    let asked = (plan.workers.iter())
        .map(|w| w.access.submit_batch as usize)
        .filter(|&n| n > 0)
        .min();
    match asked {
        Some(n) => n,
        None if backend_asks_each => 1,
        None => usize::MAX,
    }
}

/// [`commit_every`] in words, for the run's backend line; `None` for one
/// commit per refill.
pub fn submit_rhythm(every: usize) -> Option<String> {
    match every {
        1 => Some("each request submitted as queued".into()),
        usize::MAX => None,
        n => Some(format!("{n} requests per submit")),
    }
}

/// Run the thread's share of the point until the end, `stop`, or an error.
/// Returns `Err` with a message naming the disk and offset on an I/O error.
pub fn run(ctx: &ThreadCtx, lane: &mut Lane, t0: Instant) -> Result<(), String> {
    let mut engine = Engine::new(ctx, t0)?;
    let now = engine.run_until_end(lane);
    engine.ship_last(now);
    engine.drain(lane)?;
    engine.finish()
}

/// One thread's state while it runs a point: its workers, their slots, the
/// slots' queues, the interval it is in and the first failure.
struct Engine<'c, 'a> {
    ctx: &'c ThreadCtx<'a>,
    t0: Instant,
    workers: Vec<Worker>,
    slots: Vec<Slot>,
    /// End of the run, ns since t0.
    end_ns: u64,
    free: Vec<u32>,
    /// Slots held back by a rate cap or the hooks.
    waiting: Vec<u32>,
    /// Slots queued since the last commit.
    batch: Vec<u32>,
    /// Commit (and stamp) the queued requests once this many are queued
    /// (and at the end of each refill): the workers' `submit_batch` (the
    /// smallest set), else 1 where the backend asks for each request
    /// ([`crate::io::Backend::commit_each`]), else never before the refill's
    /// end. Set from the lane at the start of the run.
    commit_every: usize,
    done: Vec<Completion>,
    in_flight: usize,
    /// Completions to wait for before refilling (the smallest
    /// `batch_complete_min` of the thread's workers; at most what is in flight).
    batch_min: usize,
    /// Slots whose worker reached its io_limit.
    retired: usize,
    interval: u32,
    next_boundary: u64,
    failure: Option<String>,
    watch: IoWatch,
    timed_out: bool,
    verify: Option<Box<dyn ThreadHooks + 'a>>,
    /// Whether writes are refilled (dedupable content) rather than stamped.
    dedupe: bool,
}

impl<'c, 'a> Engine<'c, 'a> {
    /// Set-up: one `Worker` per worker of the thread and one slot per
    /// outstanding I/O, each slot on one of its worker's disks in turn (a
    /// replaying worker's slots take each I/O's disk from the trace). `Err`:
    /// the trace to replay cannot be opened.
    fn new(ctx: &'c ThreadCtx<'a>, t0: Instant) -> Result<Self, String> {
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
            let feed = match ctx.replay {
                Some(r) => Some(Feed::open(
                    r,
                    local.iter().copied().zip(w.bases.iter().copied()).collect(),
                )?),
                None => None,
            };
            workers.push(Worker {
                index: w.index,
                pattern: w.generator(),
                pacer: Pacer::with_mode(w.access.rate, w.access.rate_mode),
                rec: Recorder::new(),
                issued_bytes: 0,
                write_seq: 0,
                in_flight: 0,
                think: w.access.think.as_ref().map(Thinking::new),
                feed,
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
        if ctx.replay.is_some() {
            super::replay::precise_sleeps();
        }
        let interval_ns = ctx.timing.interval_ns;
        let n = slots.len();
        Ok(Engine {
            ctx,
            t0,
            workers,
            end_ns: interval_ns.saturating_mul(ctx.timing.intervals as u64),
            free: (0..n as u32).rev().collect(),
            waiting: Vec::new(),
            batch: Vec::with_capacity(n),
            commit_every: usize::MAX,
            done: Vec::with_capacity(n),
            in_flight: 0,
            batch_min: ctx
                .plan
                .workers
                .iter()
                .map(|w| w.access.batch_complete_min as usize)
                .min()
                .unwrap_or(1)
                .max(1),
            retired: 0,
            interval: 0,
            next_boundary: interval_ns,
            failure: None,
            watch: IoWatch::new(ctx.io_timeout, n),
            timed_out: false,
            verify: ctx.hooks.map(|h| h.thread(&ctx.plan.disks, n)),
            dedupe: matches!(ctx.content, Content::Mixed { dedupe_pct, .. } if dedupe_pct > 0),
            slots,
        })
    }

    fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// The main loop: issue, commit, wait, complete, until the end, `stop`,
    /// every worker's io_limit, or a failure. Returns the last clock reading.
    fn run_until_end(&mut self, lane: &mut Lane) -> u64 {
        self.commit_every = commit_every(self.ctx.plan, lane.commit_each());
        let mut now = self.now_ns();
        loop {
            if self.ctx.stop.load(Ordering::Relaxed)
                || now >= self.end_ns
                || (self.retired == self.slots.len() && self.in_flight == 0)
            {
                break;
            }
            let next_due = self.issue(lane, now);
            if self.failure.is_some() {
                break;
            }
            self.commit(lane);
            if self.failure.is_some() {
                break;
            }
            // Wait for completions, but never past the next interval boundary,
            // the end, or the next rate-capped issue time.
            let wake = self.next_boundary.min(self.end_ns).min(next_due);
            if self.in_flight == 0 {
                if self.retired == self.slots.len() {
                    break;
                }
                // A pause's spun share (thinktime_spin) burns the CPU, as
                // fio's does; the rest is slept.
                let mut spin = (self.workers.iter())
                    .filter_map(|w| w.think.as_ref().and_then(Thinking::spin_until))
                    .max()
                    .unwrap_or(0)
                    .min(wake);
                // A sleep still overshoots by a few µs: a trace's next due
                // time is slept to within REPLAY_SPIN_NS of it, then spun.
                let mut sleep_until = wake;
                if self.workers.iter().any(|w| w.feed.is_some()) {
                    sleep_until = wake.saturating_sub(REPLAY_SPIN_NS);
                    if now >= sleep_until {
                        spin = wake;
                    }
                }
                while self.now_ns() < spin {
                    std::hint::spin_loop();
                }
                std::thread::sleep(Duration::from_nanos(
                    sleep_until.saturating_sub(self.now_ns()).min(50_000_000),
                ));
                now = self.now_ns();
                self.close_intervals(lane, now);
                if self.failure.is_some() {
                    break;
                }
                continue;
            }
            let wake = wake.min(self.watch.wake());
            let timeout = Duration::from_nanos(wake.saturating_sub(now).max(1));
            let want = self.batch_min.min(self.in_flight).max(1);
            if let Err(e) = lane.reap(Wait::at_least(want).or_after(timeout), &mut self.done) {
                self.failure = Some(e.to_string());
                break;
            }
            now = self.now_ns();
            self.close_intervals(lane, now);
            self.complete(lane, now);
            if self.failure.is_none() {
                self.check_overdue(lane, now);
            }
            if self.failure.is_some() {
                break;
            }
        }
        now
    }

    /// The submit loop: queue every free slot whose worker may go. Returns
    /// the earliest instant a held-back slot may go (`u64::MAX`: none).
    fn issue(&mut self, lane: &mut Lane, now: u64) -> u64 {
        let mut next_due = u64::MAX;
        while let Some(s) = self.free.pop() {
            let slot = &mut self.slots[s as usize];
            let w = &mut self.workers[slot.worker as usize];
            // A replayed trace: its next I/O once it is due (open loop: the
            // trace's time, whatever the target did), on the trace's disk.
            let mut due: Option<Due> = None;
            if let Some(feed) = w.feed.as_mut() {
                match feed.peek() {
                    Err(e) => {
                        self.failure = Some(e);
                        self.free.push(s);
                        break;
                    }
                    Ok(None) => {
                        self.retired += 1;
                        continue;
                    }
                    Ok(Some(d)) if d.due_ns > now => {
                        next_due = next_due.min(d.due_ns);
                        self.waiting.push(s);
                        continue;
                    }
                    Ok(Some(d)) => due = Some(d),
                }
            }
            if let Some(t) = w.think.as_mut()
                && let Err(due) = t.may_issue(w.in_flight, now)
            {
                next_due = next_due.min(due);
                self.waiting.push(s);
                continue;
            }
            if w.pacer.is_limited() {
                let due = w.pacer.due_ns();
                if due > now {
                    next_due = next_due.min(due);
                    self.waiting.push(s);
                    continue;
                }
            }
            if let Some(limit) = self.ctx.io_limit
                && w.issued_bytes >= limit
            {
                self.retired += 1;
                continue;
            }
            let io = match (due, self.verify.as_mut()) {
                (Some(d), _) => d.io,
                // The hooks may hold a slot back (verify mode: its blocks
                // are busy); it keeps its I/O and retries (super::hooks).
                (None, Some(v)) => {
                    match v.next_io(s, slot.disk, &mut || w.pattern.next(slot.wdisk as usize)) {
                        Some(io) => io,
                        None => {
                            next_due = next_due.min(now + v.retry_ns());
                            self.waiting.push(s);
                            continue;
                        }
                    }
                }
                (None, None) => w.pattern.next(slot.wdisk as usize),
            };
            let disk = due.map_or(slot.disk, |d| d.disk);
            if io.dir == Dir::Write {
                w.write_seq += 1;
                // The slot is not in flight, so its buffer is ours to change.
                let data = &mut lane.buf_mut(s)[..io.len as usize];
                if let Some(v) = self.verify.as_mut() {
                    v.prepare_write(s, data, w.index);
                } else if self.dedupe {
                    // A stamp would make every block unique; refill so the
                    // dedupable share repeats the canonical block.
                    content::fill(
                        data,
                        self.ctx.content,
                        self.ctx.seed,
                        w.write_seq ^ ((w.index as u64) << 40),
                    );
                } else {
                    content::stamp(data, self.ctx.content, w.write_seq);
                }
            }
            match lane.queue(s, disk, io.dir, io.offset, io.len) {
                Ok(()) => {
                    slot.disk = disk;
                    slot.dir = io.dir;
                    slot.len = io.len;
                    slot.offset = io.offset;
                    w.issued_bytes += io.len as u64;
                    w.in_flight += 1;
                    if let Some(t) = w.think.as_mut() {
                        t.left -= 1;
                    }
                    slot.sched_ns = match (due, w.feed.as_mut()) {
                        (Some(d), Some(feed)) => {
                            feed.take();
                            d.due_ns
                        }
                        _ => w.pacer.issued(io.len, now),
                    };
                    self.batch.push(s);
                    if self.batch.len() >= self.commit_every {
                        self.commit(lane);
                        if self.failure.is_some() {
                            break;
                        }
                    }
                }
                Err(e) => {
                    if let Some(v) = self.verify.as_mut() {
                        v.unqueued(s);
                    }
                    match e {
                        QueueError::Busy => self.free.push(s),
                        QueueError::Fatal(e) => self.failure = Some(e.to_string()),
                    }
                    break;
                }
            }
        }
        self.free.append(&mut self.waiting);
        next_due
    }

    /// Stamp the batch queued since the last commit with one clock reading
    /// and commit it.
    fn commit(&mut self, lane: &mut Lane) {
        if self.batch.is_empty() {
            return;
        }
        let t = self.now_ns();
        for &s in &self.batch {
            let slot = &mut self.slots[s as usize];
            slot.submit_ns = t;
            self.watch.submitted(s, t);
            let w = &mut self.workers[slot.worker as usize];
            if w.feed.is_some() {
                w.rec.record_issue_lag(t.saturating_sub(slot.sched_ns));
            }
        }
        self.in_flight += self.batch.len();
        self.batch.clear();
        if let Err(e) = lane.commit() {
            self.failure = Some(e.to_string());
        }
    }

    /// Ship every interval that ended by `now`; once any did, ask the
    /// backend whether its storage is still there.
    fn close_intervals(&mut self, lane: &mut Lane, now: u64) {
        let before = self.interval;
        while now >= self.next_boundary && self.interval < self.ctx.timing.intervals {
            self.ship(self.interval, self.next_boundary);
            self.interval += 1;
            self.next_boundary += self.ctx.timing.interval_ns;
        }
        if self.interval != before
            && self.failure.is_none()
            && let Err(e) = lane.check()
        {
            self.failure = Some(e.to_string());
        }
        if self.interval != before {
            self.record_outages(lane);
        }
    }

    /// The outages the backend rode through since it was last asked,
    /// counted on the thread's first worker (they are the connection's, not
    /// one worker's) and told on stderr.
    fn record_outages(&mut self, lane: &mut Lane) {
        let mut outages = Vec::new();
        lane.take_outages(&mut outages);
        for o in outages {
            let took = o.back.saturating_duration_since(o.lost);
            eprintln!(
                "storlab: {}: connection lost ({}); back after {:.2} s, {} request(s) sent again",
                o.target,
                o.why,
                took.as_secs_f64(),
                o.retried
            );
            if let Some(w) = self.workers.first_mut() {
                w.rec
                    .record_outage(took.as_nanos() as u64, u64::from(o.retried));
            }
        }
    }

    /// Send interval `index`, ending at `end` ns, of every worker.
    fn ship(&mut self, index: u32, end: u64) {
        let snaps = self
            .workers
            .iter_mut()
            .map(|w| (w.index, w.rec.take()))
            .collect();
        let _ = self.ctx.tx.send(Msg::Interval {
            thread: self.ctx.thread,
            index,
            end_ns: end,
            workers: snaps,
        });
    }

    /// Completion handling: record each reaped I/O observed at `now` (or
    /// its error, the first of which fails the run) and free its slot.
    fn complete(&mut self, lane: &Lane, now: u64) {
        for c in self.done.drain(..) {
            self.in_flight -= 1;
            self.watch.completed(c.slot);
            let slot = &self.slots[c.slot as usize];
            let w = &mut self.workers[slot.worker as usize];
            w.in_flight -= 1;
            match c.result {
                Ok(n) if n == slot.len => {
                    let origin = pace::latency_origin(slot.submit_ns, slot.sched_ns);
                    w.rec.record(slot.dir, n as u64, now - origin)
                }
                other => {
                    w.rec.record_error(slot.dir);
                    if self.failure.is_none() {
                        let m = io_error_message(self.ctx, slot, other);
                        self.failure = Some(with_detail(lane, m));
                    }
                }
            }
            if let Some(v) = self.verify.as_mut() {
                let ok = matches!(c.result, Ok(n) if n == slot.len);
                let data = &lane.buf(c.slot)[..slot.len as usize];
                w.rec.record_verify_errors(v.completed(c.slot, ok, data));
            }
            self.free.push(c.slot);
        }
    }

    /// Fail the run, naming the I/O, once the oldest in flight is older
    /// than the per-I/O timeout.
    fn check_overdue(&mut self, lane: &Lane, now: u64) {
        if let Some(s) = self.watch.overdue(now) {
            let slot = &self.slots[s as usize];
            let ctx = self.ctx;
            let disk = &ctx.disks[ctx.plan.disks[slot.disk as usize] as usize];
            let (name, limit) = (disk.name(), self.watch.limit());
            let m = timeout::message(slot.dir, slot.len, slot.offset, &name, limit);
            // What the backend saw go wrong may explain the silence (an NFS
            // server answering with wrong XIDs).
            self.failure = Some(with_detail(lane, m));
            self.timed_out = true;
        }
    }

    /// Ship what the last (possibly partial) interval holds.
    fn ship_last(&mut self, now: u64) {
        if self.interval < self.ctx.timing.intervals {
            let end = now.min(self.next_boundary);
            self.ship(self.interval, end);
        }
    }

    /// The tail: wait for the I/O still in flight (handing it to the hooks),
    /// up to the drain limit; what the storage never answers is abandoned.
    fn drain(&mut self, lane: &mut Lane) -> Result<(), String> {
        let drain = self.watch.drain_limit(DRAIN_TIMEOUT);
        let drain_deadline = Instant::now() + drain;
        while self.in_flight > 0 {
            let left = drain_deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.timed_out {
                // What the storage never answered is given up, not waited for.
                lane.abandon();
                let ctx = self.ctx;
                let target = ctx.disks[ctx.plan.disks[0] as usize].name();
                let in_flight = self.in_flight;
                let msg = format!(
                    "{in_flight} I/Os on {target} still in flight {drain:?} after the run ended"
                );
                return Err(self.failure.take().unwrap_or(msg));
            }
            let wait = Wait::at_least(self.in_flight).or_after(left);
            if let Err(e) = lane.reap(wait, &mut self.done) {
                return Err(self.failure.take().unwrap_or_else(|| e.to_string()));
            }
            for c in self.done.drain(..) {
                self.in_flight -= 1;
                if let Some(v) = self.verify.as_mut() {
                    let len = self.slots[c.slot as usize].len as usize;
                    let ok = matches!(c.result, Ok(n) if n as usize == len);
                    v.completed(c.slot, ok, &lane.buf(c.slot)[..len]);
                }
            }
        }
        Ok(())
    }

    /// The outcome: the first failure and what the hooks found, if either.
    fn finish(mut self) -> Result<(), String> {
        let bad = self.verify.as_mut().and_then(|v| v.finish());
        match (self.failure, bad) {
            (Some(f), Some(b)) => Err(format!("{f}; {b}")),
            (Some(f), None) | (None, Some(f)) => Err(f),
            (None, None) => Ok(()),
        }
    }
}

/// `m` with the protocol detail the backend has on what went wrong, if any.
fn with_detail(lane: &Lane, m: String) -> String {
    match lane.backend().error_detail() {
        Some(detail) => format!("{m} [{detail}]"),
        None => m,
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
