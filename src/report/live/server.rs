//! The live page's HTTP server: `GET /` the page, `GET /state` its figures
//! as JSON, `GET /metrics` the controller's series for Prometheus; one thread, stopped when the last [`super::Live`] is dropped.

use super::state::State;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tiny_http::{Header, Method, Request, Response};

/// The page: inline script and style only.
const PAGE: &str = include_str!("page.html");

/// Refuse an address that is not loopback when no token guards it.
pub fn check_addr(addr: SocketAddr, has_token: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || has_token {
        Ok(())
    } else {
        Err(format!(
            "--web {addr}: not a loopback address, and the page would show the run to anyone who \
             can reach it: serve it on 127.0.0.1, or pass the fleet's --token-file so the page \
             asks for the token"
        ))
    }
}

pub(super) struct Server {
    addr: SocketAddr,
    quit: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub(super) fn start(
        addr: SocketAddr,
        token: Option<String>,
        state: Arc<Mutex<State>>,
    ) -> Result<Server, String> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| format!("--web {addr}: cannot serve the live page there: {e}"))?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| format!("--web {addr}: not an IP address"))?;
        let quit = Arc::new(AtomicBool::new(false));
        let q = Arc::clone(&quit);
        let thread = std::thread::Builder::new()
            .name("storlab-web".into())
            .spawn(move || {
                while !q.load(Ordering::Relaxed) {
                    match server.recv_timeout(Duration::from_millis(200)) {
                        Ok(Some(req)) => answer(req, token.as_deref(), &state),
                        Ok(None) => {}
                        Err(_) => break,
                    }
                }
            })
            .map_err(|e| format!("--web {addr}: cannot start its thread: {e}"))?;
        Ok(Server {
            addr: bound,
            quit,
            thread: Some(thread),
        })
    }

    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The token a request carries: `?token=` or `Authorization: Bearer`.
fn token_of(req: &Request) -> Option<String> {
    let query = req.url().split_once('?').map(|(_, q)| q).unwrap_or("");
    let from_query = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(percent_decode);
    from_query.or_else(|| {
        req.headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
            .map(str::to_string)
    })
}

/// `%XX` escapes and `+` decoded (a token typed into an address bar).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Equal without leaking where they differ through timing.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn answer(req: Request, token: Option<&str>, state: &Mutex<State>) {
    let path = req.url().split('?').next().unwrap_or("/").to_string();
    let (status, body, kind) = if *req.method() != Method::Get {
        (405, "only GET\n".to_string(), "text/plain; charset=utf-8")
    } else if token.is_some_and(|t| !token_of(&req).is_some_and(|got| same(&got, t))) {
        (
            401,
            "this page needs the fleet's token: add ?token=TOKEN to its address\n".to_string(),
            "text/plain; charset=utf-8",
        )
    } else {
        match path.as_str() {
            "/" => (200, PAGE.to_string(), "text/html; charset=utf-8"),
            "/state" => {
                let s = state.lock().unwrap_or_else(|e| e.into_inner());
                (
                    200,
                    serde_json::to_string(&*s).unwrap_or_else(|_| "{}".into()),
                    "application/json",
                )
            }
            "/metrics" => {
                let s = state.lock().unwrap_or_else(|e| e.into_inner());
                (
                    200,
                    s.prometheus(),
                    "text/plain; version=0.0.4; charset=utf-8",
                )
            }
            _ => (
                404,
                "no such page\n".to_string(),
                "text/plain; charset=utf-8",
            ),
        }
    };
    let mut r = Response::from_string(body).with_status_code(status);
    for (k, v) in [
        ("Content-Type", kind),
        ("Cache-Control", "no-store"),
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:",
        ),
    ] {
        if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            r.add_header(h);
        }
    }
    let _ = req.respond(r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_needs_no_token_and_elsewhere_does() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_addr(lo, false).is_ok());
        assert!(check_addr(any, true).is_ok());
        let e = check_addr(any, false).unwrap_err();
        assert!(
            e.contains("--web 0.0.0.0:8080") && e.contains("--token-file"),
            "{e}"
        );
    }

    #[test]
    fn tokens_decode_and_compare() {
        assert_eq!(percent_decode("a%2Fb+c"), "a/b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd") && !same("abc", "ab"));
    }
}
