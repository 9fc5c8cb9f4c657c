//! The agent's one run slot and what each request does to it: hello,
//! prepare, start, intervals (long-polled), stop and result, and the watchdog
//! that stops or releases a run whose controller went silent.

use super::AgentConfig;
use super::auth;
use super::decode::{AgentRequest, PrepareOrder};
use crate::fleet::metrics::Metrics;
use crate::fleet::wire::{self, ErrorKind, RunState};
use crate::plan::{TargetKind, target_kind};
use crate::runner::{HostEvent, HostRunner, LocalRunner, RunError, share};
use crate::stats::Snapshot;
use crate::target::Target;
use serde::Serialize;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Longest long-poll wait the agent grants.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// Most intervals in one reply.
const MAX_INTERVALS_PER_REPLY: usize = 256;

/// The agent's one run slot.
pub(super) struct Slot {
    run: u64,
    state: RunState,
    runner: Option<LocalRunner>,
    /// Intervals as sent: per-worker counters only.
    intervals: Vec<wire::WireInterval>,
    /// Per-worker measured totals with histograms, sent once at the end.
    workers: Vec<(u32, Snapshot)>,
    /// Intervals of ramp-up (not in `workers`).
    ramp_intervals: u32,
    done: bool,
    error: Option<String>,
    /// Where the finished run saved its verify maps, and its bad blocks.
    verify: Option<crate::model::HostVerify>,
    last_contact: Instant,
}

pub(super) struct Shared {
    pub(super) cfg: AgentConfig,
    pub(super) slot: Mutex<Slot>,
    pub(super) changed: Condvar,
    pub(super) metrics: Metrics,
    pub(super) limiter: auth::FailureLimiter,
    pub(super) quit: AtomicBool,
}

impl Shared {
    /// A fresh agent state: no run.
    pub(super) fn new(cfg: AgentConfig) -> Shared {
        Shared {
            slot: Mutex::new(Slot {
                run: 0,
                state: RunState::Idle,
                runner: None,
                intervals: Vec::new(),
                workers: Vec::new(),
                ramp_intervals: 0,
                done: false,
                error: None,
                verify: None,
                last_contact: Instant::now(),
            }),
            changed: Condvar::new(),
            metrics: Metrics::default(),
            limiter: auth::FailureLimiter::default(),
            quit: std::sync::atomic::AtomicBool::new(false),
            cfg,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot's state.
    pub(super) fn state(&self) -> RunState {
        self.lock().state
    }

    /// The controller was heard from now.
    pub(super) fn touch(&self) {
        self.lock().last_contact = Instant::now();
    }

    /// Stop a running run and release its runner (the agent is shutting down).
    pub(super) fn release_run(&self) {
        let runner = {
            let mut s = self.lock();
            if let Some(r) = s.runner.as_mut() {
                r.stop();
            }
            s.runner.take()
        };
        if let Some(mut r) = runner {
            r.finish();
        }
    }

    pub(super) fn log(&self, msg: &str) {
        eprintln!("storlab agent {}: {msg}", self.cfg.name);
    }
}

/// A refusal: HTTP status and body.
pub(super) struct Refusal(pub(super) u16, pub(super) ErrorKind, pub(super) String);

pub(super) type Reply = Result<String, Refusal>;

fn json<T: Serialize>(v: &T) -> Reply {
    serde_json::to_string(v)
        .map_err(|e| Refusal(500, ErrorKind::Failed, format!("encoding the reply: {e}")))
}

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub(super) fn dispatch(shared: &Arc<Shared>, req: AgentRequest) -> Reply {
    match req {
        AgentRequest::Hello(r) => hello(shared, r),
        AgentRequest::Prepare(order) => prepare(shared, *order),
        AgentRequest::Start(r) => start(shared, r),
        AgentRequest::Intervals(r) => intervals(shared, r),
        AgentRequest::Stop(r) => stop(shared, r),
        AgentRequest::Result(r) => result(shared, r),
    }
}

/// Parse a target and check it against the allow list.
fn allowed_target(shared: &Shared, t: &str) -> Result<Target, String> {
    let target = Target::parse(t).map_err(|e| e.to_string())?;
    shared.cfg.allow.check_target(&target)?;
    Ok(target)
}

fn hello(shared: &Shared, req: wire::HelloRequest) -> Reply {
    let refused_targets = req
        .targets
        .iter()
        .filter_map(|t| allowed_target(shared, t).err())
        .collect();
    let state = shared.lock().state;
    json(&wire::HelloReply {
        protocol: wire::PROTOCOL_VERSION,
        storlab_version: wire::STORLAB_VERSION.into(),
        host: shared.cfg.name.clone(),
        capabilities: [
            "backend:null",
            "backend:file",
            "backend:nfs",
            "backend:iscsi",
            "backend:nbd",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        agent_unix_ns: now_unix_ns(),
        state,
        refused_targets,
    })
}

fn unknown_run(s: &Slot, run: u64) -> Refusal {
    Refusal(
        400,
        ErrorKind::BadRequest,
        format!(
            "unknown run {run} (this agent is on run {}, {})",
            s.run,
            s.state.name()
        ),
    )
}

fn prepare(shared: &Shared, order: PrepareOrder) -> Reply {
    let PrepareOrder {
        run,
        verify_run,
        mut plan,
    } = order;
    for t in &plan.targets {
        shared
            .cfg
            .allow
            .check_target(t)
            .map_err(|e| Refusal(403, ErrorKind::NotAllowed, e))?;
    }
    // The durability journal is this agent's own file (FILE.agent-NAME, so
    // two agents on one host never share one), which it would write: allowed
    // paths only.
    if let Some(j) = &mut plan.spec.journal {
        *j = crate::verify::agent_journal_path(j, &shared.cfg.name);
        shared.cfg.allow.check_path(j).map_err(|e| {
            Refusal(
                403,
                ErrorKind::NotAllowed,
                format!("journal: {}", e.replacen("target ", "", 1)),
            )
        })?;
    }
    // Every disk path the share will open must be allowed too (a file inside
    // an allowed directory may be a symlink out of it).
    if !plan.targets.is_empty() {
        let kinds: Vec<(Target, TargetKind)> = plan
            .targets
            .iter()
            .map(|t| (t.clone(), target_kind(t)))
            .collect();
        let p = share::host_plan(&plan.spec, &kinds, &plan.vms, 1);
        for d in &p.disks {
            if let Some(path) = &d.path {
                shared
                    .cfg
                    .allow
                    .check_path(path)
                    .map_err(|e| Refusal(403, ErrorKind::NotAllowed, e))?;
            }
        }
    }
    let old = {
        let mut s = shared.lock();
        match s.state {
            RunState::Preparing | RunState::Running => {
                return Err(Refusal(
                    409,
                    ErrorKind::Busy,
                    format!("busy with run {} ({})", s.run, s.state.name()),
                ));
            }
            _ => {}
        }
        s.run = run;
        s.state = RunState::Preparing;
        s.intervals.clear();
        s.workers.clear();
        s.ramp_intervals = plan.spec.ramp_intervals();
        s.done = false;
        s.error = None;
        s.verify = None;
        s.runner.take()
    };
    if let Some(mut r) = old {
        r.finish();
    }
    // One controller run is one verify run: its points continue one map here,
    // and the next controller run starts afresh (crate::verify::set_run_id).
    if plan.spec.verify || plan.spec.journal.is_some() {
        crate::verify::set_run_id(verify_run);
    }
    let mut runner = LocalRunner::new(
        shared.cfg.name.clone(),
        Some(std::sync::Arc::new(crate::verify::Verify)),
    );
    let never = AtomicBool::new(false);
    let prepared = runner
        .check(&plan)
        .and_then(|_| runner.prepare(&plan, &never));
    let mut s = shared.lock();
    match prepared {
        Ok(p) => {
            s.state = RunState::Prepared;
            s.runner = Some(runner);
            s.last_contact = Instant::now();
            shared.log(&format!(
                "run {} prepared: {} VM(s) on {} thread(s), {}",
                run,
                plan.vms.len(),
                p.threads,
                p.backend
            ));
            json(&wire::PrepareReply {
                run,
                backend: p.backend,
                threads: p.threads as u32,
                prepared: p.prepared.iter().map(Into::into).collect(),
                notes: p.notes,
            })
        }
        Err(e) => {
            s.state = RunState::Idle;
            drop(s);
            runner.finish();
            let kind = match e {
                RunError::Prepare(_) | RunError::Setup(_) => ErrorKind::Prepare,
                _ => ErrorKind::Failed,
            };
            Err(Refusal(500, kind, e.to_string()))
        }
    }
}

fn start(shared: &Arc<Shared>, req: wire::StartRequest) -> Reply {
    let mut s = shared.lock();
    if s.run != req.run || s.state != RunState::Prepared {
        return Err(unknown_run(&s, req.run));
    }
    let (tx, rx) = mpsc::channel::<HostEvent>();
    let runner = s.runner.as_mut().expect("a prepared run has a runner");
    runner
        .start(req.at_unix_ns, 0, tx)
        .map_err(|e| Refusal(500, ErrorKind::Failed, e.to_string()))?;
    s.state = RunState::Running;
    shared.metrics.run_started();
    let sh = Arc::clone(shared);
    let run = req.run;
    std::thread::Builder::new()
        .name("storlab-agent-run".into())
        .spawn(move || forward(&sh, run, rx))
        .map_err(|e| {
            Refusal(
                500,
                ErrorKind::Failed,
                format!("cannot start a thread: {e}"),
            )
        })?;
    let starts_in_ms = (req.at_unix_ns as i128 - now_unix_ns() as i128) / 1_000_000;
    shared.log(&format!("run {run} starts in {starts_in_ms} ms"));
    json(&wire::StartReply {
        run,
        starts_in_ms: starts_in_ms as i64,
    })
}

/// Moves the runner's events into the slot for the controller to collect.
fn forward(shared: &Shared, run: u64, rx: mpsc::Receiver<HostEvent>) {
    for ev in rx {
        let mut s = shared.lock();
        if s.run != run {
            break;
        }
        match ev {
            HostEvent::Interval { interval, .. } => {
                shared.metrics.add_interval(&interval.stats);
                if interval.index >= s.ramp_intervals {
                    for (w, snap) in &interval.workers {
                        match s.workers.iter_mut().find(|(x, _)| x == w) {
                            Some((_, total)) => *total += snap,
                            None => s.workers.push((*w, snap.clone())),
                        }
                    }
                }
                s.intervals.push(interval.as_ref().into());
            }
            HostEvent::Done { error, .. } => {
                if s.error.is_none() {
                    s.error = error;
                }
            }
            HostEvent::Lost { reason, .. } => {
                if s.error.is_none() {
                    s.error = Some(reason);
                }
            }
        }
        shared.changed.notify_all();
    }
    // The engine threads are done: release the runner (which saves a verify
    // map) before the run counts as done, so the last reply can say where.
    let runner = {
        let mut s = shared.lock();
        if s.run != run {
            return;
        }
        s.runner.take()
    };
    let verify = runner.and_then(|mut r| {
        r.finish();
        r.take_verify_saved()
    });
    {
        let mut s = shared.lock();
        if s.run != run {
            return;
        }
        s.verify = verify;
        s.done = true;
        s.state = RunState::Finished;
        shared.changed.notify_all();
    }
    shared.log(&format!("run {run} finished"));
}

fn intervals(shared: &Shared, req: wire::IntervalsRequest) -> Reply {
    let deadline = Instant::now() + Duration::from_millis(req.wait_ms as u64).min(MAX_WAIT);
    let mut s = shared.lock();
    if s.run != req.run || s.state == RunState::Idle || s.state == RunState::Preparing {
        return Err(unknown_run(&s, req.run));
    }
    while s.intervals.len() <= req.from as usize && !s.done {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        s = shared
            .changed
            .wait_timeout(s, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
        if s.run != req.run {
            return Err(unknown_run(&s, req.run));
        }
    }
    s.last_contact = Instant::now();
    let from = (req.from as usize).min(s.intervals.len());
    let to = (from + MAX_INTERVALS_PER_REPLY).min(s.intervals.len());
    let all_sent = to == s.intervals.len();
    // The outcome (error, worker totals, verify) goes with the last reply only.
    let last = s.done && all_sent;
    let verify = s.verify.as_ref().filter(|_| last);
    json(&wire::IntervalsReply {
        run: req.run,
        intervals: s.intervals[from..to].to_vec(),
        done: last,
        error: if last { s.error.clone() } else { None },
        workers: if last {
            s.workers
                .iter()
                .map(|(w, stats)| wire::WireWorker {
                    worker: *w,
                    stats: stats.clone(),
                })
                .collect()
        } else {
            Vec::new()
        },
        verify_maps: match verify.map(|v| &v.maps) {
            Some(Ok(m)) => m.iter().map(Into::into).collect(),
            _ => Vec::new(),
        },
        verify_map_error: verify.and_then(|v| v.maps.as_ref().err().cloned()),
        verify_bad: verify.map(|v| v.bad.clone()).unwrap_or_default(),
        verify_journals: match verify.map(|v| &v.journals) {
            Some(Ok(j)) => j.iter().map(Into::into).collect(),
            _ => Vec::new(),
        },
        verify_journal_error: verify.and_then(|v| v.journals.as_ref().err().cloned()),
    })
}

fn stop(shared: &Shared, req: wire::StopRequest) -> Reply {
    let mut s = shared.lock();
    if s.run != req.run {
        return Err(unknown_run(&s, req.run));
    }
    let stopping = !s.done && s.runner.is_some();
    if let Some(r) = s.runner.as_mut() {
        r.stop();
    }
    shared.log(&format!("run {} stop asked: {}", req.run, req.reason));
    json(&wire::StopReply {
        run: req.run,
        stopping,
    })
}

fn result(shared: &Shared, req: wire::ResultRequest) -> Reply {
    let mut release = None;
    let reply = {
        let mut s = shared.lock();
        if s.run != req.run {
            return Err(unknown_run(&s, req.run));
        }
        let reply = wire::ResultReply {
            run: req.run,
            intervals: s.intervals.len() as u32,
            done: s.done,
            error: s.error.clone(),
        };
        match s.state {
            RunState::Finished => {
                s.state = RunState::Idle;
                s.intervals.clear();
            }
            RunState::Prepared => {
                release = s.runner.take();
                s.state = RunState::Idle;
            }
            RunState::Running => {
                if let Some(r) = s.runner.as_mut() {
                    r.stop();
                }
            }
            _ => {}
        }
        reply
    };
    if let Some(mut r) = release {
        r.finish();
    }
    json(&reply)
}

/// Stop a running run, or release a prepared one, whose controller has been
/// silent for the agent's idle timeout.
pub(super) fn watchdog_tick(shared: &Shared) {
    let mut release = None;
    {
        let mut s = shared.lock();
        let silent = s.last_contact.elapsed();
        if silent < shared.cfg.idle_timeout {
            return;
        }
        match s.state {
            RunState::Running if s.error.is_none() => {
                let msg = format!(
                    "controller silent for {:.0} s (limit {:?}); run {} stopped",
                    silent.as_secs_f64(),
                    shared.cfg.idle_timeout,
                    s.run
                );
                shared.log(&msg);
                s.error = Some(msg);
                if let Some(r) = s.runner.as_mut() {
                    r.stop();
                }
            }
            RunState::Prepared => {
                shared.log(&format!(
                    "controller silent before the start; run {} released",
                    s.run
                ));
                release = s.runner.take();
                s.state = RunState::Idle;
            }
            _ => {}
        }
    }
    if let Some(mut r) = release {
        r.finish();
    }
}

#[cfg(test)]
mod tests {
    //! The run state machine driven through `dispatch`, without HTTP: what
    //! each request does in each state, on the null target.
    use super::*;
    use crate::fleet::agent::test_config;
    use crate::runner::HostPlan;

    fn shared(allow: &[&str], idle: Duration) -> Arc<Shared> {
        Arc::new(Shared::new(test_config("t", None, allow, idle)))
    }

    /// An agent that allows the null target and waits a minute for a silent
    /// controller (longer than any of these tests).
    fn null_agent() -> Arc<Shared> {
        shared(&["null:"], Duration::from_secs(60))
    }

    fn spec(runtime_ms: u64) -> crate::workload::Spec {
        let mut s = crate::workload::test_spec(2, 1, 1);
        s.interval = Duration::from_millis(50);
        s.runtime = Duration::from_millis(runtime_ms);
        s
    }

    fn prepare_req(run: u64, runtime_ms: u64, target: &str) -> AgentRequest {
        AgentRequest::Prepare(Box::new(PrepareOrder {
            run,
            verify_run: 0,
            plan: HostPlan {
                spec: spec(runtime_ms),
                vms: vec![0, 1],
                targets: vec![Target::parse(target).unwrap()],
                threads: Some(1),
                allow_overwrite: false,
                lab_store: false,
            },
        }))
    }

    /// Prepare run `run` of `runtime_ms` on the null target; it must be accepted.
    fn prepare_null(sh: &Arc<Shared>, run: u64, runtime_ms: u64) -> wire::PrepareReply {
        reply(dispatch(sh, prepare_req(run, runtime_ms, "null:")))
    }

    /// Prepare run `run` of `runtime_ms` on the null target and start it;
    /// both must be accepted.
    fn start_null(sh: &Arc<Shared>, run: u64, runtime_ms: u64) {
        prepare_null(sh, run, runtime_ms);
        start_now(sh, run);
    }

    fn refusal(r: Reply) -> (u16, ErrorKind, String) {
        match r {
            Err(Refusal(status, kind, msg)) => (status, kind, msg),
            Ok(body) => panic!("expected a refusal, got {body}"),
        }
    }

    fn reply<T: serde::de::DeserializeOwned>(r: Reply) -> T {
        match r {
            Ok(body) => serde_json::from_str(&body).unwrap(),
            Err(Refusal(s, k, m)) => panic!("refused {s} {k:?}: {m}"),
        }
    }

    fn start_now(sh: &Arc<Shared>, run: u64) -> wire::StartReply {
        reply(dispatch(
            sh,
            AgentRequest::Start(wire::StartRequest {
                run,
                at_unix_ns: now_unix_ns() + 20_000_000,
            }),
        ))
    }

    /// Stop run `run` for `reason`; the stop must be accepted.
    fn stop_run(sh: &Arc<Shared>, run: u64, reason: &str) -> wire::StopReply {
        reply(dispatch(
            sh,
            AgentRequest::Stop(wire::StopRequest {
                run,
                reason: reason.into(),
            }),
        ))
    }

    /// Ask for run `run`'s result; it must be given.
    fn result_of(sh: &Arc<Shared>, run: u64) -> wire::ResultReply {
        reply(dispatch(
            sh,
            AgentRequest::Result(wire::ResultRequest { run }),
        ))
    }

    fn ask_intervals(sh: &Arc<Shared>, run: u64, from: u32, wait_ms: u32) -> Reply {
        dispatch(
            sh,
            AgentRequest::Intervals(wire::IntervalsRequest { run, from, wait_ms }),
        )
    }

    /// Poll intervals until the run says it is done, collecting them all.
    fn drain(sh: &Arc<Shared>, run: u64) -> (Vec<wire::WireInterval>, wire::IntervalsReply) {
        let mut got = Vec::new();
        for _ in 0..200 {
            let r: wire::IntervalsReply = reply(ask_intervals(sh, run, got.len() as u32, 500));
            got.extend(r.intervals.iter().cloned());
            if r.done {
                return (got, r);
            }
        }
        panic!("run {run} never finished");
    }

    #[test]
    fn a_run_goes_prepare_start_intervals_result_and_back_to_idle() {
        let sh = null_agent();
        let p = prepare_null(&sh, 7, 300);
        assert_eq!((p.run, p.threads), (7, 1));
        assert_eq!(sh.state(), RunState::Prepared);
        let s = start_now(&sh, 7);
        assert_eq!(s.run, 7);
        let (intervals, last) = drain(&sh, 7);
        // 300 ms of 50 ms intervals, every one shipped in order, none skipped.
        assert!(intervals.len() >= 6, "{} intervals", intervals.len());
        for (i, iv) in intervals.iter().enumerate() {
            assert_eq!(iv.index as usize, i);
        }
        assert_eq!(last.error, None);
        // Both VMs' workers come back once, with their totals, at the end.
        assert_eq!(last.workers.len(), 2);
        assert!(last.workers.iter().all(|w| w.stats.total_ios() > 0));
        let r = result_of(&sh, 7);
        assert!(r.done && r.error.is_none());
        assert_eq!(r.intervals as usize, intervals.len());
        assert_eq!(sh.state(), RunState::Idle);
    }

    #[test]
    fn requests_for_another_run_are_refused_naming_both_runs() {
        let sh = null_agent();
        let (status, _, msg) = refusal(dispatch(
            &sh,
            AgentRequest::Start(wire::StartRequest {
                run: 3,
                at_unix_ns: 0,
            }),
        ));
        assert_eq!(status, 400);
        assert!(
            msg.contains("unknown run 3") && msg.contains("run 0"),
            "{msg}"
        );
        prepare_null(&sh, 4, 100);
        for req in [
            AgentRequest::Intervals(wire::IntervalsRequest {
                run: 5,
                from: 0,
                wait_ms: 0,
            }),
            AgentRequest::Stop(wire::StopRequest {
                run: 5,
                reason: "t".into(),
            }),
            AgentRequest::Result(wire::ResultRequest { run: 5 }),
        ] {
            let (status, _, msg) = refusal(dispatch(&sh, req));
            assert_eq!(status, 400);
            assert!(
                msg.contains("unknown run 5") && msg.contains("run 4"),
                "{msg}"
            );
        }
        // The prepared run is untouched and can be released by its result.
        assert_eq!(sh.state(), RunState::Prepared);
        result_of(&sh, 4);
        assert_eq!(sh.state(), RunState::Idle);
    }

    #[test]
    fn a_second_prepare_while_running_is_busy_and_stop_ends_the_run() {
        let sh = null_agent();
        start_null(&sh, 1, 60_000);
        let (status, kind, msg) = refusal(dispatch(&sh, prepare_req(2, 100, "null:")));
        assert_eq!((status, kind), (409, ErrorKind::Busy));
        assert!(msg.contains("run 1"), "{msg}");
        let s = stop_run(&sh, 1, "test");
        assert!(s.stopping);
        // A minute-long run ends well before its time once stopped.
        let t0 = Instant::now();
        let (_, last) = drain(&sh, 1);
        assert!(last.done && t0.elapsed() < Duration::from_secs(20));
        // Stop again: idempotent, and it says nothing is stopping any more.
        let s = stop_run(&sh, 1, "again");
        assert!(!s.stopping);
    }

    #[test]
    fn targets_outside_the_allow_list_are_refused_and_hello_names_them() {
        let dir = crate::workload::testing::temp_dir("agent-runs");
        let sh = shared(&[dir.to_str().unwrap()], Duration::from_secs(60));
        let (status, kind, msg) = refusal(dispatch(&sh, prepare_req(1, 100, "null:")));
        assert_eq!((status, kind), (403, ErrorKind::NotAllowed));
        assert!(msg.contains("null:"), "{msg}");
        assert_eq!(sh.state(), RunState::Idle);
        let h: wire::HelloReply = reply(dispatch(
            &sh,
            AgentRequest::Hello(wire::HelloRequest {
                protocol: wire::PROTOCOL_VERSION,
                storlab_version: wire::STORLAB_VERSION.into(),
                controller_unix_ns: 0,
                targets: vec!["null:".into(), format!("file:{}", dir.display())],
            }),
        ));
        assert_eq!(h.refused_targets.len(), 1, "{:?}", h.refused_targets);
        assert!(h.refused_targets[0].contains("null:"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_watchdog_releases_a_prepared_run_and_stops_a_running_one() {
        let sh = shared(&["null:"], Duration::from_millis(1));
        prepare_null(&sh, 1, 60_000);
        std::thread::sleep(Duration::from_millis(5));
        watchdog_tick(&sh);
        assert_eq!(sh.state(), RunState::Idle);
        assert!(sh.lock().runner.is_none());

        start_null(&sh, 2, 60_000);
        std::thread::sleep(Duration::from_millis(5));
        watchdog_tick(&sh);
        let err = sh.lock().error.clone().unwrap_or_default();
        assert!(
            err.contains("controller silent") && err.contains("run 2"),
            "{err}"
        );
        let t0 = Instant::now();
        while sh.state() != RunState::Finished {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the run did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn start_is_for_a_prepared_run_only_and_result_stops_a_running_one() {
        let sh = null_agent();
        prepare_null(&sh, 1, 60_000);
        // Prepared, not started: intervals wait for nothing and say not done.
        let r: wire::IntervalsReply = reply(ask_intervals(&sh, 1, 0, 0));
        assert!(r.intervals.is_empty() && !r.done);
        start_now(&sh, 1);
        assert_eq!(sh.state(), RunState::Running);
        // A second start of the same run is refused, naming its state.
        let (status, kind, msg) = refusal(dispatch(
            &sh,
            AgentRequest::Start(wire::StartRequest {
                run: 1,
                at_unix_ns: now_unix_ns(),
            }),
        ));
        assert_eq!((status, kind), (400, ErrorKind::BadRequest));
        assert!(msg.contains("run 1, running"), "{msg}");
        // The result of a running run stops it; the slot keeps the run.
        let t0 = Instant::now();
        let r = result_of(&sh, 1);
        assert!(!r.done);
        let (_, last) = drain(&sh, 1);
        assert!(last.done && t0.elapsed() < Duration::from_secs(20));
        assert_eq!(sh.state(), RunState::Finished);
        let r = result_of(&sh, 1);
        assert!(r.done && r.error.is_none(), "{:?}", r.error);
        assert_eq!(sh.state(), RunState::Idle);
    }

    #[test]
    fn a_finished_run_left_uncollected_gives_way_to_the_next_prepare() {
        let sh = null_agent();
        start_null(&sh, 1, 100);
        let (intervals, _) = drain(&sh, 1);
        assert!(!intervals.is_empty());
        assert_eq!(sh.state(), RunState::Finished);
        let p = prepare_null(&sh, 2, 100);
        assert_eq!(p.run, 2);
        assert_eq!(sh.state(), RunState::Prepared);
        // Run 1 is gone with its intervals.
        let (status, _, msg) = refusal(ask_intervals(&sh, 1, 0, 0));
        assert_eq!(status, 400);
        assert!(
            msg.contains("unknown run 1") && msg.contains("run 2, prepared"),
            "{msg}"
        );
        assert!(sh.lock().intervals.is_empty());
        result_of(&sh, 2);
        assert_eq!(sh.state(), RunState::Idle);
    }

    #[test]
    fn a_journal_outside_the_allow_list_is_refused_before_any_state_changes() {
        let sh = null_agent();
        let AgentRequest::Prepare(mut order) = prepare_req(1, 100, "null:") else {
            unreachable!()
        };
        order.plan.spec.journal = Some("/nonexistent-storlab-dir/journal".into());
        let (status, kind, msg) = refusal(dispatch(&sh, AgentRequest::Prepare(order)));
        assert_eq!((status, kind), (403, ErrorKind::NotAllowed));
        // The agent's own journal file, named after it, is what is refused.
        assert!(
            msg.starts_with("journal: ")
                && msg.contains("/nonexistent-storlab-dir/journal.agent-t"),
            "{msg}"
        );
        assert_eq!(sh.state(), RunState::Idle);
        assert_eq!(sh.lock().run, 0);
    }
}
