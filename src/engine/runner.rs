//! The local runner: runs one load point on engine threads in this process and
//! merges their interval snapshots by addition.
//!
//! Every thread opens its backend first; only when all are ready does the runner
//! fix one start instant for all of them, so ramp and measurement windows line
//! up. An interval is final when every live thread has shipped it.

use super::OpenOptions;
use super::plan::{self, Disk, Plan, TargetKind, WorkerId};
use super::worker::{self, Msg, ThreadCtx, Timing};
use crate::backends::{self, target::Target};
use crate::prepare::{self, PrepareRequest};
use crate::stats::{CpuMeter, CpuSample, Snapshot, Summary};
use crate::workload::{Spec, units};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of a run that are not part of the workload.
pub struct RunOptions<'a> {
    /// Most engine threads to use.
    pub threads: usize,
    /// The user's explicit permission to write into files storlab did not create.
    pub allow_overwrite: bool,
    /// Set from outside (Ctrl-C) to end the run early; what was measured is kept.
    pub stop: &'a AtomicBool,
}

/// Whether an interval counts in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Ramp-up: recorded, excluded from the summary.
    Ramp,
    /// Measured.
    Measure,
}

/// One interval of a point, merged over every worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Interval number from 0.
    pub index: u32,
    /// Ramp or measure.
    pub phase: Phase,
    /// Start, seconds since the point's start.
    pub start_s: f64,
    /// Length in seconds (shorter for a final partial interval).
    pub seconds: f64,
    /// Counters and histograms.
    pub stats: Snapshot,
    /// CPU over the interval.
    pub cpu: CpuSample,
}

/// One worker's measured totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Which worker.
    pub id: WorkerId,
    /// Sum of its measured intervals.
    pub stats: Snapshot,
}

/// What preparing one file did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreparedFile {
    /// The file.
    pub path: String,
    /// Created by this run.
    pub created: bool,
    /// Bytes written to fill it.
    pub filled_bytes: u64,
}

/// The result of one load point: every interval, per-worker totals and the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The load point's label.
    pub label: String,
    /// The spec that ran.
    pub spec: Spec,
    /// Targets used.
    pub targets: Vec<String>,
    /// Backend and its features ("file: io_uring, registered files ...").
    pub backend: String,
    /// Engine threads used.
    pub threads: usize,
    /// Unix time the measurement started, seconds.
    pub started_unix: f64,
    /// Files prepared for this point.
    pub prepared: Vec<PreparedFile>,
    /// Every interval, ramp included.
    pub intervals: Vec<IntervalRecord>,
    /// Per-worker measured totals.
    pub workers: Vec<WorkerResult>,
    /// Counters and merged latency histograms of the measured intervals (the
    /// sum of every measured interval; percentiles derive from these).
    pub measured: Snapshot,
    /// Derived metrics over the measured intervals.
    pub summary: Summary,
    /// Ended early by the user.
    pub interrupted: bool,
    /// What ended the point early, if anything failed.
    pub error: Option<String>,
}

/// Receives intervals as they are measured (live progress, results store).
pub trait Observer {
    /// Called before a point starts measuring.
    fn point_started(&mut self, _spec: &Spec, _intervals: u32) {}
    /// Called for every interval as soon as it is final.
    fn interval(&mut self, _spec: &Spec, _rec: &IntervalRecord, _intervals: u32) {}
    /// A note worth telling the user (prepare progress).
    fn note(&mut self, _msg: &str) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// A failure before anything was measured.
#[derive(Debug)]
pub enum RunError {
    /// The targets or spec cannot run (mixed backends, nothing to run).
    Setup(String),
    /// Preparing a data file failed or was refused.
    Prepare(String),
    /// A backend could not open its disks.
    Open(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Setup(m) | RunError::Prepare(m) | RunError::Open(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// Number of intervals a duration takes, rounded up.
fn intervals_in(d: Duration, interval: Duration) -> u32 {
    (d.as_nanos().div_ceil(interval.as_nanos().max(1))) as u32
}

/// Prepare every file disk of the plan (the studies' iobw.tst step).
fn prepare_disks(
    spec: &Spec,
    plan: &Plan,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Vec<PreparedFile>, RunError> {
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
            allow_foreign_writes: opts.allow_overwrite,
        };
        let p = prepare::prepare(&req).map_err(|e| RunError::Prepare(e.to_string()))?;
        done.push(PreparedFile {
            path: path.display().to_string(),
            created: p.created,
            filled_bytes: p.filled_bytes,
        });
        if opts.stop.load(Ordering::Relaxed) {
            return Err(RunError::Prepare(
                "interrupted while preparing data files".into(),
            ));
        }
    }
    let filled: Vec<&PreparedFile> = done.iter().filter(|p| p.filled_bytes > 0).collect();
    if !filled.is_empty() {
        let bytes: u64 = filled.iter().map(|p| p.filled_bytes).sum();
        obs.note(&format!(
            "prepared {} data file(s), {} written in {:.1} s ({} reused)",
            filled.len(),
            units::format_size(bytes),
            started.elapsed().as_secs_f64(),
            done.len() - filled.len()
        ));
    }
    Ok(done)
}

/// Run one load point on `targets`.
///
/// Returns `Err` only when nothing could be measured (bad targets, prepare
/// refused, a backend that would not open). An I/O error or an interruption
/// during the run still returns `Ok` with every completed interval and `error`
/// or `interrupted` set.
pub fn run_point(
    spec: &Spec,
    targets: &[Target],
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    if targets.is_empty() {
        return Err(RunError::Setup(
            "no target given (use --target file:PATH or --target null:)".into(),
        ));
    }
    let kinds: Vec<(Target, TargetKind)> = targets
        .iter()
        .map(|t| (t.clone(), plan::target_kind(t)))
        .collect();
    if let Some(other) = targets
        .iter()
        .find(|t| t.backend_name() != targets[0].backend_name())
    {
        return Err(RunError::Setup(format!(
            "targets {} and {} use different backends; run them separately (or compare them)",
            targets[0], other
        )));
    }
    let plan = plan::build(spec, &kinds, opts.threads);
    let prepared = prepare_disks(spec, &plan, opts, obs)?;

    let timing = Timing {
        interval_ns: spec.interval.as_nanos() as u64,
        intervals: intervals_in(spec.ramp, spec.interval)
            + intervals_in(spec.runtime, spec.interval),
    };
    let ramp_intervals = intervals_in(spec.ramp, spec.interval);
    let open = OpenOptions {
        direct: spec.direct,
        sync: Some(spec.sync),
        write: spec.writes(),
        depth: 0,
        size_needed: spec.offset + spec.size,
    };
    let internal_stop = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let nthreads = plan.threads.len();
    let barrier = Barrier::new(nthreads + 1);
    let t0_cell: OnceLock<Instant> = OnceLock::new();
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|scope| {
        for (i, tp) in plan.threads.iter().enumerate() {
            let tx = tx.clone();
            let (barrier, t0_cell, abort, internal_stop, plan) =
                (&barrier, &t0_cell, &abort, &internal_stop, &plan);
            let target = &targets[0];
            std::thread::Builder::new()
                .name(format!("storlab-engine-{i}"))
                .spawn_scoped(scope, move || {
                    let ctx = ThreadCtx {
                        thread: i,
                        plan: tp,
                        disks: &plan.disks,
                        timing,
                        io_limit: spec.io_limit,
                        content: spec.content,
                        seed: spec.seed,
                        stop: internal_stop,
                        tx: tx.clone(),
                    };
                    let mut pool = worker::make_pool(&ctx);
                    let depth: u32 = tp.workers.iter().map(|w| w.access.iodepth).sum();
                    let disks: Vec<&Disk> =
                        tp.disks.iter().map(|&d| &plan.disks[d as usize]).collect();
                    let opened = backends::open(target, &disks, &OpenOptions { depth, ..open })
                        .and_then(|mut b| {
                            b.register_buffers(&pool)?;
                            Ok(b)
                        });
                    let mut backend = match opened {
                        Ok(b) => {
                            let _ = tx.send(Msg::Ready {
                                thread: i,
                                result: Ok(backends::describe(b.as_ref())),
                            });
                            b
                        }
                        Err(e) => {
                            let _ = tx.send(Msg::Ready {
                                thread: i,
                                result: Err(e.to_string()),
                            });
                            barrier.wait();
                            return;
                        }
                    };
                    barrier.wait();
                    if abort.load(Ordering::SeqCst) {
                        return;
                    }
                    let t0 = *t0_cell.get().expect("start instant set before the barrier");
                    let wait = t0.saturating_duration_since(Instant::now());
                    if !wait.is_zero() {
                        std::thread::sleep(wait);
                    }
                    let result = worker::run(&ctx, backend.as_mut(), &mut pool, t0);
                    if result.is_err() {
                        internal_stop.store(true, Ordering::SeqCst);
                    }
                    // The backend goes first: it may still reference the pool.
                    drop(backend);
                    drop(pool);
                    let _ = tx.send(Msg::Done { thread: i, result });
                })
                .expect("spawn engine thread");
        }
        drop(tx);

        // Wait until every thread opened its backend.
        let mut features = Vec::new();
        let mut open_errors = Vec::new();
        for _ in 0..nthreads {
            match rx.recv() {
                Ok(Msg::Ready { result: Ok(f), .. }) => features.push(f),
                Ok(Msg::Ready { result: Err(e), .. }) => open_errors.push(e),
                _ => open_errors.push("an engine thread ended before it was ready".to_string()),
            }
        }
        if !open_errors.is_empty() {
            abort.store(true, Ordering::SeqCst);
            let _ = t0_cell.set(Instant::now());
            barrier.wait();
            open_errors.dedup();
            return Err(RunError::Open(open_errors.join("; ")));
        }
        let mut meter = CpuMeter::new();
        let t0 = Instant::now() + Duration::from_millis(5);
        let _ = t0_cell.set(t0);
        let started_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        barrier.wait();
        obs.point_started(spec, timing.intervals);

        let nworkers = plan.threads.iter().map(|t| t.workers.len()).sum::<usize>();
        let mut worker_ids: Vec<Option<WorkerId>> = vec![None; nworkers];
        for t in &plan.threads {
            for w in &t.workers {
                worker_ids[w.index as usize] = Some(w.id.clone());
            }
        }
        let mut per_worker: Vec<Snapshot> = vec![Snapshot::default(); nworkers];
        // interval → (snapshot so far, threads shipped, latest end)
        let mut pending: BTreeMap<u32, (Snapshot, usize, u64)> = BTreeMap::new();
        let mut shipped_to: Vec<Option<u32>> = vec![None; nthreads];
        let mut alive = vec![true; nthreads];
        let mut intervals: Vec<IntervalRecord> = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        let mut interrupted = false;

        let mut finalize = |index: u32,
                            snap: Snapshot,
                            end_ns: u64,
                            meter: &mut CpuMeter,
                            obs: &mut dyn Observer| {
            let start_ns = index as u64 * timing.interval_ns;
            let rec = IntervalRecord {
                index,
                phase: if index < ramp_intervals {
                    Phase::Ramp
                } else {
                    Phase::Measure
                },
                start_s: start_ns as f64 / 1e9,
                seconds: end_ns.saturating_sub(start_ns) as f64 / 1e9,
                stats: snap,
                cpu: meter.sample(),
            };
            obs.interval(spec, &rec, timing.intervals);
            intervals.push(rec);
        };

        loop {
            if opts.stop.load(Ordering::Relaxed) && !internal_stop.load(Ordering::Relaxed) {
                interrupted = true;
                internal_stop.store(true, Ordering::SeqCst);
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Msg::Interval {
                    thread,
                    index,
                    end_ns,
                    workers,
                }) => {
                    let entry = pending
                        .entry(index)
                        .or_insert_with(|| (Snapshot::default(), 0, 0));
                    for (w, s) in workers {
                        if index >= ramp_intervals {
                            per_worker[w as usize] += s.clone();
                        }
                        entry.0 += s;
                    }
                    entry.1 += 1;
                    entry.2 = entry.2.max(end_ns);
                    shipped_to[thread] = Some(index);
                }
                Ok(Msg::Done { thread, result }) => {
                    alive[thread] = false;
                    if let Err(e) = result
                        && !errors.contains(&e)
                    {
                        errors.push(e);
                    }
                }
                Ok(Msg::Ready { .. }) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            // Finalize, in order, every interval that all live threads have shipped.
            while let Some((&index, entry)) = pending.iter().next() {
                let live_missing =
                    (0..nthreads).any(|t| alive[t] && shipped_to[t].is_none_or(|s| s < index));
                if live_missing {
                    break;
                }
                let _ = entry;
                let (snap, _, end) = pending.remove(&index).expect("entry present");
                finalize(index, snap, end, &mut meter, obs);
            }
            if alive.iter().all(|a| !a) && pending.is_empty() {
                break;
            }
        }
        while let Some((index, (snap, _, end))) = pending.pop_first() {
            finalize(index, snap, end, &mut meter, obs);
        }

        let measured: Vec<(Snapshot, f64, CpuSample)> = intervals
            .iter()
            .filter(|r| r.phase == Phase::Measure)
            .map(|r| (r.stats.clone(), r.seconds, r.cpu.clone()))
            .collect();
        let summary = Summary::compute(&measured);
        let measured: Snapshot = measured.into_iter().map(|(s, _, _)| s).sum();
        features.sort();
        features.dedup();
        let workers = worker_ids
            .into_iter()
            .zip(per_worker)
            .filter_map(|(id, stats)| id.map(|id| WorkerResult { id, stats }))
            .collect();
        Ok(PointResult {
            label: spec.label.clone(),
            spec: spec.clone(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            backend: features.join("; "),
            threads: nthreads,
            started_unix,
            prepared,
            intervals,
            workers,
            measured,
            summary,
            interrupted,
            error: if errors.is_empty() {
                None
            } else {
                Some(errors.join("; "))
            },
        })
    })
}
