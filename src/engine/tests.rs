//! The engine's submission rhythm against a backend that says how it wants
//! its requests committed.

use crate::backends::null::NullBackend;
use crate::engine::worker::{self, ThreadCtx};
use crate::io::{Backend, BackendError, Completion, Lane, QueueError, Request, Wait};
use crate::plan::{self, TargetKind};
use crate::target::Target;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The null backend, counting the requests queued between two commits.
struct Counting {
    inner: NullBackend,
    each: bool,
    since_commit: usize,
    /// The most requests one commit started.
    most: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
}

// SAFETY: Counting hands every request to the null backend, which never
// touches a buffer, and keeps only counts.
unsafe impl Backend for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn depth(&self) -> usize {
        self.inner.depth()
    }
    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        self.inner.queue(req)?;
        self.since_commit += 1;
        Ok(())
    }
    fn commit(&mut self) -> Result<(), BackendError> {
        self.most.fetch_max(self.since_commit, Ordering::Relaxed);
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.since_commit = 0;
        self.inner.commit()
    }
    fn commit_each(&self) -> bool {
        self.each
    }
    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        self.inner.reap(wait, out)
    }
}

/// Runs 8 slots for 200 ms, with the workload's `submit_batch` (0: unset);
/// returns (the most requests one commit started, commits).
fn rhythm(each: bool, submit_batch: u32) -> (usize, usize) {
    let mut spec = crate::workload::test_spec(1, 1, 1);
    spec.groups[0].access.iodepth = 8;
    spec.groups[0].access.submit_batch = submit_batch;
    let plan = plan::build(&spec, &[(Target::Null, TargetKind::Single)], 1);
    let stop = AtomicBool::new(false);
    let (tx, _rx) = mpsc::channel();
    let ctx = ThreadCtx::for_test(&plan, spec.content, &stop, tx, 2, Duration::ZERO);
    let (most, commits) = (Arc::default(), Arc::default());
    let b: Box<dyn Backend> = Box::new(Counting {
        inner: NullBackend::new(8),
        each,
        since_commit: 0,
        most: Arc::clone(&most),
        commits: Arc::clone(&commits),
    });
    let mut lane = Lane::new(b, worker::make_pool(&ctx)).unwrap();
    worker::run(&ctx, &mut lane, Instant::now()).unwrap();
    (
        most.load(Ordering::Relaxed),
        commits.load(Ordering::Relaxed),
    )
}

/// A backend that asks for it gets each request committed (and so stamped)
/// alone; any other gets a refill's requests in one commit.
#[test]
fn each_request_is_committed_alone_only_when_the_backend_asks() {
    let (most, commits) = rhythm(true, 0);
    assert_eq!(most, 1, "commit_each: one request per commit");
    assert!(commits > 100, "the run went on: {commits} commits");
    let (most, commits) = rhythm(false, 0);
    assert_eq!(most, 8, "a refill of all 8 slots in one commit");
    assert!(commits > 100, "the run went on: {commits} commits");
}

/// The workload's `iodepth_batch_submit` decides over the backend's wish:
/// a commit once that many are queued (and at the refill's end).
#[test]
fn the_workloads_submit_batch_sets_the_commit_size_whatever_the_backend_asks() {
    for (each, n) in [(false, 3), (false, 1), (true, 4), (true, 8)] {
        let (most, commits) = rhythm(each, n);
        assert_eq!(
            most, n as usize,
            "submit_batch {n}, backend asks each: {each}"
        );
        assert!(commits > 100, "the run went on: {commits} commits");
    }
}

/// The run's backend line names the rhythm the engine submits in.
#[test]
fn the_submit_rhythm_is_named_for_the_backend_line() {
    let named = |n| worker::submit_rhythm(n);
    assert_eq!(
        named(1).as_deref(),
        Some("each request submitted as queued")
    );
    assert_eq!(named(8).as_deref(), Some("8 requests per submit"));
    assert_eq!(named(usize::MAX), None);
    let null: Box<dyn Backend> = Box::new(NullBackend::new(8));
    assert_eq!(
        crate::backends::describe(null.as_ref(), named(usize::MAX)),
        "null"
    );
    assert_eq!(
        crate::backends::describe(null.as_ref(), named(4)),
        "null: 4 requests per submit"
    );
}

/// The null backend, noting when each request was queued and how many of
/// the worker's were in flight then.
struct Timed {
    inner: NullBackend,
    in_flight: usize,
    queued: Arc<std::sync::Mutex<Vec<(Instant, usize)>>>,
}

// SAFETY: Timed hands every request to the null backend, which never
// touches a buffer, and keeps only times and counts.
unsafe impl Backend for Timed {
    fn name(&self) -> &'static str {
        "timed"
    }
    fn depth(&self) -> usize {
        self.inner.depth()
    }
    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        self.inner.queue(req)?;
        self.queued
            .lock()
            .unwrap()
            .push((Instant::now(), self.in_flight));
        self.in_flight += 1;
        Ok(())
    }
    fn commit(&mut self) -> Result<(), BackendError> {
        self.inner.commit()
    }
    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        let n = self.inner.reap(wait, out)?;
        self.in_flight -= n;
        Ok(n)
    }
}

/// This thread's CPU time so far (user + system), from /proc.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after
        .split(' ')
        .skip(11)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    // USER_HZ is 100 on Linux.
    Duration::from_millis((f[0] + f[1]) * 10)
}

/// Runs one worker at iodepth 8 with `think` for 400 ms; when each request
/// was queued and with how many in flight, and the thread's CPU time.
fn think_run(think: crate::workload::Think) -> (Vec<(Instant, usize)>, Duration) {
    let mut spec = crate::workload::test_spec(1, 1, 1);
    spec.groups[0].access.iodepth = 8;
    spec.groups[0].access.think = Some(think);
    let plan = plan::build(&spec, &[(Target::Null, TargetKind::Single)], 1);
    let stop = AtomicBool::new(false);
    let (tx, _rx) = mpsc::channel();
    let ctx = ThreadCtx::for_test(&plan, spec.content, &stop, tx, 4, Duration::ZERO);
    let queued = Arc::default();
    let b: Box<dyn Backend> = Box::new(Timed {
        inner: NullBackend::new(8),
        in_flight: 0,
        queued: Arc::clone(&queued),
    });
    let mut lane = Lane::new(b, worker::make_pool(&ctx)).unwrap();
    let cpu = thread_cpu();
    worker::run(&ctx, &mut lane, Instant::now()).unwrap();
    let cpu = thread_cpu() - cpu;
    let q = queued.lock().unwrap().clone();
    (q, cpu)
}

/// fio's thinktime: bursts of thinktime_blocks I/Os, each issued only once
/// the one before has completed, with the pause between them.
#[test]
fn think_time_issues_bursts_with_pauses_between() {
    let think = crate::workload::Think {
        blocks: 4,
        time: Duration::from_millis(20),
        spin: Duration::ZERO,
    };
    let (q, cpu) = think_run(think);
    // About 400 / 20 bursts, each of 4.
    let bursts: Vec<&[(Instant, usize)]> = q
        .chunk_by(|a, b| b.0.duration_since(a.0) < Duration::from_millis(5))
        .collect();
    assert!((15..=21).contains(&bursts.len()), "{} bursts", bursts.len());
    for (i, b) in bursts.iter().enumerate() {
        // The last may be cut by the run's end.
        if i + 1 < bursts.len() {
            assert_eq!(b.len(), 4, "burst {i}: {} I/Os", b.len());
        }
        assert_eq!(b[0].1, 0, "burst {i} began with I/O in flight");
    }
    for w in bursts.windows(2) {
        let gap = w[1][0].0.duration_since(w[0].last().unwrap().0);
        assert!(gap >= Duration::from_millis(20), "a pause of {gap:?}");
        assert!(gap < Duration::from_millis(30), "a pause of {gap:?}");
    }
    // Asleep, not spinning, through the pauses.
    assert!(cpu < Duration::from_millis(150), "{cpu:?} of CPU");

    // thinktime_spin spins the pause's first part on the CPU.
    let (q, cpu) = think_run(crate::workload::Think {
        spin: think.time,
        ..think
    });
    assert!(q.len() >= 60, "{} I/Os", q.len());
    assert!(cpu > Duration::from_millis(250), "{cpu:?} of CPU");
}
