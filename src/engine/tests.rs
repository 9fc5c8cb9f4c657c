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
