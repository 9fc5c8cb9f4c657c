//! The local runner: a host's share on engine threads in this process.
//!
//! `prepare` plans the share, prepares data files and opens every thread's
//! backend; the threads then wait for the start instant. `start` hands them
//! that instant and starts a collector that merges the threads' snapshots into
//! host intervals (by addition) and streams them as [`HostEvent`]s.

use super::merge::Merger;
use super::share;
use super::{
    HostCheck, HostEvent, HostInterval, HostPlan, HostPrepared, HostRunner, RunError, RunHooks,
};
use crate::backends;
use crate::engine::hooks::PointHooks;
use crate::engine::worker::{self, Msg, ThreadCtx, Timing};
use crate::io::{Lane, OpenOptions};
use crate::model::{HostVerify, PreparedFile};
use crate::plan::{self, Disk, Plan, TargetKind};
use crate::prepare::{self, PrepareRequest};
use crate::stats::{CpuMeter, Snapshot};
use crate::target::Target;
use crate::workload::{Spec, units};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Number of intervals a duration takes, rounded up.
pub(super) fn intervals_in(d: Duration, interval: Duration) -> u32 {
    (d.as_nanos().div_ceil(interval.as_nanos().max(1))) as u32
}

/// Intervals in a point (ramp + measure). A zero runtime with an `io_limit` or a replay
/// has no time bound: the point ends when every worker has moved its bytes, so
/// the count is unbounded (`u32::MAX`, about 136 years of 1 s intervals).
pub(super) fn total_intervals(spec: &Spec) -> u32 {
    if spec.open_ended() {
        return u32::MAX;
    }
    intervals_in(spec.ramp, spec.interval).saturating_add(intervals_in(spec.runtime, spec.interval))
}

/// Engine threads in this process, running one host's share.
pub struct LocalRunner {
    name: String,
    /// Ends the engine threads early (user stop, an I/O error, the controller).
    stop: Arc<AtomicBool>,
    engines: Vec<JoinHandle<()>>,
    /// One per engine thread: the start instant and the point's hooks, or
    /// drop to abort.
    starts: Vec<Sender<Start>>,
    msgs: Option<Receiver<Msg>>,
    timing: Timing,
    collector: Option<JoinHandle<()>>,
    /// Where each point's I/O hooks come from (verify mode); `None`: none.
    hook_source: Option<Arc<dyn RunHooks>>,
    /// The point's hooks, finished in `finish` however the point ended.
    verify: Option<Arc<dyn PointHooks>>,
    /// What `finish` saved (or why it could not), and bad blocks.
    verify_saved: Option<HostVerify>,
}

impl LocalRunner {
    /// A runner for this process, reported as host `name`, whose points get
    /// their I/O hooks from `hooks` (verify mode: `crate::verify::Verify`).
    pub fn new(name: impl Into<String>, hooks: Option<Arc<dyn RunHooks>>) -> Self {
        LocalRunner {
            name: name.into(),
            hook_source: hooks,
            stop: Arc::new(AtomicBool::new(false)),
            engines: Vec::new(),
            starts: Vec::new(),
            msgs: None,
            timing: Timing {
                interval_ns: 1,
                intervals: 0,
            },
            collector: None,
            verify: None,
            verify_saved: None,
        }
    }

    /// Where the last `finish` saved verify mode's map and the bad blocks it
    /// printed; `None` when the point did not verify. Taken once.
    pub fn take_verify_saved(&mut self) -> Option<HostVerify> {
        self.verify_saved.take()
    }
}

/// Refuse targets that cannot run together.
fn check_targets(targets: &[Target]) -> Result<(), RunError> {
    if targets.is_empty() {
        return Err(RunError::Setup(
            "no target given (use --target file:PATH or --target null:)".into(),
        ));
    }
    if let Some(other) = targets
        .iter()
        .find(|t| t.backend_name() != targets[0].backend_name())
    {
        return Err(RunError::Setup(format!(
            "targets {} and {} use different backends; run them separately (or compare them)",
            targets[0], other
        )));
    }
    Ok(())
}

/// Prepare every file disk of the plan (the studies' iobw.tst step); returns
/// the files and a note on what was written.
fn prepare_disks(
    spec: &Spec,
    plan: &Plan,
    allow_overwrite: bool,
    stop: &AtomicBool,
) -> Result<(Vec<PreparedFile>, Option<String>), RunError> {
    let mut done: Vec<PreparedFile> = Vec::new();
    let writes = spec.writes();
    let started = Instant::now();
    for disk in &plan.disks {
        let Some(path) = &disk.path else { continue };
        if done.iter().any(|p| p.path == path.display().to_string()) {
            continue;
        }
        let req = PrepareRequest {
            path,
            size: disk.offset + disk.size,
            content: spec.content,
            seed: spec.seed,
            writes,
            allow_foreign_writes: allow_overwrite,
        };
        let p = prepare::prepare(&req).map_err(prepare_error)?;
        done.push(PreparedFile {
            path: path.display().to_string(),
            created: p.created,
            filled_bytes: p.filled_bytes,
        });
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Stopped(
                "interrupted while preparing data files".into(),
            ));
        }
    }
    let filled: Vec<&PreparedFile> = done.iter().filter(|p| p.filled_bytes > 0).collect();
    let note = (!filled.is_empty()).then(|| {
        let bytes: u64 = filled.iter().map(|p| p.filled_bytes).sum();
        format!(
            "prepared {} data file(s), {} written in {:.1} s ({} reused)",
            filled.len(),
            units::format_size(bytes),
            started.elapsed().as_secs_f64(),
            done.len() - filled.len()
        )
    });
    Ok((done, note))
}

/// A failed prepare or size check: the machine's fault (storage) or the
/// run's (a target refused or too small).
fn prepare_error(e: prepare::PrepareError) -> RunError {
    if e.is_environment() {
        RunError::Storage(e.to_string())
    } else {
        RunError::Prepare(e.to_string())
    }
}

/// The lab's store is the lab's to fill, so nothing is prepared on it; its
/// size is still checked against what the point needs, before any I/O: once
/// per file, against the furthest end of the VM disks sliced from it (128
/// VM disks on one store open it once, not 128 times).
fn check_store_size(plan: &Plan) -> Result<(), RunError> {
    let mut need: std::collections::BTreeMap<&std::path::Path, u64> = Default::default();
    for disk in &plan.disks {
        if let Some(path) = &disk.path {
            let end = need.entry(path).or_default();
            *end = (*end).max(disk.end());
        }
    }
    for (path, end) in need {
        prepare::check_size(path, end).map_err(prepare_error)?;
    }
    Ok(())
}

/// What starts an engine thread: the instant, and the point's hooks (built
/// once every backend is open, from what the storage says it is).
type Start = (Instant, Option<Arc<dyn PointHooks>>);

/// Everything one engine thread owns.
struct EngineThread {
    index: usize,
    plan: Arc<Plan>,
    target: Target,
    open: OpenOptions,
    timing: Timing,
    io_limit: Option<u64>,
    io_timeout: Duration,
    content: crate::workload::Content,
    seed: u64,
    stop: Arc<AtomicBool>,
    tx: Sender<Msg>,
    start: Receiver<Start>,
    replay: Option<crate::workload::replay::Replay>,
}

impl EngineThread {
    /// Open the backend, report ready, wait for the start instant, run.
    fn run(self) {
        let i = self.index;
        let tp = &self.plan.threads[i];
        // Set at the start, before the first I/O: it outlives `ctx`.
        let hooks: Option<Arc<dyn PointHooks>>;
        let mut ctx = ThreadCtx {
            thread: i,
            plan: tp,
            disks: &self.plan.disks,
            timing: self.timing,
            io_limit: self.io_limit,
            content: self.content,
            seed: self.seed,
            stop: &self.stop,
            tx: self.tx.clone(),
            io_timeout: self.io_timeout,
            hooks: None,
            replay: self.replay.as_ref(),
        };
        let pool = worker::make_pool(&ctx);
        let depth: u32 = tp.workers.iter().map(|w| w.access.iodepth).sum();
        let disks: Vec<&Disk> = tp
            .disks
            .iter()
            .map(|&d| &self.plan.disks[d as usize])
            .collect();
        let opened = backends::open(&self.target, &disks, &OpenOptions { depth, ..self.open })
            .and_then(|b| Lane::new(b, pool));
        let mut lane = match opened {
            Ok(l) => {
                let identities = tp
                    .disks
                    .iter()
                    .enumerate()
                    .filter_map(|(k, &d)| Some((d, l.backend().identity(k)?)))
                    .collect();
                let _ = self.tx.send(Msg::Ready {
                    thread: i,
                    result: Ok(backends::describe(
                        l.backend(),
                        worker::submit_rhythm(worker::commit_every(tp, l.commit_each())),
                    )),
                    identities,
                });
                l
            }
            Err(e) => {
                let _ = self.tx.send(Msg::Ready {
                    thread: i,
                    result: Err(e.to_string()),
                    identities: Vec::new(),
                });
                return;
            }
        };
        // A dropped sender means the run was called off before the start.
        let Ok((t0, point_hooks)) = self.start.recv() else {
            return;
        };
        hooks = point_hooks;
        ctx.hooks = hooks.as_deref();
        let wait = t0.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let result = worker::run(&ctx, &mut lane, t0);
        if result.is_err() {
            self.stop.store(true, Ordering::SeqCst);
        }
        // The backend goes first, then the buffers its requests leased.
        drop(lane);
        let _ = self.tx.send(Msg::Done { thread: i, result });
    }
}

/// The instant in this process's monotonic clock of wall time `at_unix_ns`.
pub(crate) fn instant_of_unix(at_unix_ns: u64) -> Instant {
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    Instant::now() + Duration::from_nanos(at_unix_ns.saturating_sub(now_unix))
}

/// Merge the threads' intervals into host intervals until every thread is done.
fn collect(rx: Receiver<Msg>, nthreads: usize, host: usize, events: Sender<HostEvent>) {
    type Acc = (Snapshot, Vec<(u32, Snapshot)>);
    let mut meter = CpuMeter::new();
    let mut merger: Merger<Acc> = Merger::new(nthreads);
    let mut errors: Vec<String> = Vec::new();
    let send = |index: u32, (stats, mut workers): Acc, end_ns: u64, meter: &mut CpuMeter| {
        workers.sort_by_key(|w| w.0);
        let _ = events.send(HostEvent::Interval {
            host,
            interval: Box::new(HostInterval {
                index,
                end_ns,
                stats,
                workers,
                cpu: meter.sample(),
            }),
        });
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Interval {
                thread,
                index,
                end_ns,
                workers,
            }) => merger.add(thread, index, end_ns, |acc: &mut Acc| {
                for (w, s) in workers {
                    acc.0 += &s;
                    acc.1.push((w, s));
                }
            }),
            Ok(Msg::Done { thread, result }) => {
                merger.end(thread);
                if let Err(e) = result
                    && !errors.contains(&e)
                {
                    errors.push(e);
                }
            }
            Ok(Msg::Ready { .. }) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        while let Some((index, acc, end)) = merger.pop_ready() {
            send(index, acc, end, &mut meter);
        }
        if merger.is_done() {
            break;
        }
    }
    while let Some((index, acc, end)) = merger.pop_any() {
        send(index, acc, end, &mut meter);
    }
    let _ = events.send(HostEvent::Done {
        host,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        workers: None,
        verify: None,
    });
}

impl HostRunner for LocalRunner {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&mut self, plan: &HostPlan) -> Result<HostCheck, RunError> {
        check_targets(&plan.targets)?;
        Ok(HostCheck {
            clock_offset_ns: 0,
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    fn prepare(&mut self, hp: &HostPlan, stop: &AtomicBool) -> Result<HostPrepared, RunError> {
        check_targets(&hp.targets)?;
        let spec = &hp.spec;
        let kinds: Vec<(Target, TargetKind)> = hp
            .targets
            .iter()
            .map(|t| (t.clone(), plan::target_kind(t)))
            .collect();
        let max_threads = hp.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let plan = Arc::new(share::host_plan(spec, &kinds, &hp.vms, max_threads));
        let (prepared, note) = if hp.lab_store {
            check_store_size(&plan)?;
            (Vec::new(), None)
        } else {
            prepare_disks(spec, &plan, hp.allow_overwrite, stop)?
        };
        self.timing = Timing {
            interval_ns: spec.interval.as_nanos() as u64,
            intervals: total_intervals(spec),
        };
        let open = OpenOptions {
            direct: spec.direct,
            sync: Some(spec.sync),
            write: spec.writes(),
            depth: 0,
            size_needed: plan.size_needed(),
            sqpoll: spec.sqpoll,
            sqpoll_cpu: spec.sqpoll_cpu,
            hipri: spec.hipri,
            ioengine: spec.ioengine,
            reconnect: (!spec.reconnect_timeout.is_zero()).then_some(spec.reconnect_timeout),
        };
        let (tx, rx) = mpsc::channel::<Msg>();
        let nthreads = plan.threads.len();
        for i in 0..nthreads {
            let (start_tx, start_rx) = mpsc::channel();
            let t = EngineThread {
                index: i,
                plan: Arc::clone(&plan),
                target: hp.targets[0].clone(),
                open,
                timing: self.timing,
                io_limit: spec.io_limit,
                io_timeout: spec.io_timeout,
                content: spec.content,
                seed: spec.seed,
                stop: Arc::clone(&self.stop),
                tx: tx.clone(),
                start: start_rx,
                replay: spec.replay.clone(),
            };
            let h = std::thread::Builder::new()
                .name(format!("storlab-engine-{i}"))
                .spawn(move || t.run())
                .map_err(|e| RunError::Open(format!("cannot start an engine thread: {e}")))?;
            self.engines.push(h);
            self.starts.push(start_tx);
        }
        drop(tx);
        let mut features = Vec::new();
        let mut open_errors = Vec::new();
        let mut identities: Vec<Option<String>> = vec![None; plan.disks.len()];
        for _ in 0..nthreads {
            match rx.recv() {
                Ok(Msg::Ready {
                    result: Ok(f),
                    identities: ids,
                    ..
                }) => {
                    features.push(f);
                    for (d, id) in ids {
                        identities[d as usize] = Some(id);
                    }
                }
                Ok(Msg::Ready { result: Err(e), .. }) => open_errors.push(e),
                _ => open_errors.push("an engine thread ended before it was ready".to_string()),
            }
        }
        if !open_errors.is_empty() {
            self.finish();
            open_errors.dedup();
            return Err(RunError::Open(open_errors.join("; ")));
        }
        // The point's hooks (verify mode) know each store by what the storage
        // said it is, so they are built once every backend is open.
        let started = match &self.hook_source {
            Some(h) => h.start(spec, &plan, &identities),
            None => Ok(None),
        };
        match started {
            Ok(v) => self.verify = v,
            Err(e) => {
                self.finish();
                return Err(e);
            }
        }
        self.msgs = Some(rx);
        features.sort();
        features.dedup();
        Ok(HostPrepared {
            backend: features.join("; "),
            threads: nthreads,
            prepared,
            notes: note.into_iter().collect(),
        })
    }

    fn start(
        &mut self,
        at_unix_ns: u64,
        host: usize,
        events: Sender<HostEvent>,
    ) -> Result<(), RunError> {
        let rx = self.msgs.take().ok_or_else(|| {
            RunError::Setup(format!(
                "host {}: started before it was prepared",
                self.name
            ))
        })?;
        let t0 = instant_of_unix(at_unix_ns);
        for s in self.starts.drain(..) {
            let _ = s.send((t0, self.verify.clone()));
        }
        let nthreads = self.engines.len();
        let h = std::thread::Builder::new()
            .name("storlab-collector".into())
            .spawn(move || collect(rx, nthreads, host, events))
            .map_err(|e| RunError::Open(format!("cannot start the collector thread: {e}")))?;
        self.collector = Some(h);
        Ok(())
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn finish(&mut self) {
        // Dropping the start senders calls off threads that never started.
        self.starts.clear();
        self.msgs = None;
        for h in self.engines.drain(..) {
            let _ = h.join();
        }
        if let Some(h) = self.collector.take() {
            let _ = h.join();
        }
        if let Some(v) = self.verify.take() {
            self.verify_saved = Some(v.finish());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(path: &std::path::Path, offset: u64, size: u64) -> Disk {
        Disk {
            target: format!("file:{}", path.display()),
            path: Some(path.to_path_buf()),
            offset,
            size,
        }
    }

    #[test]
    fn the_store_is_checked_against_its_furthest_slice() {
        let dir = crate::workload::testing::temp_dir("store-size");
        let store = dir.join("disk.img");
        std::fs::write(&store, vec![0u8; 8192]).unwrap();
        // Three VM disks sliced from one store: the last one ends past it.
        let slices = |last: u64| Plan {
            disks: vec![
                disk(&store, 0, 4096),
                disk(&store, 4096, 4096),
                disk(&store, 8192, last),
            ],
            threads: Vec::new(),
        };
        assert!(check_store_size(&slices(0)).is_ok());
        let e = check_store_size(&slices(4096)).unwrap_err().to_string();
        assert!(e.contains("disk.img") && e.contains("12288"), "{e}");
        // A disk with no file (null) is not checked.
        let mut null = slices(0);
        null.disks.push(Disk {
            target: "null:".into(),
            path: None,
            offset: 0,
            size: 1 << 40,
        });
        assert!(check_store_size(&null).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
