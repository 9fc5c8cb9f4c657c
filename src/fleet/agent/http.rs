//! The agent's HTTP face: each request is checked in order (the peer's
//! failed-authentication limit, protocol version, token, body size), decoded,
//! and handed to the run state machine; refusals become JSON error replies.

use super::decode::decode_request;
use super::runs::{Refusal, Shared, dispatch};
use super::{MAX_BODY, auth};
use crate::fleet::wire::{self, ErrorKind, ErrorReply, paths};
use std::io::Read;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tiny_http::{Header, Method, Request, Response, Server};

/// Serve requests until the agent quits.
pub(super) fn serve(server: &Server, shared: &Arc<Shared>) {
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

pub(super) fn header<'a>(req: &'a Request, name: &'static str) -> Option<&'a str> {
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
        if !authorized(shared, &req) {
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
        let state = shared.state();
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
        shared.touch();
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
    if !authorized(shared, req) {
        return Err(Refusal(
            401,
            ErrorKind::Auth,
            "wrong or missing bearer token".into(),
        ));
    }
    Ok(())
}

/// Whether `req` carries the token (always, on a tokenless loopback agent).
fn authorized(shared: &Shared, req: &Request) -> bool {
    match &shared.cfg.token {
        Some(t) => auth::authorized(header(req, "Authorization"), t),
        None => true,
    }
}
