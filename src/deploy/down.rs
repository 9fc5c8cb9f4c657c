//! `storlab fleet stop` and `status`: every host of a deployed fleet, by
//! its record.

use super::ssh::SshHost;
use super::{
    DeployedHost, FleetState, HOSTS_FILE, HostLines, Note, SHORT, STATE_FILE, clock_within, each,
    host, load_fleet,
};
use crate::fleet::controller;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// Stop one host's agent and remove its directory; its log is saved in
/// `local/logs/`. Returns the line.
pub(super) fn stop_host(
    st: &FleetState,
    h: &DeployedHost,
    dir: &str,
    local: &Path,
) -> Result<String, String> {
    let sh = SshHost::parse(&h.ssh)?;
    let bin = format!("{dir}/{}", host::BINARY);
    let out = st
        .ssh
        .run(
            &sh,
            &[&bin, "fleet", "host-down", "--dir", dir],
            None,
            SHORT,
            "stopping the agent",
        )
        .map_err(|e| e.0)?;
    let down: host::HostDown = out
        .stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "host {}: `storlab fleet host-down` answered {:?}, not its JSON line",
                h.ssh,
                out.stdout.trim()
            )
        })?;
    let logs = local.join("logs");
    let file = logs.join(format!(
        "{}.agent.log",
        h.ssh
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || ".-".contains(c) {
                c
            } else {
                '_'
            })
            .collect::<String>()
    ));
    let saved = std::fs::create_dir_all(&logs)
        .and_then(|_| std::fs::write(&file, down.agent_log.as_bytes()))
        .map(|_| format!("its log saved as {}", file.display()))
        .unwrap_or_else(|e| format!("its log not saved ({}: {e})", file.display()));
    // The agent's port must be closed now, seen from here.
    if let Some(addr) = h.agent.to_socket_addrs().ok().and_then(|mut a| a.next())
        && TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
    {
        return Err(format!(
            "host {}: something still answers at {} after the agent was stopped",
            h.ssh, h.agent
        ));
    }
    let what = match (down.agent_was_running, down.supervisor_was_running) {
        (true, true) => "agent and supervisor stopped",
        (true, false) => "agent stopped (its supervisor had exited)",
        (false, true) => "supervisor stopped (no agent was running)",
        (false, false) => "nothing was running",
    };
    Ok(format!(
        "host {}: {what}, {} removed; {saved}",
        h.ssh, down.removed
    ))
}

/// Stop the fleet deployed from `dir`: every agent and supervisor by PID,
/// every directory the deploy made. Hosts that could not be stopped stay in
/// the record (run it again); once none is left the record, the hosts file
/// and a generated token are removed.
pub fn stop(dir: &Path, parallel: usize, note: &Note) -> Result<HostLines, HostLines> {
    let st = load_fleet(dir).map_err(|e| {
        let line = Err(e);
        note(&line);
        vec![line]
    })?;
    let lines = each(&st.hosts, parallel, |_, h| {
        let r = match &h.remote_dir {
            None => Ok(format!("host {}: nothing was made there", h.ssh)),
            Some(d) => stop_host(&st, h, d, dir),
        };
        note(&r);
        r
    });
    let left: Vec<DeployedHost> = st
        .hosts
        .iter()
        .zip(&lines)
        .filter(|(_, r)| r.is_err())
        .map(|(h, _)| h.clone())
        .collect();
    if left.is_empty() {
        let _ = std::fs::remove_file(dir.join(HOSTS_FILE));
        if st.token_generated {
            let _ = std::fs::remove_file(&st.token_file);
        }
        if let Err(e) = std::fs::remove_file(dir.join(STATE_FILE)) {
            let line = Err(format!(
                "cannot remove {}: {e}",
                dir.join(STATE_FILE).display()
            ));
            note(&line);
            let mut lines = lines;
            lines.push(line);
            return Err(lines);
        }
        Ok(lines)
    } else {
        let kept = FleetState { hosts: left, ..st };
        if let Err(e) = kept.save(dir) {
            let line = Err(e);
            note(&line);
            let mut lines = lines;
            lines.push(line);
            return Err(lines);
        }
        Err(lines)
    }
}

/// Say hello to every agent of the fleet deployed from `dir`.
pub fn status(
    dir: &Path,
    parallel: usize,
    max_clock_offset_ms: f64,
    note: &Note,
) -> Result<HostLines, HostLines> {
    let fail = |e: String| {
        let line = Err(e);
        note(&line);
        vec![line]
    };
    let st = load_fleet(dir).map_err(fail)?;
    let token = crate::fleet::auth::load_token(&st.token_file).map_err(fail)?;
    let lines = each(&st.hosts, parallel, |_, h| {
        let r = status_host(h, &token, max_clock_offset_ms);
        note(&r);
        r
    });
    if lines.iter().all(Result::is_ok) {
        Ok(lines)
    } else {
        Err(lines)
    }
}

/// One agent's hello: its line.
fn status_host(h: &DeployedHost, token: &str, max_clock_offset_ms: f64) -> Result<String, String> {
    let c = controller::check_agent(&h.agent, token, None, &[])
        .map_err(|e| format!("host {}: {e}", h.ssh))?;
    let off = c.clock_offset_ns as f64 / 1e6;
    clock_within(&h.ssh, &h.agent, off, max_clock_offset_ms)?;
    Ok(format!(
        "host {}: agent {} up, storlab {} protocol {}, clock offset {off:+.3} ms",
        h.ssh,
        h.agent,
        c.version,
        crate::fleet::wire::PROTOCOL_VERSION
    ))
}
