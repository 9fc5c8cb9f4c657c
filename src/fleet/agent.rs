//! The agent: a long-running daemon that runs its share of a load point on a
//! [`LocalRunner`] when a controller asks, and streams the intervals back.
//!
//! Every request is checked in this order: protocol version, token, then
//! what it asks (targets against the allow list, symlinks resolved). The agent
//! never runs a shell command: it only opens the targets it was allowed. A run
//! whose controller goes silent for `idle_timeout` is stopped (or, if not yet
//! started, released), so a vanished controller never leaves load running.

use super::allow::Allowlist;
use super::auth;
use super::metrics::Metrics;
use super::wire::{self, ErrorKind, ErrorReply, RunState, paths};
use crate::backends::target::Target;
use crate::engine::plan::{self, TargetKind};
use crate::engine::runner::{HostEvent, HostPlan, HostRunner, LocalRunner, RunError, share};
use crate::stats::Snapshot;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tiny_http::{Header, Method, Request, Response, Server};

/// Largest request body the agent reads.
const MAX_BODY: u64 = 64 << 20;
/// Longest long-poll wait the agent grants.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// Most intervals in one reply.
const MAX_INTERVALS_PER_REPLY: usize = 256;

/// How an agent is set up.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Its name in replies, errors and metrics.
    pub name: String,
    /// The bearer token every request must carry.
    pub token: String,
    /// The targets it may touch.
    pub allow: Allowlist,
    /// Stop a run after this long without a request from the controller.
    pub idle_timeout: Duration,
    /// Request handler threads.
    pub handlers: usize,
}

/// The agent's one run slot.
struct Slot {
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
    last_contact: Instant,
}

struct Shared {
    cfg: AgentConfig,
    slot: Mutex<Slot>,
    changed: Condvar,
    metrics: Metrics,
    quit: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn log(&self, msg: &str) {
        eprintln!("storlab agent {}: {msg}", self.cfg.name);
    }
}

/// A refusal: HTTP status and body.
struct Refusal(u16, ErrorKind, String);

type Reply = Result<String, Refusal>;

/// A running agent.
pub struct Agent {
    server: Arc<Server>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Agent {
    /// Listen on `listen` (`ADDR:PORT`; port 0 picks one) and start serving.
    pub fn start(listen: &str, cfg: AgentConfig) -> Result<Agent, String> {
        let server = Server::http(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let server = Arc::new(server);
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                run: 0,
                state: RunState::Idle,
                runner: None,
                intervals: Vec::new(),
                workers: Vec::new(),
                ramp_intervals: 0,
                done: false,
                error: None,
                last_contact: Instant::now(),
            }),
            changed: Condvar::new(),
            metrics: Metrics::default(),
            quit: AtomicBool::new(false),
            cfg,
        });
        let mut threads = Vec::new();
        for i in 0..shared.cfg.handlers.max(2) {
            let (server, shared) = (Arc::clone(&server), Arc::clone(&shared));
            threads.push(
                std::thread::Builder::new()
                    .name(format!("storlab-agent-{i}"))
                    .spawn(move || serve(&server, &shared))
                    .map_err(|e| format!("cannot start a handler thread: {e}"))?,
            );
        }
        let sh = Arc::clone(&shared);
        threads.push(
            std::thread::Builder::new()
                .name("storlab-agent-watchdog".into())
                .spawn(move || watchdog(&sh))
                .map_err(|e| format!("cannot start the watchdog thread: {e}"))?,
        );
        Ok(Agent {
            server,
            shared,
            threads,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> String {
        match self.server.server_addr().to_ip() {
            Some(a) => a.to_string(),
            None => "?".into(),
        }
    }

    /// Serve until the process ends.
    pub fn wait(mut self) {
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }

    /// Stop serving: a running run is stopped and released.
    pub fn shutdown(mut self) {
        self.shared.quit.store(true, Ordering::SeqCst);
        self.server.unblock();
        let runner = {
            let mut s = self.shared.lock();
            if let Some(r) = s.runner.as_mut() {
                r.stop();
            }
            s.runner.take()
        };
        if let Some(mut r) = runner {
            r.finish();
        }
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

fn serve(server: &Server, shared: &Arc<Shared>) {
    while !shared.quit.load(Ordering::Relaxed) {
        match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(req)) => handle(shared, req),
            Ok(None) => {}
            Err(_) => break,
        }
    }
}

/// Stops or releases runs whose controller went silent.
fn watchdog(shared: &Shared) {
    while !shared.quit.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let mut release = None;
        {
            let mut s = shared.lock();
            let silent = s.last_contact.elapsed();
            if silent < shared.cfg.idle_timeout {
                continue;
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
}

fn header<'a>(req: &'a Request, name: &'static str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

fn respond(req: Request, status: u16, body: String, content_type: &str) {
    let ct = Header::from_bytes("Content-Type", content_type).expect("valid header");
    let _ = req.respond(
        Response::from_string(body)
            .with_status_code(status)
            .with_header(ct),
    );
}

fn refusal_body(shared: &Shared, kind: ErrorKind, error: String) -> String {
    serde_json::to_string(&ErrorReply {
        protocol: wire::PROTOCOL_VERSION,
        storlab_version: wire::STORLAB_VERSION.into(),
        host: shared.cfg.name.clone(),
        kind,
        error,
    })
    .unwrap_or_default()
}

fn handle(shared: &Arc<Shared>, mut req: Request) {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let peer = req
        .remote_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|| "?".into());
    if path == paths::METRICS && *req.method() == Method::Get {
        if !auth::authorized(header(&req, "Authorization"), &shared.cfg.token) {
            shared.metrics.refused();
            return respond(
                req,
                401,
                "wrong or missing bearer token\n".into(),
                "text/plain",
            );
        }
        let state = shared.lock().state;
        let body = shared.metrics.render(&shared.cfg.name, state);
        return respond(req, 200, body, "text/plain; version=0.0.4");
    }
    let result = check_request(shared, &req).and_then(|()| {
        if *req.method() != Method::Post {
            return Err(Refusal(
                405,
                ErrorKind::BadRequest,
                format!("{path} takes POST"),
            ));
        }
        let mut body = String::new();
        req.as_reader()
            .take(MAX_BODY)
            .read_to_string(&mut body)
            .map_err(|e| Refusal(400, ErrorKind::BadRequest, format!("reading the body: {e}")))?;
        shared.lock().last_contact = Instant::now();
        dispatch(shared, &path, &body)
    });
    match result {
        Ok(body) => respond(req, 200, body, "application/json"),
        Err(Refusal(status, kind, error)) => {
            if matches!(
                kind,
                ErrorKind::Version | ErrorKind::Auth | ErrorKind::NotAllowed
            ) {
                shared.metrics.refused();
            }
            shared.log(&format!("refused {path} from {peer}: {error}"));
            let body = refusal_body(shared, kind, error);
            respond(req, status, body, "application/json")
        }
    }
}

/// Protocol version first, then the token.
fn check_request(shared: &Shared, req: &Request) -> Result<(), Refusal> {
    let theirs = header(req, wire::PROTOCOL_HEADER);
    let release = header(req, wire::VERSION_HEADER).unwrap_or("unknown");
    let Some(theirs) = theirs.and_then(|v| v.trim().parse::<u32>().ok()) else {
        return Err(Refusal(
            400,
            ErrorKind::Version,
            format!(
                "request without a valid {} header: not a storlab controller? (agent speaks protocol {}, storlab {})",
                wire::PROTOCOL_HEADER,
                wire::PROTOCOL_VERSION,
                wire::STORLAB_VERSION
            ),
        ));
    };
    wire::check_version(
        wire::PROTOCOL_VERSION,
        wire::STORLAB_VERSION,
        theirs,
        release,
        &format!("agent {}", shared.cfg.name),
        "the controller",
    )
    .map_err(|e| Refusal(409, ErrorKind::Version, e))?;
    if !auth::authorized(header(req, "Authorization"), &shared.cfg.token) {
        return Err(Refusal(
            401,
            ErrorKind::Auth,
            "wrong or missing bearer token".into(),
        ));
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(path: &str, body: &str) -> Result<T, Refusal> {
    serde_json::from_str(body).map_err(|e| {
        Refusal(
            400,
            ErrorKind::BadRequest,
            format!("malformed {path} body: {e}"),
        )
    })
}

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

fn dispatch(shared: &Arc<Shared>, path: &str, body: &str) -> Reply {
    match path {
        paths::HELLO => hello(shared, parse(path, body)?),
        paths::PREPARE => prepare(shared, parse(path, body)?),
        paths::START => start(shared, parse(path, body)?),
        paths::INTERVALS => intervals(shared, parse(path, body)?),
        paths::STOP => stop(shared, parse(path, body)?),
        paths::RESULT => result(shared, parse(path, body)?),
        other => Err(Refusal(
            404,
            ErrorKind::BadRequest,
            format!("no such path {other}"),
        )),
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

fn prepare(shared: &Shared, req: wire::PrepareRequest) -> Reply {
    // The same checks as a local run: the controller may be another build.
    crate::workload::validate::validate(&req.spec).map_err(|e| {
        Refusal(
            400,
            ErrorKind::BadRequest,
            format!("invalid load point: {e}"),
        )
    })?;
    let total_vms = req.spec.total_vms();
    if let Some(v) = req.vms.iter().find(|&&v| v as u64 >= total_vms) {
        return Err(Refusal(
            400,
            ErrorKind::BadRequest,
            format!("VM {v} asked for, the load point has {total_vms}"),
        ));
    }
    if !req.vms.is_sorted() {
        return Err(Refusal(
            400,
            ErrorKind::BadRequest,
            "VM numbers not ascending".into(),
        ));
    }
    let targets: Vec<Target> = req
        .targets
        .iter()
        .map(|t| allowed_target(shared, t))
        .collect::<Result<_, _>>()
        .map_err(|e| Refusal(403, ErrorKind::NotAllowed, e))?;
    // Every disk path the share will open must be allowed too (a file inside
    // an allowed directory may be a symlink out of it).
    if !targets.is_empty() {
        let kinds: Vec<(Target, TargetKind)> = targets
            .iter()
            .map(|t| (t.clone(), plan::target_kind(t)))
            .collect();
        let p = share::host_plan(&req.spec, &kinds, &req.vms, 1);
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
        s.run = req.run;
        s.state = RunState::Preparing;
        s.intervals.clear();
        s.workers.clear();
        s.ramp_intervals = req.spec.ramp_intervals();
        s.done = false;
        s.error = None;
        s.runner.take()
    };
    if let Some(mut r) = old {
        r.finish();
    }
    let plan = HostPlan {
        spec: req.spec,
        vms: req.vms,
        targets,
        threads: req.threads.map(|t| t as usize),
        allow_overwrite: req.allow_overwrite,
    };
    let mut runner = LocalRunner::new(shared.cfg.name.clone());
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
                req.run,
                plan.vms.len(),
                p.threads,
                p.backend
            ));
            json(&wire::PrepareReply {
                run: req.run,
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
    let runner = {
        let mut s = shared.lock();
        if s.run != run {
            return;
        }
        s.done = true;
        s.state = RunState::Finished;
        shared.changed.notify_all();
        s.runner.take()
    };
    if let Some(mut r) = runner {
        r.finish();
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
    json(&wire::IntervalsReply {
        run: req.run,
        intervals: s.intervals[from..to].to_vec(),
        done: s.done && all_sent,
        error: if s.done && all_sent {
            s.error.clone()
        } else {
            None
        },
        workers: if s.done && all_sent {
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
