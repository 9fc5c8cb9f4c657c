//! The agent under hostile input: a tokenless agent stays on loopback, failed
//! authentications are rate limited, oversized / malformed / wrongly typed
//! bodies are refused with a reason naming the field, targets outside the
//! allow list (`..`, symlinks, plain outside paths, journal files) are refused
//! without touching storage, and TLS works with a certificate made by
//! `openssl` here. Every agent is a child process on 127.0.0.1, killed by PID.

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};
use storlab::fleet::wire::{self, paths};
use support::TempDir;
use support::agent::AgentProc;

const TOKEN: &str = "security-test-token-0123456789";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_storlab")
}

fn token_file(dir: &TempDir) -> PathBuf {
    let p = dir.join("token");
    std::fs::write(&p, format!("{TOKEN}\n")).unwrap();
    p
}

/// An HTTP response: status, headers (lowercase names), body.
struct Resp {
    status: u16,
    headers: String,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or("").to_string()
    }
}

/// Send raw `head` (request line + headers, without the blank line) and
/// `body`; read the whole response (the request asks to close).
fn raw(addr: &str, head: &str, body: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    // The agent may answer (and close) before it took all of a refused body.
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {text:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    Resp {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

fn post_with(addr: &str, path: &str, auth: Option<&str>, body: &[u8]) -> Resp {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{}: {}\r\n{}: {}\r\nContent-Type: application/json\r\nContent-Length: {}",
        wire::PROTOCOL_HEADER,
        wire::PROTOCOL_VERSION,
        wire::VERSION_HEADER,
        wire::STORLAB_VERSION,
        body.len()
    );
    if let Some(a) = auth {
        head.push_str(&format!("\r\nAuthorization: {a}"));
    }
    raw(addr, &head, body)
}

fn post(addr: &str, path: &str, body: &str) -> Resp {
    post_with(
        addr,
        path,
        Some(&format!("Bearer {TOKEN}")),
        body.as_bytes(),
    )
}

/// A valid prepare request body for `targets`, 1 VM, small files.
fn prepare_body(run: u64, targets: &[String], allow_overwrite: bool) -> Value {
    let mut spec = storlab::workload::jobfile::job_from_settings(
        "sec",
        &storlab::workload::jobfile::Settings::default(),
    )
    .points
    .remove(0);
    spec.size = 1 << 20;
    let req = wire::PrepareRequest {
        run,
        spec: (&spec).into(),
        vms: vec![0],
        targets: targets.to_vec(),
        threads: Some(1),
        allow_overwrite,
        verify_run: 0,
    };
    serde_json::to_value(&req).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn tokenless_agent_listens_on_loopback_only() {
    let dir = TempDir::new("agent-security", "tokenless");
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let o = Command::new(bin())
            .args(["agent", "--listen", listen, "--allow", "null:"])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{listen}: {e}");
        assert!(
            e.contains(listen) && e.contains("--token-file") && e.contains("loopback"),
            "{listen}: {e}"
        );
    }
    // On loopback it runs, and answers without a token.
    let ag = AgentProc::start("sec", ["--allow", "null:"]);
    let hello = wire::HelloRequest {
        protocol: wire::PROTOCOL_VERSION,
        storlab_version: wire::STORLAB_VERSION.into(),
        controller_unix_ns: 0,
        targets: vec!["null:".into()],
    };
    let r = post_with(
        &ag.addr,
        paths::HELLO,
        None,
        serde_json::to_string(&hello).unwrap().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // With a token, a non-loopback address is accepted (checked by starting
    // on 0.0.0.0 port 0 and stopping at once).
    let tf = token_file(&dir);
    let ag = Command::new(bin())
        .args(["agent", "--listen", "0.0.0.0:0", "--allow", "null:"])
        .arg("--token-file")
        .arg(&tf)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ag = AgentProc {
        child: ag,
        addr: String::new(),
    };
    let mut line = String::new();
    BufReader::new(ag.child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening on 0.0.0.0:"), "{line}");
}

#[test]
fn failed_authentications_are_rate_limited() {
    let dir = TempDir::new("agent-security", "ratelimit");
    let tf = token_file(&dir);
    let ag = AgentProc::start(
        "sec",
        ["--token-file", tf.to_str().unwrap(), "--allow", "null:"],
    );
    let body = r#"{"run":1}"#.as_bytes();
    for i in 0..storlab::fleet::auth::MAX_AUTH_FAILURES {
        let r = post_with(
            &ag.addr,
            paths::RESULT,
            Some("Bearer wrong-token-guess-0000000"),
            body,
        );
        assert_eq!(r.status, 401, "failure {i}: {}", r.body);
        assert_eq!(r.json()["kind"], "auth");
    }
    // Now even the right token is not looked at until the window passes.
    let r = post_with(
        &ag.addr,
        paths::RESULT,
        Some(&format!("Bearer {TOKEN}")),
        body,
    );
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(
        r.error().contains("too many failed authentications"),
        "{}",
        r.body
    );
    let retry: u64 = r
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("retry-after:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After in {}", r.headers));
    assert!(
        retry >= 1 && retry <= storlab::fleet::auth::FAILURE_WINDOW.as_secs(),
        "{retry}"
    );
    // GET /metrics is blocked too.
    let r = raw(
        &ag.addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"),
        b"",
    );
    assert_eq!(r.status, 429, "{}", r.body);
}

#[test]
fn oversized_malformed_and_mistyped_bodies_are_refused() {
    let dir = TempDir::new("agent-security", "bodies");
    let tf = token_file(&dir);
    let ag = AgentProc::start(
        "sec",
        ["--token-file", tf.to_str().unwrap(), "--allow", "null:"],
    );
    let limit = storlab::fleet::agent::MAX_BODY;

    // A declared huge body: refused before it is read.
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\n{}: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}",
        paths::PREPARE,
        wire::PROTOCOL_HEADER,
        wire::PROTOCOL_VERSION,
        1u64 << 40
    );
    let r = raw(&ag.addr, &head, b"{\"run\":");
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.error().contains(&limit.to_string()), "{}", r.body);

    // A chunked body that turns out larger than the limit.
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\n{}: {}\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked",
        paths::PREPARE,
        wire::PROTOCOL_HEADER,
        wire::PROTOCOL_VERSION,
    );
    let chunk = vec![b' '; 1 << 20];
    let mut body = Vec::new();
    for _ in 0..(limit / chunk.len() + 2) {
        body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let r = raw(&ag.addr, &head, &body);
    assert_eq!(r.status, 413, "{}", r.body);

    // Not JSON, trailing garbage, not UTF-8.
    for bad in ["{not json", "{\"run\":1} trailing", ""] {
        let r = post(&ag.addr, paths::RESULT, bad);
        assert_eq!(r.status, 400, "{bad:?}: {}", r.body);
        assert_eq!(r.json()["kind"], "bad_request");
        assert!(
            r.error().contains("malformed /v1/result body"),
            "{}",
            r.body
        );
    }
    let r = post_with(
        &ag.addr,
        paths::RESULT,
        Some(&format!("Bearer {TOKEN}")),
        b"{\"run\":\xff}",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("UTF-8"), "{}", r.body);

    // Wrong types: the error names the field.
    let r = post(&ag.addr, paths::START, r#"{"run":"seven","at_unix_ns":1}"#);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("field run"), "{}", r.body);
    let r = post(
        &ag.addr,
        paths::INTERVALS,
        r#"{"run":1,"from":-1,"wait_ms":0}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("field from"), "{}", r.body);
    let mut p = prepare_body(1, &["null:".into()], false);
    p["spec"]["size"] = Value::String("huge".into());
    let r = post(&ag.addr, paths::PREPARE, &p.to_string());
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("field spec.size"), "{}", r.body);
    let mut p = prepare_body(1, &["null:".into()], false);
    p["vms"] = serde_json::json!([0, 0]);
    let r = post(&ag.addr, paths::PREPARE, &p.to_string());
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("field vms"), "{}", r.body);
    let r = post(&ag.addr, "/v1/../../etc/passwd", "{}");
    assert_eq!(r.status, 404, "{}", r.body);

    // The agent still serves after all that.
    let p = prepare_body(2, &["null:".into()], false);
    let r = post(&ag.addr, paths::PREPARE, &p.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(&ag.addr, paths::RESULT, r#"{"run":2}"#);
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Content and modification time of a file.
fn fingerprint(p: &Path) -> (Vec<u8>, SystemTime) {
    (
        std::fs::read(p).unwrap(),
        std::fs::metadata(p).unwrap().modified().unwrap(),
    )
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn targets_outside_the_allow_list_never_touch_storage() {
    let dir = TempDir::new("agent-security", "traversal");
    let tf = token_file(&dir);
    let allowed = dir.join("allowed");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim.dat");
    std::fs::write(&victim, vec![0x5au8; 2 << 20]).unwrap();
    // An old mtime, so any write would show.
    let old = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&victim)
        .unwrap()
        .set_modified(old)
        .unwrap();
    std::os::unix::fs::symlink(&victim, allowed.join("link.dat")).unwrap();
    std::os::unix::fs::symlink(&outside, allowed.join("linkdir")).unwrap();
    let before = fingerprint(&victim);
    let outside_before = listing(&outside);

    let ag = AgentProc::start(
        "sec",
        [
            "--token-file",
            tf.to_str().unwrap(),
            "--allow",
            allowed.to_str().unwrap(),
        ],
    );
    let a = allowed.display().to_string();
    let o = outside.display().to_string();
    let hostile: Vec<(String, &str)> = vec![
        (format!("file:{o}/victim.dat"), "not under any --allow"),
        (format!("file:{o}"), "not under any --allow"),
        (format!("file:{o}/new.dat"), "not under any --allow"),
        (format!("file:{a}/../outside/victim.dat"), ".. component"),
        (format!("file:{a}/../outside"), ".. component"),
        (format!("file:{a}/link.dat"), "resolves to"),
        (format!("file:{a}/linkdir"), "resolves to"),
        (format!("file:{a}/linkdir/new.dat"), "resolves to"),
        (
            "file:outside/victim.dat".to_string(),
            "not an absolute path",
        ),
        ("null:".to_string(), "not under any --allow"),
        ("nbd://127.0.0.1:1/x".to_string(), "not under any --allow"),
    ];
    for (i, (t, why)) in hostile.iter().enumerate() {
        // hello reports the refusal with its reason...
        let hello = wire::HelloRequest {
            protocol: wire::PROTOCOL_VERSION,
            storlab_version: wire::STORLAB_VERSION.into(),
            controller_unix_ns: 0,
            targets: vec![t.clone()],
        };
        let r = post(
            &ag.addr,
            paths::HELLO,
            &serde_json::to_string(&hello).unwrap(),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let refused = r.json()["refused_targets"].to_string();
        assert!(refused.contains(why), "hello {t}: {refused}");
        // ...and prepare, even with --allow-overwrite, is refused with it.
        let p = prepare_body(10 + i as u64, std::slice::from_ref(t), true);
        let r = post(&ag.addr, paths::PREPARE, &p.to_string());
        assert_eq!(r.status, 403, "prepare {t}: {}", r.body);
        assert_eq!(r.json()["kind"], "not_allowed", "{}", r.body);
        assert!(r.error().contains(why), "prepare {t}: {}", r.body);
    }
    // A journal file outside the allow list is refused too.
    let mut p = prepare_body(50, &[format!("file:{a}")], true);
    p["spec"]["journal"] = Value::String(format!("{o}/journal.bin"));
    let r = post(&ag.addr, paths::PREPARE, &p.to_string());
    assert_eq!(r.status, 403, "journal: {}", r.body);
    assert!(r.error().contains("journal"), "{}", r.body);

    assert_eq!(fingerprint(&victim), before, "the file outside was touched");
    assert_eq!(listing(&outside), outside_before, "a file appeared outside");

    // Control: the allowed directory itself is prepared (so the refusals above
    // are the allow list's doing, not a broken request).
    let p = prepare_body(60, &[format!("file:{a}")], false);
    let r = post(&ag.addr, paths::PREPARE, &p.to_string());
    assert_eq!(r.status, 200, "allowed target: {}", r.body);
    let r = post(&ag.addr, paths::RESULT, r#"{"run":60}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        listing(&allowed).len() > 2,
        "nothing prepared in the allowed directory: {:?}",
        listing(&allowed)
    );
    assert_eq!(fingerprint(&victim), before);
    assert_eq!(listing(&outside), outside_before);
}

/// A self-signed certificate for 127.0.0.1 made by the `openssl` command.
fn self_signed(dir: &TempDir, name: &str) -> (PathBuf, PathBuf) {
    let cert = dir.join(&format!("{name}.crt"));
    let key = dir.join(&format!("{name}.key"));
    let o = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("the openssl command (Debian package openssl, installed by setup.sh)");
    assert!(o.status.success(), "openssl: {}", stderr(&o));
    (cert, key)
}

fn fleet_run(addr: &str, tf: &Path, extra: &[&str]) -> Output {
    Command::new(bin())
        .arg("run")
        .args(["--hosts", addr, "--token-file", tf.to_str().unwrap()])
        .args(extra)
        .args([
            "--target",
            "null:",
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--iodepth",
            "1",
            "--runtime",
            "1",
            "--quiet",
        ])
        .output()
        .unwrap()
}

#[test]
fn tls_agent_and_controller() {
    let dir = TempDir::new("agent-security", "tls");
    let tf = token_file(&dir);
    let (cert, key) = self_signed(&dir, "agent");
    let (other, _) = self_signed(&dir, "other");
    let ag = AgentProc::start(
        "sec",
        [
            "--token-file",
            tf.to_str().unwrap(),
            "--allow",
            "null:",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    // The controller trusting the agent's certificate runs a point over HTTPS.
    let json = dir.join("out.json");
    let o = fleet_run(
        &ag.addr,
        &tf,
        &[
            "--tls-ca",
            cert.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let host = &doc["jobs"][0]["points"][0]["hosts"][0];
    assert_eq!(host["host"].as_str(), Some(ag.addr.as_str()), "{host}");
    let ios = host["summary"]["read"]["ios"].as_u64();
    assert!(ios.is_some_and(|n| n > 0), "no reads measured: {host}");
    // Trusting another certificate: refused, naming the agent.
    let o = fleet_run(&ag.addr, &tf, &["--tls-ca", other.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains(&ag.addr), "{}", stderr(&o));
    // Plain HTTP to the TLS agent: no answer that passes for the protocol.
    let o = fleet_run(&ag.addr, &tf, &[]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains(&ag.addr), "{}", stderr(&o));
    // A --tls-ca that is not a certificate is named.
    let o = fleet_run(&ag.addr, &tf, &["--tls-ca", tf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--tls-ca"), "{}", stderr(&o));
    // An agent whose key file is missing says which.
    let o = Command::new(bin())
        .args(["agent", "--listen", "127.0.0.1:0", "--allow", "null:"])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(dir.join("missing.key"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--tls-key") && stderr(&o).contains("missing.key"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn no_shell_execution_in_the_agent() {
    // The agent (src/fleet/, src/cli/agent.rs) starts no process at all. In the
    // whole crate the one shell is the lab's rpcbind anchor, a fixed script run
    // by `storlab lab up` on the user's own machine (src/lab/rpcbind.rs).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![manifest.join("src")];
    let mut hits = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(manifest).unwrap().display().to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            for pat in [
                "Command::new(\"sh\")",
                "Command::new(\"bash\")",
                "Command::new(\"/bin/sh\")",
                "Command::new(\"/bin/bash\")",
                "\"-c\"",
                "libc::system",
                "popen",
                "execv",
            ] {
                if text.contains(pat) {
                    hits.push(format!("{rel}: {pat}"));
                }
            }
            let agent_side = rel.starts_with("src/fleet/") || rel == "src/cli/agent.rs";
            if agent_side
                && ["Command::new", "process::spawn", "process::run", "Command"]
                    .iter()
                    .any(|pat| text.contains(pat))
            {
                hits.push(format!("{rel}: starts a process"));
            }
        }
    }
    hits.sort();
    assert_eq!(
        hits,
        vec!["src/lab/rpcbind.rs: \"-c\"".to_string()],
        "shell or process execution beyond the lab's rpcbind anchor"
    );
}
