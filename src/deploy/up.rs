//! `storlab fleet deploy`: every host in parallel, each step recorded; on
//! any failure every host reached is undone.

use super::down::stop_host;
use super::{
    DeployConfig, DeployedHost, FleetHost, FleetState, HOSTS_FILE, HostLines, Note, Record, SHORT,
    STATE_FILE, TOKEN_FILE, clock_within, each, host,
};
use crate::fleet::controller;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Deploy the agents of `cfg`; `note` hears each host's line as it is done.
/// `Ok`: every host's line (all deployed, `DIR/hosts` written). `Err`: every
/// host's line, the failing ones `Err`, after every deployed host was
/// stopped again; or one line when nothing could start.
pub fn deploy(cfg: &DeployConfig, note: &Note) -> Result<HostLines, HostLines> {
    let fail = |m: String| {
        let line = Err(m);
        note(&line);
        Err(vec![line])
    };
    if let Err(e) = std::fs::create_dir_all(&cfg.dir) {
        return fail(format!(
            "cannot create the fleet directory {}: {e}",
            cfg.dir.display()
        ));
    }
    match FleetState::load(&cfg.dir) {
        Ok(None) => {}
        Ok(Some(_)) => {
            return fail(format!(
                "a fleet is already deployed from {} ({}): stop it first with `storlab fleet stop --dir {}`",
                cfg.dir.display(),
                cfg.dir.join(STATE_FILE).display(),
                cfg.dir.display()
            ));
        }
        Err(e) => return fail(e),
    }
    if !cfg.remote_parent.starts_with('/') || cfg.remote_parent.contains(char::is_whitespace) {
        return fail(format!(
            "--remote-dir {:?}: must be an absolute path without spaces",
            cfg.remote_parent
        ));
    }
    if !cfg.binary.is_file() {
        return fail(format!("--binary {}: no such file", cfg.binary.display()));
    }
    let (token_file, generated) = match &cfg.token_file {
        Some(f) => (f.clone(), false),
        None => {
            let f = cfg.dir.join(TOKEN_FILE);
            if let Err(e) = crate::fleet::auth::write_token(&f) {
                return fail(e);
            }
            (f, true)
        }
    };
    let token = match crate::fleet::auth::load_token(&token_file) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let state = FleetState {
        token_file: token_file.clone(),
        token_generated: generated,
        ssh: cfg.ssh.clone(),
        hosts: cfg
            .hosts
            .iter()
            .map(|h| DeployedHost {
                ssh: h.ssh.label.clone(),
                agent: h.agent.clone(),
                ..Default::default()
            })
            .collect(),
    };
    if let Err(e) = state.save(&cfg.dir) {
        return fail(e);
    }
    let record = Record {
        dir: &cfg.dir,
        state: Mutex::new(state),
    };
    let lines = each(&cfg.hosts, cfg.parallel, |i, h| {
        let r = deploy_host(cfg, h, i, &token, &token_file, &record);
        note(&r);
        r
    });
    if lines.iter().all(Result::is_ok) {
        let mut text = format!(
            "# agents deployed by `storlab fleet deploy`; use with:\n\
             #   storlab run --hosts {} --token-file {} ...\n",
            cfg.dir.join(HOSTS_FILE).display(),
            token_file.display()
        );
        for h in &cfg.hosts {
            text.push_str(&h.agent);
            text.push('\n');
        }
        let path = cfg.dir.join(HOSTS_FILE);
        if let Err(e) = std::fs::write(&path, text) {
            let mut lines = lines;
            let line = Err(format!("cannot write {}: {e}", path.display()));
            note(&line);
            lines.push(line);
            return Err(undo(cfg, &record, lines, note));
        }
        return Ok(lines);
    }
    Err(undo(cfg, &record, lines, note))
}

/// Stop every host the failed deploy reached, then forget the fleet.
fn undo(cfg: &DeployConfig, record: &Record, mut lines: HostLines, note: &Note) -> HostLines {
    let st = record.state.lock().expect("fleet record").clone();
    let undone = each(&st.hosts, cfg.parallel, |_, h| match &h.remote_dir {
        None => Ok(()),
        Some(dir) => stop_host(&st, h, dir, &cfg.dir).map(|_| ()),
    });
    let mut all = true;
    for (h, r) in st.hosts.iter().zip(undone) {
        if let Err(e) = r {
            all = false;
            let line = Err(format!("host {}: could not undo its deploy: {e}", h.ssh));
            note(&line);
            lines.push(line);
        }
    }
    if all {
        let _ = std::fs::remove_file(cfg.dir.join(STATE_FILE));
        if st.token_generated {
            let _ = std::fs::remove_file(&st.token_file);
        }
    }
    lines
}

/// The timeout of the binary's copy.
const COPY: Duration = Duration::from_secs(600);

/// Deploy one host; its line, naming it.
fn deploy_host(
    cfg: &DeployConfig,
    h: &FleetHost,
    i: usize,
    token: &str,
    token_file: &Path,
    record: &Record,
) -> Result<String, String> {
    let name = &h.ssh.label;
    preflight(h, token)?;
    let ssh = &cfg.ssh;
    let template = format!(
        "{}/storlab-agent.XXXXXXXX",
        cfg.remote_parent.trim_end_matches('/')
    );
    let out = ssh
        .run(
            &h.ssh,
            &["mktemp", "-d", &template],
            None,
            SHORT,
            "making the agent's directory",
        )
        .map_err(|e| e.0)?;
    let dir = out.stdout.trim().to_string();
    let prefix = template.trim_end_matches('X');
    if !dir.starts_with(prefix)
        || dir.len() != template.len()
        || !dir[prefix.len()..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric())
    {
        return Err(format!(
            "host {name}: mktemp -d {template} answered {dir:?}, not a directory of that form"
        ));
    }
    record.update(i, |r| r.remote_dir = Some(dir.clone()))?;
    let bin = format!("{dir}/{}", host::BINARY);
    let tok = format!("{dir}/{}", host::TOKEN);
    ssh.run(
        &h.ssh,
        &["install", "-m", "0700", "/dev/stdin", &bin],
        Some(&cfg.binary),
        COPY,
        "copying the storlab binary",
    )
    .map_err(|e| e.0)?;
    ssh.run(
        &h.ssh,
        &["install", "-m", "0600", "/dev/stdin", &tok],
        Some(token_file),
        SHORT,
        "copying the token",
    )
    .map_err(|e| e.0)?;
    let mut argv: Vec<String> = [
        bin.as_str(),
        "fleet",
        "host-up",
        "--dir",
        &dir,
        "--listen",
        &h.listen,
        "--",
    ]
    .map(String::from)
    .into_iter()
    .collect();
    argv.extend(["--name".into(), h.ssh.host.clone()]);
    for a in &cfg.allow {
        argv.extend(["--allow".into(), a.clone()]);
    }
    if let Some(t) = cfg.controller_timeout {
        argv.extend(["--controller-timeout".into(), t.to_string()]);
    }
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = ssh
        .run(&h.ssh, &words, None, SHORT, "starting the agent")
        .map_err(|e| e.0)?;
    let up: host::HostUp = out
        .stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "host {name}: `storlab fleet host-up` answered {:?}, not its JSON line",
                out.stdout.trim()
            )
        })?;
    record.update(i, |r| {
        r.supervisor = Some(up.supervisor);
        r.agent_pid = Some(up.agent);
    })?;
    let ours = crate::fleet::wire::PROTOCOL_VERSION;
    if up.protocol != ours {
        return Err(format!(
            "host {name}: the copied binary is storlab {} speaking protocol {}, this controller \
             storlab {} protocol {ours}: deploy the same release (--binary)",
            up.storlab_version,
            up.protocol,
            crate::fleet::wire::STORLAB_VERSION
        ));
    }
    let check = hello(&h.agent, token).map_err(|e| format!("host {name}: {e}"))?;
    let offset_ms = check.clock_offset_ns as f64 / 1e6;
    record.update(i, |r| {
        r.storlab_version = Some(check.version.clone());
        r.clock_offset_ms = Some(offset_ms);
    })?;
    clock_within(name, &h.agent, offset_ms, cfg.max_clock_offset_ms)?;
    Ok(format!(
        "host {name}: agent {} up (pid {} under supervisor {}, in {dir}), storlab {} protocol {ours}, clock offset {offset_ms:+.3} ms",
        h.agent, up.agent.pid, up.supervisor.pid, check.version
    ))
}

/// Before anything is made: nothing may answer on the agent's address yet.
fn preflight(h: &FleetHost, token: &str) -> Result<(), String> {
    let name = &h.ssh.label;
    let addrs: Vec<SocketAddr> = h
        .agent
        .to_socket_addrs()
        .map_err(|e| {
            format!(
                "host {name}: cannot resolve the agent address {}: {e}",
                h.agent
            )
        })?
        .collect();
    let Some(addr) = addrs.first() else {
        return Err(format!(
            "host {name}: the agent address {} resolves to nothing",
            h.agent
        ));
    };
    match TcpStream::connect_timeout(addr, Duration::from_secs(3)) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
        Err(e) => Err(format!(
            "host {name}: cannot reach {} from this controller ({e}); an agent there would be unreachable",
            h.agent
        )),
        Ok(_) => Err(match controller::check_agent(&h.agent, token, None, &[]) {
            Ok(c) => format!(
                "host {name}: an agent (storlab {}) already answers at {}: stop it first, or deploy on another --agent-port",
                c.version, h.agent
            ),
            Err(e) => format!(
                "host {name}: something already answers at {} and is not an agent this controller can use: {e}",
                h.agent
            ),
        }),
    }
}

/// Hello to a freshly started agent, trying again for a few seconds while
/// it cannot be reached (it listens, but the path from here may lag).
fn hello(agent: &str, token: &str) -> Result<crate::runner::HostCheck, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match controller::check_agent(agent, token, None, &[]) {
            Ok(c) => return Ok(c),
            Err(crate::runner::RunError::Host(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}
