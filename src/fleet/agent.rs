//! The agent: a long-running daemon that runs its share of a load point on a
//! [`LocalRunner`] when a controller asks, and streams the intervals back.
//!
//! Every request is checked in this order: the peer's failed-authentication
//! limit ([`auth::FailureLimiter`], 429), protocol version, token, body size
//! ([`MAX_BODY`], 413), the body's shape ([`decode_request`], 400 naming the
//! field), then what it asks (targets against the allow list, symlinks
//! resolved, 403). The agent never runs a shell command: it only opens the
//! targets it was allowed. Without a token it listens on loopback only; with a
//! certificate and key it speaks HTTPS. A run whose controller goes silent for
//! `idle_timeout` is stopped (or, if not yet started, released), so a vanished
//! controller never leaves load running. See docs/security.md.

use super::allow::Allowlist;
use super::auth;
use super::metrics::Metrics;
use super::wire::{self, ErrorKind, ErrorReply, RunState, paths};
use crate::plan::{self, TargetKind};
use crate::runner::{HostEvent, HostPlan, HostRunner, LocalRunner, RunError, share};
use crate::stats::Snapshot;
use crate::target::Target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Read;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tiny_http::{Header, Method, Request, Response, Server};

/// Largest request body the agent reads, bytes; a larger one is refused with
/// HTTP 413 before it is read. A prepare request of a big job is a few kB.
pub const MAX_BODY: usize = 4 << 20;
/// Longest long-poll wait the agent grants.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// Most intervals in one reply.
const MAX_INTERVALS_PER_REPLY: usize = 256;

/// How an agent is set up (its `Debug` never shows the token).
#[derive(Clone)]
pub struct AgentConfig {
    /// Its name in replies, errors and metrics.
    pub name: String,
    /// The bearer token every request must carry; `None` only on loopback
    /// ([`Agent::start`] refuses any other address without one).
    pub token: Option<String>,
    /// Certificate and key: serve HTTPS instead of HTTP.
    pub tls: Option<AgentTls>,
    /// The targets it may touch.
    pub allow: Allowlist,
    /// Stop a run after this long without a request from the controller.
    pub idle_timeout: Duration,
    /// Request handler threads.
    pub handlers: usize,
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("name", &self.name)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("tls", &self.tls)
            .field("allow", &self.allow)
            .field("idle_timeout", &self.idle_timeout)
            .field("handlers", &self.handlers)
            .finish()
    }
}

/// The agent's TLS identity: a PEM certificate (chain) and its PEM private key.
#[derive(Clone)]
pub struct AgentTls {
    /// The certificate file (for messages).
    pub cert_file: PathBuf,
    /// PEM certificate chain.
    pub cert_pem: Vec<u8>,
    /// PEM private key.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for AgentTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        write!(f, "AgentTls {{ cert_file: {} }}", self.cert_file.display())
    }
}

impl AgentTls {
    /// Read `--tls-cert` and `--tls-key`; the error names the file and what it
    /// should hold.
    pub fn load(cert: &Path, key: &Path) -> Result<AgentTls, String> {
        let read = |p: &Path, flag: &str, what: &str| {
            let bytes = std::fs::read(p)
                .map_err(|e| format!("{flag} {}: cannot read it: {e}", p.display()))?;
            if !String::from_utf8_lossy(&bytes).contains(what) {
                return Err(format!(
                    "{flag} {}: no PEM {what} in it (expected a -----BEGIN ...{what}----- block)",
                    p.display()
                ));
            }
            Ok(bytes)
        };
        Ok(AgentTls {
            cert_file: cert.to_path_buf(),
            cert_pem: read(cert, "--tls-cert", "CERTIFICATE")?,
            key_pem: read(key, "--tls-key", "PRIVATE KEY")?,
        })
    }
}

/// Refuse to listen on a non-loopback address without a token.
fn check_listen(listen: &str, token: Option<&String>) -> Result<(), String> {
    if token.is_some() {
        return Ok(());
    }
    let addrs: Vec<std::net::SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve --listen {listen}: {e}"))?
        .collect();
    match addrs.iter().find(|a| !a.ip().is_loopback()) {
        Some(a) => Err(format!(
            "refusing to listen on {listen} ({a}) without a token: anyone who can reach it \
             could run load on this host. Pass --token-file FILE (the same file as the \
             controller's --token-file), or listen on a loopback address (127.0.0.1:PORT, [::1]:PORT)"
        )),
        None if addrs.is_empty() => Err(format!("--listen {listen} resolves to no address")),
        None => Ok(()),
    }
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
    /// Where the finished run saved its verify maps, and its bad blocks.
    verify: Option<crate::model::HostVerify>,
    last_contact: Instant,
}

struct Shared {
    cfg: AgentConfig,
    slot: Mutex<Slot>,
    changed: Condvar,
    metrics: Metrics,
    limiter: auth::FailureLimiter,
    quit: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn log(&self, msg: &str) {
        eprintln!("storlab agent {}: {msg}", self.cfg.name);
    }

    /// Whether `req` carries the token (always, on a tokenless loopback agent).
    fn authorized(&self, req: &Request) -> bool {
        match &self.cfg.token {
            Some(t) => auth::authorized(header(req, "Authorization"), t),
            None => true,
        }
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
    /// Listen on `listen` (`ADDR:PORT`; port 0 picks one) and start serving;
    /// refuses a non-loopback address when `cfg.token` is `None`.
    pub fn start(listen: &str, cfg: AgentConfig) -> Result<Agent, String> {
        check_listen(listen, cfg.token.as_ref())?;
        let server = match &cfg.tls {
            None => Server::http(listen),
            Some(t) => Server::https(
                listen,
                tiny_http::SslConfig {
                    certificate: t.cert_pem.clone(),
                    private_key: t.key_pem.clone(),
                },
            ),
        }
        .map_err(|e| match &cfg.tls {
            None => format!("cannot listen on {listen}: {e}"),
            Some(t) => format!(
                "cannot listen on {listen} with TLS (certificate {}): {e}",
                t.cert_file.display()
            ),
        })?;
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
                verify: None,
                last_contact: Instant::now(),
            }),
            changed: Condvar::new(),
            metrics: Metrics::default(),
            limiter: auth::FailureLimiter::default(),
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
            Ok(Some(req)) => {
                // A bug in one request must not cost the agent a handler thread.
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(shared, req)));
                if r.is_err() {
                    shared.log("a request handler panicked; that request was dropped");
                }
            }
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
    respond_with(req, status, body, content_type, None)
}

fn respond_with(
    req: Request,
    status: u16,
    body: String,
    content_type: &str,
    extra: Option<Header>,
) {
    let ct = Header::from_bytes("Content-Type", content_type).expect("valid header");
    let mut resp = Response::from_string(body)
        .with_status_code(status)
        .with_header(ct);
    if let Some(h) = extra {
        resp = resp.with_header(h);
    }
    let _ = req.respond(resp);
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
    let peer_ip: Option<IpAddr> = req.remote_addr().map(|a| a.ip());
    let peer = req
        .remote_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|| "?".into());
    if let Some(left) = peer_ip.and_then(|ip| shared.limiter.blocked(ip, Instant::now())) {
        shared.metrics.refused();
        let secs = left.as_secs().max(1);
        let body = refusal_body(
            shared,
            ErrorKind::Auth,
            format!(
                "too many failed authentications from {}: {} within {} s; retry in {secs} s",
                peer_ip.map(|ip| ip.to_string()).unwrap_or_default(),
                auth::MAX_AUTH_FAILURES,
                auth::FAILURE_WINDOW.as_secs()
            ),
        );
        let retry = Header::from_bytes("Retry-After", secs.to_string()).expect("valid header");
        return respond_with(req, 429, body, "application/json", Some(retry));
    }
    if path == paths::METRICS && *req.method() == Method::Get {
        if !shared.authorized(&req) {
            shared.metrics.refused();
            if let Some(ip) = peer_ip {
                shared.limiter.failed(ip, Instant::now());
            }
            return respond(
                req,
                401,
                "wrong or missing bearer token\n".into(),
                "text/plain",
            );
        }
        if let Some(ip) = peer_ip {
            shared.limiter.succeeded(ip);
        }
        let state = shared.lock().state;
        let body = shared.metrics.render(&shared.cfg.name, state);
        return respond(req, 200, body, "text/plain; version=0.0.4");
    }
    let checked = check_request(shared, &req);
    if let Some(ip) = peer_ip {
        match &checked {
            Err(Refusal(_, ErrorKind::Auth, _)) => shared.limiter.failed(ip, Instant::now()),
            Ok(()) => shared.limiter.succeeded(ip),
            Err(_) => {}
        }
    }
    let result = checked.and_then(|()| {
        if *req.method() != Method::Post {
            return Err(Refusal(
                405,
                ErrorKind::BadRequest,
                format!("{path} takes POST"),
            ));
        }
        let body = read_body(&mut req, &path)?;
        shared.lock().last_contact = Instant::now();
        let decoded = decode_request(&path, &body)
            .map_err(|e| Refusal(e.status, ErrorKind::BadRequest, e.message))?;
        dispatch(shared, decoded)
    });
    match result {
        Ok(body) => respond(req, 200, body, "application/json"),
        Err(Refusal(status, kind, error)) => {
            if matches!(
                kind,
                ErrorKind::Version | ErrorKind::Auth | ErrorKind::NotAllowed
            ) || status == 413
            {
                shared.metrics.refused();
            }
            shared.log(&format!("refused {path} from {peer}: {error}"));
            let body = refusal_body(shared, kind, error);
            // A body left unread (413) would be parsed as the next request.
            let close = (status == 413)
                .then(|| Header::from_bytes("Connection", "close").expect("valid header"));
            respond_with(req, status, body, "application/json", close)
        }
    }
}

/// Read a request body of at most [`MAX_BODY`] bytes; a declared or actual
/// larger one is refused (413) without reading more than the limit.
fn read_body(req: &mut Request, path: &str) -> Result<Vec<u8>, Refusal> {
    let too_big = |n: &str| {
        Refusal(
            413,
            ErrorKind::BadRequest,
            format!("{path} body of {n} bytes is over the agent's limit of {MAX_BODY} bytes"),
        )
    };
    if let Some(n) = req.body_length()
        && n > MAX_BODY
    {
        return Err(too_big(&n.to_string()));
    }
    let mut body = Vec::new();
    req.as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| Refusal(400, ErrorKind::BadRequest, format!("reading the body: {e}")))?;
    if body.len() > MAX_BODY {
        return Err(too_big("more than"));
    }
    Ok(body)
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
    if !shared.authorized(req) {
        return Err(Refusal(
            401,
            ErrorKind::Auth,
            "wrong or missing bearer token".into(),
        ));
    }
    Ok(())
}

/// A request body refused before the agent acts on it: the HTTP status
/// (400 malformed, 404 unknown path, 413 too large) and why, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// HTTP status.
    pub status: u16,
    /// What is wrong, naming the path and the field.
    pub message: String,
}

/// A decoded request, with every check that needs neither state nor storage
/// done (the load point validated, VM numbers in range and ascending, target
/// URLs parsed).
#[derive(Debug)]
pub enum AgentRequest {
    /// `/v1/hello`.
    Hello(wire::HelloRequest),
    /// `/v1/prepare`, with its targets parsed.
    Prepare(Box<wire::PrepareRequest>, Vec<Target>),
    /// `/v1/start`.
    Start(wire::StartRequest),
    /// `/v1/intervals`.
    Intervals(wire::IntervalsRequest),
    /// `/v1/stop`.
    Stop(wire::StopRequest),
    /// `/v1/result`.
    Result(wire::ResultRequest),
}

/// Decode the body of a `POST` to `path`: pure (no state, no storage), so it
/// is what the fuzz target `agent_request` exercises.
pub fn decode_request(path: &str, body: &[u8]) -> Result<AgentRequest, DecodeError> {
    let bad = |message: String| DecodeError {
        status: 400,
        message,
    };
    if body.len() > MAX_BODY {
        return Err(DecodeError {
            status: 413,
            message: format!(
                "{path} body of {} bytes is over the agent's limit of {MAX_BODY} bytes",
                body.len()
            ),
        });
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| bad(format!("{path} body is not UTF-8 JSON: {e}")))?;
    Ok(match path {
        paths::HELLO => AgentRequest::Hello(parse(path, text)?),
        paths::PREPARE => {
            let req: wire::PrepareRequest = parse(path, text)?;
            let targets = check_prepare(&req).map_err(bad)?;
            AgentRequest::Prepare(Box::new(req), targets)
        }
        paths::START => AgentRequest::Start(parse(path, text)?),
        paths::INTERVALS => AgentRequest::Intervals(parse(path, text)?),
        paths::STOP => AgentRequest::Stop(parse(path, text)?),
        paths::RESULT => AgentRequest::Result(parse(path, text)?),
        other => {
            return Err(DecodeError {
                status: 404,
                message: format!(
                    "no such path {other:?} (allowed: {}, {}, {}, {}, {}, {}; GET {})",
                    paths::HELLO,
                    paths::PREPARE,
                    paths::START,
                    paths::INTERVALS,
                    paths::STOP,
                    paths::RESULT,
                    paths::METRICS
                ),
            });
        }
    })
}

/// JSON into `T`; the error names the field (`spec.groups[0].bs`).
fn parse<T: DeserializeOwned>(path: &str, text: &str) -> Result<T, DecodeError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let fail = |field: String, e: serde_json::Error| DecodeError {
        status: 400,
        message: if field.is_empty() || field == "." {
            format!("malformed {path} body: {e}")
        } else {
            format!("malformed {path} body: field {field}: {e}")
        },
    };
    let v: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| fail(e.path().to_string(), e.into_inner()))?;
    de.end().map_err(|e| fail(String::new(), e))?;
    Ok(v)
}

/// The checks of a prepare request that need no state: the load point is
/// valid, the VM numbers exist and ascend, threads > 0, the targets parse.
fn check_prepare(req: &wire::PrepareRequest) -> Result<Vec<Target>, String> {
    // The same checks as a local run: the controller may be another build.
    crate::workload::validate::validate(&req.spec)
        .map_err(|e| format!("invalid load point: {e}"))?;
    let total_vms = req.spec.total_vms();
    if let Some(v) = req.vms.iter().find(|&&v| v as u64 >= total_vms) {
        return Err(format!(
            "field vms: VM {v} asked for, the load point has {total_vms}"
        ));
    }
    if !req.vms.windows(2).all(|w| w[0] < w[1]) {
        return Err("field vms: VM numbers not strictly ascending".into());
    }
    if req.threads == Some(0) {
        return Err("field threads: 0 (allowed: 1 or more, or null for the agent's CPUs)".into());
    }
    req.targets
        .iter()
        .map(|t| Target::parse(t).map_err(|e| format!("field targets: {e}")))
        .collect()
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

fn dispatch(shared: &Arc<Shared>, req: AgentRequest) -> Reply {
    match req {
        AgentRequest::Hello(r) => hello(shared, r),
        AgentRequest::Prepare(r, targets) => prepare(shared, *r, targets),
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

fn prepare(shared: &Shared, mut req: wire::PrepareRequest, targets: Vec<Target>) -> Reply {
    for t in &targets {
        shared
            .cfg
            .allow
            .check_target(t)
            .map_err(|e| Refusal(403, ErrorKind::NotAllowed, e))?;
    }
    // The durability journal is this agent's own file (FILE.agent-NAME, so
    // two agents on one host never share one), which it would write: allowed
    // paths only.
    if let Some(j) = &mut req.spec.journal {
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
        s.verify = None;
        s.runner.take()
    };
    if let Some(mut r) = old {
        r.finish();
    }
    // One controller run is one verify run: its points continue one map here,
    // and the next controller run starts afresh (crate::verify::set_run_id).
    if req.spec.verify || req.spec.journal.is_some() {
        crate::verify::set_run_id(req.verify_run);
    }
    let plan = HostPlan {
        spec: req.spec,
        vms: req.vms,
        targets,
        threads: req.threads.map(|t| t as usize),
        allow_overwrite: req.allow_overwrite,
    };
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
        verify_maps: match s.verify.as_ref().map(|v| &v.maps) {
            Some(Ok(m)) if s.done && all_sent => m.iter().map(Into::into).collect(),
            _ => Vec::new(),
        },
        verify_map_error: match s.verify.as_ref().map(|v| &v.maps) {
            Some(Err(e)) if s.done && all_sent => Some(e.clone()),
            _ => None,
        },
        verify_bad: match &s.verify {
            Some(v) if s.done && all_sent => v.bad.clone(),
            _ => Vec::new(),
        },
        verify_journals: match s.verify.as_ref().map(|v| &v.journals) {
            Some(Ok(j)) if s.done && all_sent => j.iter().map(Into::into).collect(),
            _ => Vec::new(),
        },
        verify_journal_error: match s.verify.as_ref().map(|v| &v.journals) {
            Some(Err(e)) if s.done && all_sent => Some(e.clone()),
            _ => None,
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
