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

/// What the agent answers a request: status, body, its content type and
/// one extra header (`Retry-After`, `Connection: close`).
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: String,
    pub(super) content_type: &'static str,
    pub(super) extra: Option<Header>,
}

impl Answer {
    fn new(status: u16, body: String, content_type: &'static str) -> Answer {
        Answer {
            status,
            body,
            content_type,
            extra: None,
        }
    }
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
    let a = answer(shared, &mut req);
    let ct = Header::from_bytes("Content-Type", a.content_type).expect("valid header");
    let mut resp = Response::from_string(a.body)
        .with_status_code(a.status)
        .with_header(ct);
    if let Some(h) = a.extra {
        resp = resp.with_header(h);
    }
    let _ = req.respond(resp);
}

/// Check, decode and carry out one request (reading its body), and say
/// what to answer.
pub(super) fn answer(shared: &Arc<Shared>, req: &mut Request) -> Answer {
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
        return Answer {
            extra: Some(retry),
            ..Answer::new(429, body, "application/json")
        };
    }
    if path == paths::METRICS && *req.method() == Method::Get {
        if !authorized(shared, req) {
            shared.metrics.refused();
            if let Some(ip) = peer_ip {
                shared.limiter.failed(ip, Instant::now());
            }
            return Answer::new(401, "wrong or missing bearer token\n".into(), "text/plain");
        }
        if let Some(ip) = peer_ip {
            shared.limiter.succeeded(ip);
        }
        let state = shared.state();
        let body = shared.metrics.render(&shared.cfg.name, state);
        return Answer::new(200, body, "text/plain; version=0.0.4");
    }
    let checked = check_request(shared, req);
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
        let body = read_body(req, &path)?;
        shared.touch();
        let decoded = decode_request(&path, &body)
            .map_err(|e| Refusal(e.status, ErrorKind::BadRequest, e.message))?;
        dispatch(shared, decoded)
    });
    match result {
        Ok(body) => Answer::new(200, body, "application/json"),
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
            Answer {
                extra: close,
                ..Answer::new(status, body, "application/json")
            }
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

#[cfg(test)]
mod tests {
    //! Requests answered in-process (tiny_http's `TestRequest`, no socket):
    //! the checks in order, and what each refusal says.
    use super::*;
    use crate::fleet::agent::test_config;
    use tiny_http::TestRequest;

    const TOKEN: &str = "a-test-token-of-some-length";

    fn shared(token: Option<&str>) -> Arc<Shared> {
        Arc::new(Shared::new(test_config(
            "h1",
            token,
            &["null:"],
            Duration::from_secs(60),
        )))
    }

    fn hdr(name: &str, value: &str) -> Header {
        Header::from_bytes(name, value).unwrap()
    }

    /// A request as this release's controller sends it: its protocol and
    /// version headers, `token` as the bearer token.
    fn req(method: Method, path: &str, body: &str, token: Option<&str>) -> TestRequest {
        let body: &'static str = Box::leak(body.to_string().into_boxed_str());
        let r = TestRequest::new()
            .with_method(method)
            .with_path(path)
            .with_body(body)
            .with_header(hdr(
                wire::PROTOCOL_HEADER,
                &wire::PROTOCOL_VERSION.to_string(),
            ))
            .with_header(hdr(wire::VERSION_HEADER, wire::STORLAB_VERSION));
        match token {
            Some(t) => r.with_header(hdr("Authorization", &format!("Bearer {t}"))),
            None => r,
        }
    }

    fn hello_body() -> String {
        serde_json::to_string(&wire::HelloRequest {
            protocol: wire::PROTOCOL_VERSION,
            storlab_version: wire::STORLAB_VERSION.into(),
            controller_unix_ns: 0,
            targets: vec!["null:".into(), "nbd://10.0.0.1/x".into()],
        })
        .unwrap()
    }

    fn hello(token: Option<&str>) -> TestRequest {
        req(Method::Post, paths::HELLO, &hello_body(), token)
    }

    fn ask(sh: &Arc<Shared>, r: TestRequest) -> Answer {
        let mut r: Request = r.into();
        answer(sh, &mut r)
    }

    /// The JSON refusal of `a`, checking its status.
    fn refused(a: &Answer, status: u16) -> ErrorReply {
        assert_eq!(a.status, status, "{}", a.body);
        assert_eq!(a.content_type, "application/json");
        let e: ErrorReply = serde_json::from_str(&a.body).unwrap();
        assert_eq!(e.host, "h1");
        assert_eq!(e.protocol, wire::PROTOCOL_VERSION);
        e
    }

    fn refused_count(sh: &Shared) -> u64 {
        let text = sh.metrics.render("h1", sh.state());
        let line = text
            .lines()
            .find(|l| l.starts_with("storlab_agent_refused_requests_total{"))
            .unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn a_controller_with_the_token_gets_its_hello_naming_refused_targets() {
        let sh = shared(Some(TOKEN));
        let a = ask(&sh, hello(Some(TOKEN)));
        assert_eq!(a.status, 200, "{}", a.body);
        let h: wire::HelloReply = serde_json::from_str(&a.body).unwrap();
        assert_eq!((h.host.as_str(), h.state), ("h1", wire::RunState::Idle));
        assert_eq!(h.refused_targets.len(), 1, "{:?}", h.refused_targets);
        assert!(h.refused_targets[0].contains("10.0.0.1"));
        assert_eq!(refused_count(&sh), 0);
    }

    #[test]
    fn a_request_without_a_protocol_header_is_not_a_controller() {
        let sh = shared(None);
        for value in [None, Some("five")] {
            let mut r = TestRequest::new()
                .with_method(Method::Post)
                .with_path(paths::HELLO)
                .with_body("{}");
            if let Some(v) = value {
                r = r.with_header(hdr(wire::PROTOCOL_HEADER, v));
            }
            let e = refused(&ask(&sh, r), 400);
            assert_eq!(e.kind, ErrorKind::Version);
            assert!(e.error.contains(wire::PROTOCOL_HEADER), "{}", e.error);
        }
        assert_eq!(refused_count(&sh), 2);
    }

    #[test]
    fn a_protocol_mismatch_is_409_naming_both_versions_before_the_token() {
        let sh = shared(Some(TOKEN));
        let theirs = wire::PROTOCOL_VERSION + 1;
        let r = TestRequest::new()
            .with_method(Method::Post)
            .with_path(paths::HELLO)
            .with_body("{}")
            .with_header(hdr(wire::PROTOCOL_HEADER, &theirs.to_string()))
            .with_header(hdr(wire::VERSION_HEADER, "9.9.9"));
        // No token either: the version is what the agent names first.
        let e = refused(&ask(&sh, r), 409);
        assert_eq!(e.kind, ErrorKind::Version);
        for want in [
            format!("protocol {}", wire::PROTOCOL_VERSION),
            format!("protocol {theirs}"),
            "9.9.9".into(),
            "agent h1".into(),
        ] {
            assert!(e.error.contains(&want), "{want}: {}", e.error);
        }
        assert_eq!(refused_count(&sh), 1);
        // A version refusal is no failed authentication: the peer is not blocked.
        assert_eq!(ask(&sh, hello(Some(TOKEN))).status, 200);
    }

    #[test]
    fn a_wrong_or_missing_token_is_401_and_repeated_failures_block_the_peer() {
        let sh = shared(Some(TOKEN));
        let e = refused(&ask(&sh, hello(None)), 401);
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(e.error.contains("bearer token"), "{}", e.error);
        for _ in 1..auth::MAX_AUTH_FAILURES {
            refused(&ask(&sh, hello(Some("not-the-token"))), 401);
        }
        // Blocked now, even with the right token, and told when to retry.
        let a = ask(&sh, hello(Some(TOKEN)));
        let e = refused(&a, 429);
        assert!(
            e.error
                .contains("too many failed authentications from 127.0.0.1")
        );
        let retry = a.extra.expect("a Retry-After header");
        assert!(retry.field.equiv("Retry-After"));
        let secs: u64 = retry.value.as_str().parse().unwrap();
        assert!(
            (1..=auth::FAILURE_WINDOW.as_secs()).contains(&secs),
            "{secs}"
        );
        // Another peer is not.
        let other = hello(Some(TOKEN)).with_remote_addr("127.0.0.2:40000".parse().unwrap());
        assert_eq!(ask(&sh, other).status, 200);
        assert_eq!(refused_count(&sh), u64::from(auth::MAX_AUTH_FAILURES) + 1);
    }

    #[test]
    fn a_tokenless_loopback_agent_needs_no_authorization() {
        let sh = shared(None);
        assert_eq!(ask(&sh, hello(None)).status, 200);
        assert_eq!(ask(&sh, hello(Some("anything"))).status, 200);
    }

    #[test]
    fn only_post_is_served_and_unknown_paths_are_404() {
        let sh = shared(Some(TOKEN));
        let e = refused(
            &ask(&sh, req(Method::Get, paths::HELLO, "", Some(TOKEN))),
            405,
        );
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(e.error.contains("/v1/hello takes POST"), "{}", e.error);
        let e = refused(
            &ask(&sh, req(Method::Post, "/v1/nope?x=1", "{}", Some(TOKEN))),
            404,
        );
        assert!(
            e.error.contains("\"/v1/nope\"") && e.error.contains(paths::RESULT),
            "{}",
            e.error
        );
        // Neither counts as refused (they are mistakes, not intrusions).
        assert_eq!(refused_count(&sh), 0);
    }

    #[test]
    fn a_body_declared_over_the_limit_is_413_and_closes_the_connection() {
        let sh = shared(None);
        let r = req(Method::Post, paths::PREPARE, "", None)
            .with_header(hdr("Content-Length", &(MAX_BODY + 1).to_string()));
        let a = ask(&sh, r);
        let e = refused(&a, 413);
        assert!(
            e.error.contains(&(MAX_BODY + 1).to_string()) && e.error.contains(paths::PREPARE),
            "{}",
            e.error
        );
        let close = a.extra.expect("Connection: close");
        assert!(close.field.equiv("Connection") && close.value == "close");
        assert_eq!(refused_count(&sh), 1);
    }

    #[test]
    fn a_malformed_body_is_400_naming_the_field() {
        let sh = shared(None);
        let body = r#"{"run": "seven", "at_unix_ns": 1}"#;
        let e = refused(&ask(&sh, req(Method::Post, paths::START, body, None)), 400);
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(
            e.error.contains(paths::START) && e.error.contains("field run"),
            "{}",
            e.error
        );
    }

    #[test]
    fn an_unknown_run_is_refused_with_the_agents_run_and_state() {
        let sh = shared(None);
        let body = serde_json::to_string(&wire::ResultRequest { run: 42 }).unwrap();
        let e = refused(
            &ask(&sh, req(Method::Post, paths::RESULT, &body, None)),
            400,
        );
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(
            e.error.contains("unknown run 42") && e.error.contains("run 0"),
            "{}",
            e.error
        );
    }

    #[test]
    fn metrics_need_the_token_and_count_refusals() {
        let sh = shared(Some(TOKEN));
        let a = ask(&sh, req(Method::Get, paths::METRICS, "", None));
        assert_eq!((a.status, a.content_type), (401, "text/plain"));
        let a = ask(&sh, req(Method::Get, paths::METRICS, "", Some(TOKEN)));
        assert_eq!(a.status, 200);
        assert_eq!(a.content_type, "text/plain; version=0.0.4");
        assert!(
            a.body
                .contains("storlab_agent_refused_requests_total{host=\"h1\"} 1"),
            "{}",
            a.body
        );
        // A POST to /metrics is an ordinary request for an unknown path.
        let a = ask(&sh, req(Method::Post, paths::METRICS, "{}", Some(TOKEN)));
        assert_eq!(refused(&a, 404).kind, ErrorKind::BadRequest);
    }
}
