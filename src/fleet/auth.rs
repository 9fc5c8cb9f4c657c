//! The shared token: read from a file, sent as `Authorization: Bearer`, and
//! compared in constant time so a wrong guess learns nothing from timing; and
//! the limit on failed authentications per peer ([`FailureLimiter`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed authentications a peer address may make within [`FAILURE_WINDOW`];
/// past that, every request from it is answered 429 without looking at its
/// token until the window ends.
pub const MAX_AUTH_FAILURES: u32 = 5;
/// The window over which [`MAX_AUTH_FAILURES`] counts, from a peer's first
/// failure; it is also the longest a blocked peer waits.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Peer addresses tracked at once; past that, expired entries are dropped and
/// then the oldest, so a flood of addresses cannot grow memory without bound.
pub const MAX_TRACKED_PEERS: usize = 4096;

/// Write a fresh random token (32 bytes from /dev/urandom as 64 hex digits)
/// to `path`, mode 0600; the error names the file.
pub fn write_token(path: &Path) -> Result<(), String> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .map_err(|e| format!("cannot read /dev/urandom for the agent token: {e}"))?;
    let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let err = |e: std::io::Error| format!("cannot write token file {}: {e}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(err)?;
    f.write_all(format!("{token}\n").as_bytes()).map_err(err)
}

/// Read a token file: its first line, trimmed; refuses an empty one.
pub fn load_token(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read token file {}: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(format!(
            "token file {} is empty (put one line of random text in it, e.g. `head -c 32 /dev/urandom | base64 > {}`)",
            path.display(),
            path.display()
        ));
    }
    if token.len() < 16 {
        return Err(format!(
            "token in {} is {} characters; use at least 16",
            path.display(),
            token.len()
        ));
    }
    Ok(token)
}

/// The `Authorization` header value for `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Whether the `Authorization` header value `header` carries `token`.
/// Time depends only on the lengths, never on where the bytes differ.
pub fn authorized(header: Option<&str>, token: &str) -> bool {
    let given = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("")
        .as_bytes();
    constant_time_eq(given, token.as_bytes())
}

/// Byte-string equality that reads every byte of the longer input.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= (x ^ y) as u64;
    }
    std::hint::black_box(diff) == 0
}

/// Counts failed authentications per peer address (one IP, any port) and
/// blocks a peer that made [`MAX_AUTH_FAILURES`] within [`FAILURE_WINDOW`].
#[derive(Debug, Default)]
pub struct FailureLimiter {
    /// Peer → (its window's start, failures in it).
    peers: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl FailureLimiter {
    /// `Some(time left)` when `peer` is blocked at `now`: answer 429 without
    /// checking its token.
    pub fn blocked(&self, peer: IpAddr, now: Instant) -> Option<Duration> {
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let &(start, failures) = peers.get(&peer)?;
        let end = start + FAILURE_WINDOW;
        (failures >= MAX_AUTH_FAILURES && now < end).then(|| end - now)
    }

    /// Record a failed authentication of `peer` at `now`.
    pub fn failed(&self, peer: IpAddr, now: Instant) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if peers.len() >= MAX_TRACKED_PEERS && !peers.contains_key(&peer) {
            peers.retain(|_, (start, _)| now.duration_since(*start) < FAILURE_WINDOW);
            if peers.len() >= MAX_TRACKED_PEERS
                && let Some(oldest) = peers.iter().min_by_key(|(_, (s, _))| *s).map(|(k, _)| *k)
            {
                peers.remove(&oldest);
            }
        }
        let e = peers.entry(peer).or_insert((now, 0));
        if now.duration_since(e.0) >= FAILURE_WINDOW {
            *e = (now, 0);
        }
        e.1 = e.1.saturating_add(1);
    }

    /// Record a successful authentication: `peer`'s failures are forgotten.
    pub fn succeeded(&self, peer: IpAddr) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.remove(&peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_block_a_peer_for_the_window_only() {
        let l = FailureLimiter::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for i in 0..MAX_AUTH_FAILURES {
            assert!(l.blocked(a, t0).is_none(), "blocked after {i} failures");
            l.failed(a, t0 + Duration::from_secs(i as u64));
        }
        let left = l.blocked(a, t0 + Duration::from_secs(10)).unwrap();
        assert_eq!(left, FAILURE_WINDOW - Duration::from_secs(10));
        assert!(l.blocked(b, t0).is_none(), "another peer is not blocked");
        assert!(l.blocked(a, t0 + FAILURE_WINDOW).is_none(), "window over");
        // A new window after the old one: counting starts again.
        l.failed(a, t0 + FAILURE_WINDOW);
        assert!(l.blocked(a, t0 + FAILURE_WINDOW).is_none());
        // Success forgets the failures.
        for _ in 0..MAX_AUTH_FAILURES - 1 {
            l.failed(b, t0);
        }
        l.succeeded(b);
        l.failed(b, t0);
        assert!(l.blocked(b, t0).is_none());
    }

    #[test]
    fn tracked_peers_stay_bounded() {
        let l = FailureLimiter::default();
        let t0 = Instant::now();
        for i in 0..(MAX_TRACKED_PEERS as u32 + 100) {
            l.failed(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(l.peers.lock().unwrap().len() <= MAX_TRACKED_PEERS);
    }

    #[test]
    fn bearer_tokens_compare() {
        let t = "0123456789abcdef-token";
        assert!(authorized(Some(&bearer(t)), t));
        assert!(!authorized(Some(&bearer("0123456789abcdef-tokem")), t));
        assert!(!authorized(Some(&bearer("0123456789abcdef-token2")), t));
        assert!(!authorized(Some(t), t));
        assert!(!authorized(None, t));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"a", b""));
    }

    #[test]
    fn token_file_rules() {
        let dir = crate::workload::testing::temp_dir("auth");
        let f = dir.join("t");
        std::fs::write(&f, "  \n").unwrap();
        assert!(load_token(&f).unwrap_err().contains("empty"));
        std::fs::write(&f, "short\n").unwrap();
        assert!(load_token(&f).unwrap_err().contains("at least 16"));
        std::fs::write(&f, "a-long-enough-token\nignored\n").unwrap();
        assert_eq!(load_token(&f).unwrap(), "a-long-enough-token");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_written_token_is_private_and_loads() {
        use std::os::unix::fs::PermissionsExt;
        let dir = crate::workload::testing::temp_dir("token");
        let p = dir.join("agent.token");
        write_token(&p).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let t = load_token(&p).unwrap();
        assert_eq!(t.len(), 64);
        assert!(t.chars().all(|c| c.is_ascii_hexdigit()));
        write_token(&p).unwrap();
        assert_ne!(load_token(&p).unwrap(), t, "a fresh token each time");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
