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

mod decode;
mod http;
mod runs;

pub use decode::{AgentRequest, DecodeError, PrepareOrder, decode_request};

use super::allow::Allowlist;
use super::auth;
use runs::Shared;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;
use tiny_http::Server;

/// Largest request body the agent reads, bytes; a larger one is refused with
/// HTTP 413 before it is read. A prepare request of a big job is a few kB.
pub const MAX_BODY: usize = 4 << 20;

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
        let shared = Arc::new(Shared::new(cfg));
        let mut threads = Vec::new();
        for i in 0..shared.cfg.handlers.max(2) {
            let (server, shared) = (Arc::clone(&server), Arc::clone(&shared));
            threads.push(
                std::thread::Builder::new()
                    .name(format!("storlab-agent-{i}"))
                    .spawn(move || http::serve(&server, &shared))
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
        self.shared.release_run();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// Stops or releases runs whose controller went silent.
fn watchdog(shared: &Shared) {
    while !shared.quit.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        runs::watchdog_tick(shared);
    }
}

/// The configuration the agent's tests use: `name`, `token`, `allow`,
/// `idle` as the controller timeout, two handlers, no TLS.
#[cfg(test)]
fn test_config(name: &str, token: Option<&str>, allow: &[&str], idle: Duration) -> AgentConfig {
    let entries: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    AgentConfig {
        name: name.into(),
        token: token.map(Into::into),
        tls: None,
        allow: Allowlist::new(&entries).unwrap(),
        idle_timeout: idle,
        handlers: 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(token: Option<&str>) -> AgentConfig {
        test_config("h1", token, &["null:"], Duration::from_secs(60))
    }

    #[test]
    fn a_non_loopback_address_needs_a_token() {
        let e = check_listen("192.0.2.1:7000", None).unwrap_err();
        assert!(
            e.contains("192.0.2.1:7000") && e.contains("--token-file"),
            "{e}"
        );
        assert!(check_listen("192.0.2.1:7000", Some(&"t".to_string())).is_ok());
        assert!(check_listen("127.0.0.1:0", None).is_ok());
        assert!(check_listen("[::1]:0", None).is_ok());
        let e = check_listen("no-port-here", None).unwrap_err();
        assert!(e.contains("cannot resolve --listen no-port-here"), "{e}");
        // Agent::start refuses before it listens.
        let e = Agent::start("0.0.0.0:0", config(None)).err().unwrap();
        assert!(e.contains("without a token"), "{e}");
    }

    #[test]
    fn tls_files_are_checked_naming_the_flag_and_the_file() {
        let dir = crate::workload::testing::temp_dir("agent-tls");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let e = AgentTls::load(&cert, &key).unwrap_err();
        assert!(
            e.starts_with(&format!("--tls-cert {}: cannot read it", cert.display())),
            "{e}"
        );
        std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nx\n").unwrap();
        std::fs::write(&key, "-----BEGIN CERTIFICATE-----\nx\n").unwrap();
        let e = AgentTls::load(&cert, &key).unwrap_err();
        assert!(
            e.starts_with(&format!("--tls-key {}", key.display())) && e.contains("PRIVATE KEY"),
            "{e}"
        );
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nsecret-key-bytes\n").unwrap();
        let tls = AgentTls::load(&cert, &key).unwrap();
        assert!(String::from_utf8_lossy(&tls.key_pem).contains("secret-key-bytes"));
        let shown = format!("{:?}", tls);
        assert!(shown.contains("cert.pem") && !shown.contains("secret-key-bytes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_configs_debug_never_shows_the_token() {
        let shown = format!("{:?}", config(Some("hunter2-token")));
        assert!(
            shown.contains("<redacted>") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert!(format!("{:?}", config(None)).contains("token: None"));
    }
}
