//! The remote runner: one agent driven over HTTP, behind the same
//! [`HostRunner`] interface as the local runner. It measures the agent's clock
//! offset at check time, sends the start instant in the agent's clock, and
//! long-polls intervals on a thread; an agent that stops answering for
//! [`LOSS_TIMEOUT`] (or that forgot the run: it restarted) is reported lost.
//! With a [`TlsTrust`] (`--tls-ca`) it speaks HTTPS and accepts only an agent
//! certificate signed by (or equal to) the given one, for the agent's address.

use super::auth;
use super::wire::{self, ErrorKind, ErrorReply, paths};
use crate::runner::{HostCheck, HostEvent, HostPlan, HostPrepared, HostRunner, RunError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// An agent silent for this long during a run counts as lost.
pub const LOSS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one long poll waits on the agent.
const POLL_WAIT: Duration = Duration::from_millis(500);
/// Timeout of short requests (hello, start, stop, result).
const SHORT: Duration = Duration::from_secs(5);
/// Timeout of prepare, which may fill data files.
const PREPARE: Duration = Duration::from_secs(6 * 3600);

/// Why a request failed.
#[derive(Debug)]
enum CallError {
    /// No answer: connection refused or reset, timeout, DNS.
    Transport(String),
    /// The agent answered with a refusal.
    Refused(ErrorReply),
    /// An answer that is not the protocol.
    Garbled(String),
}

/// The certificates a controller trusts for agents over HTTPS: a CA, or an
/// agent's own self-signed certificate (`--tls-ca FILE`, PEM).
#[derive(Clone, Debug)]
pub struct TlsTrust {
    file: PathBuf,
    certs: Vec<ureq::tls::Certificate<'static>>,
}

impl TlsTrust {
    /// Read the PEM certificates in `path`; the error names the file.
    pub fn load(path: &Path) -> Result<TlsTrust, String> {
        let pem = std::fs::read(path)
            .map_err(|e| format!("--tls-ca {}: cannot read it: {e}", path.display()))?;
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(&pem) {
            match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
                Ok(_) => {}
                Err(e) => {
                    return Err(format!(
                        "--tls-ca {}: not a PEM certificate file: {e}",
                        path.display()
                    ));
                }
            }
        }
        if certs.is_empty() {
            return Err(format!(
                "--tls-ca {}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)",
                path.display()
            ));
        }
        Ok(TlsTrust {
            file: path.to_path_buf(),
            certs,
        })
    }

    /// The file it was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

/// One agent's address and credentials.
#[derive(Clone)]
struct Client {
    name: String,
    base: String,
    token: String,
    http: ureq::Agent,
}

impl Client {
    fn new(name: &str, token: &str, tls: Option<&TlsTrust>) -> Client {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(3)));
        if let Some(t) = tls {
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .provider(ureq::tls::TlsProvider::NativeTls)
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(t.certs.clone())))
                    .build(),
            );
        }
        Client {
            name: name.to_string(),
            base: format!("{}://{name}", if tls.is_some() { "https" } else { "http" }),
            token: token.to_string(),
            http: config.build().into(),
        }
    }

    fn call<Q: Serialize, R: DeserializeOwned>(
        &self,
        path: &str,
        body: &Q,
        timeout: Duration,
    ) -> Result<R, CallError> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header(wire::PROTOCOL_HEADER, wire::PROTOCOL_VERSION.to_string())
            .header(wire::VERSION_HEADER, wire::STORLAB_VERSION)
            .header("Authorization", auth::bearer(&self.token))
            .send_json(body)
            .map_err(|e| CallError::Transport(e.to_string()))?;
        let status = resp.status().as_u16();
        let text = resp
            .into_body()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .map_err(|e| CallError::Transport(e.to_string()))?;
        if status == 200 {
            return serde_json::from_str(&text)
                .map_err(|e| CallError::Garbled(format!("malformed answer to {path}: {e}")));
        }
        match serde_json::from_str::<ErrorReply>(&text) {
            Ok(r) => Err(CallError::Refused(r)),
            Err(_) => Err(CallError::Garbled(format!(
                "HTTP {status} to {path} without a storlab error (is this a storlab agent?): {}",
                text.chars().take(200).collect::<String>()
            ))),
        }
    }

    /// A [`RunError`] naming this agent.
    fn error(&self, what: &str, e: CallError) -> RunError {
        let host = &self.name;
        match e {
            CallError::Transport(m) => {
                RunError::Host(format!("agent {host} unreachable ({what}): {m}"))
            }
            CallError::Garbled(m) => RunError::Host(format!("agent {host} ({what}): {m}")),
            CallError::Refused(r) => {
                let msg = match r.kind {
                    ErrorKind::Auth => format!("agent {host} refused the token: {}", r.error),
                    _ => format!("agent {host} refused {what}: {}", r.error),
                };
                match r.kind {
                    ErrorKind::Version
                    | ErrorKind::Auth
                    | ErrorKind::NotAllowed
                    | ErrorKind::BadRequest
                    | ErrorKind::Busy => RunError::Refused(msg),
                    ErrorKind::Prepare => RunError::Prepare(msg),
                    ErrorKind::Failed => RunError::Open(msg),
                }
            }
        }
    }
}

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// An agent, driven over HTTP.
pub struct RemoteRunner {
    client: Client,
    run: u64,
    offset_ns: i64,
    rtt: Duration,
    stop: Arc<AtomicBool>,
    poll: Option<JoinHandle<()>>,
}

impl RemoteRunner {
    /// A runner for the agent at `host` (`HOST:PORT`), using `token`.
    pub fn new(host: &str, token: &str) -> Self {
        RemoteRunner {
            client: Client::new(host, token, None),
            run: 0,
            offset_ns: 0,
            rtt: Duration::ZERO,
            stop: Arc::new(AtomicBool::new(false)),
            poll: None,
        }
    }
}

impl RemoteRunner {
    /// Speak HTTPS to the agent, trusting `tls` (plain HTTP with `None`).
    pub fn with_tls(mut self, tls: Option<&TlsTrust>) -> Self {
        self.client = Client::new(&self.client.name, &self.client.token, tls);
        self
    }
}

impl HostRunner for RemoteRunner {
    fn name(&self) -> &str {
        &self.client.name
    }

    fn check(&mut self, plan: &HostPlan) -> Result<HostCheck, RunError> {
        // NTP-style: of a few hellos, trust the one with the shortest round trip.
        let mut best: Option<(Duration, u64, wire::HelloReply)> = None;
        for _ in 0..3 {
            let sent = Instant::now();
            let t1 = now_unix_ns();
            let req = wire::HelloRequest {
                protocol: wire::PROTOCOL_VERSION,
                storlab_version: wire::STORLAB_VERSION.into(),
                controller_unix_ns: t1,
                targets: plan.targets.iter().map(|t| t.to_string()).collect(),
            };
            let reply: wire::HelloReply = self
                .client
                .call(paths::HELLO, &req, SHORT)
                .map_err(|e| self.client.error("the hello", e))?;
            let rtt = sent.elapsed();
            if best.as_ref().is_none_or(|b| rtt < b.0) {
                best = Some((rtt, t1, reply));
            }
        }
        let (rtt, t1, reply) = best.expect("at least one hello");
        self.rtt = rtt;
        let host = &self.client.name;
        wire::check_version(
            wire::PROTOCOL_VERSION,
            wire::STORLAB_VERSION,
            reply.protocol,
            &reply.storlab_version,
            "this controller",
            &format!("agent {host}"),
        )
        .map_err(RunError::Refused)?;
        if !reply.refused_targets.is_empty() {
            return Err(RunError::Refused(format!(
                "agent {host} refuses: {}",
                reply.refused_targets.join("; ")
            )));
        }
        let mid = t1 + rtt.as_nanos() as u64 / 2;
        self.offset_ns = reply.agent_unix_ns as i64 - mid as i64;
        Ok(HostCheck {
            clock_offset_ns: self.offset_ns,
            version: reply.storlab_version,
        })
    }

    fn prepare(&mut self, plan: &HostPlan, _stop: &AtomicBool) -> Result<HostPrepared, RunError> {
        self.run = now_unix_ns() ^ ((std::process::id() as u64) << 32) | 1;
        let req = wire::PrepareRequest {
            run: self.run,
            spec: (&plan.spec).into(),
            vms: plan.vms.clone(),
            targets: plan.targets.iter().map(|t| t.to_string()).collect(),
            threads: plan.threads.map(|t| t as u32),
            allow_overwrite: plan.allow_overwrite,
            // One controller run is one verify run on every host.
            verify_run: crate::verify::run_id(),
        };
        let reply: wire::PrepareReply = self
            .client
            .call(paths::PREPARE, &req, PREPARE)
            .map_err(|e| self.client.error("the prepare", e))?;
        let host = &self.client.name;
        Ok(HostPrepared {
            backend: reply.backend,
            threads: reply.threads as usize,
            prepared: reply.prepared.into_iter().map(Into::into).collect(),
            notes: reply
                .notes
                .into_iter()
                .map(|n| format!("{host}: {n}"))
                .collect(),
        })
    }

    fn lead(&self) -> Duration {
        (self.rtt * 4).max(Duration::from_millis(200))
    }

    fn start(
        &mut self,
        at_unix_ns: u64,
        host: usize,
        events: Sender<HostEvent>,
    ) -> Result<(), RunError> {
        let at = (at_unix_ns as i64 + self.offset_ns).max(0) as u64;
        let req = wire::StartRequest {
            run: self.run,
            at_unix_ns: at,
        };
        let _: wire::StartReply = self
            .client
            .call(paths::START, &req, SHORT)
            .map_err(|e| self.client.error("the start", e))?;
        let (client, run, stop) = (self.client.clone(), self.run, Arc::clone(&self.stop));
        let h = std::thread::Builder::new()
            .name(format!("storlab-poll-{host}"))
            .spawn(move || poll(&client, run, host, &stop, &events))
            .map_err(|e| RunError::Host(format!("cannot start a poll thread: {e}")))?;
        self.poll = Some(h);
        Ok(())
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn finish(&mut self) {
        if let Some(h) = self.poll.take() {
            let _ = h.join();
        }
        if self.run != 0 {
            let _: Result<wire::ResultReply, _> =
                self.client
                    .call(paths::RESULT, &wire::ResultRequest { run: self.run }, SHORT);
            self.run = 0;
        }
    }
}

/// Long-poll the agent's intervals until it is done or lost.
fn poll(client: &Client, run: u64, host: usize, stop: &AtomicBool, events: &Sender<HostEvent>) {
    let mut from = 0u32;
    let mut last_ok = Instant::now();
    let mut stop_sent = false;
    let lost = |why: String| HostEvent::Lost {
        host,
        reason: format!("agent {} lost: {why}", client.name),
    };
    loop {
        if stop.load(Ordering::Relaxed) && !stop_sent {
            let req = wire::StopRequest {
                run,
                reason: "the controller stopped the point".into(),
            };
            stop_sent = client
                .call::<_, wire::StopReply>(paths::STOP, &req, SHORT)
                .is_ok();
        }
        let req = wire::IntervalsRequest {
            run,
            from,
            wait_ms: POLL_WAIT.as_millis() as u32,
        };
        match client.call::<_, wire::IntervalsReply>(paths::INTERVALS, &req, POLL_WAIT + SHORT) {
            Ok(r) => {
                last_ok = Instant::now();
                for iv in r.intervals {
                    from += 1;
                    let _ = events.send(HostEvent::Interval {
                        host,
                        interval: Box::new(iv.into()),
                    });
                }
                if r.done {
                    let workers = r.workers.into_iter().map(|w| (w.worker, w.stats)).collect();
                    let verify = (r.verify_map_error.is_some()
                        || !r.verify_maps.is_empty()
                        || !r.verify_bad.is_empty()
                        || !r.verify_journals.is_empty()
                        || r.verify_journal_error.is_some())
                    .then(|| crate::model::HostVerify {
                        maps: match r.verify_map_error {
                            Some(e) => Err(e),
                            None => Ok(r.verify_maps.into_iter().map(Into::into).collect()),
                        },
                        bad: r.verify_bad,
                        journals: match r.verify_journal_error {
                            Some(e) => Err(e),
                            None => Ok(r.verify_journals.into_iter().map(Into::into).collect()),
                        },
                    });
                    let _ = events.send(HostEvent::Done {
                        host,
                        error: r.error,
                        workers: Some(workers),
                        verify,
                    });
                    return;
                }
            }
            Err(CallError::Refused(r)) => {
                // The agent answers but no longer knows the run (restarted).
                let _ = events.send(lost(r.error));
                return;
            }
            Err(e) => {
                let silent = last_ok.elapsed();
                if silent >= LOSS_TIMEOUT {
                    let what = match e {
                        CallError::Transport(m) | CallError::Garbled(m) => m,
                        CallError::Refused(r) => r.error,
                    };
                    let _ = events.send(lost(format!(
                        "no answer for {:.1} s ({what}) after {from} interval(s)",
                        silent.as_secs_f64()
                    )));
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
