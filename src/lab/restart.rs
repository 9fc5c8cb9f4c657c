//! Faults a durability check needs, on a running lab: restart one server (by
//! PID from the lab's state, with the arguments `up` gave it), and cut or
//! restore the storage host's link (`netns` mode only: a `loopback` lab has
//! no link).

use super::net::{Listen, NetMode};
use super::state::LabState;
use super::tools::Tools;
use super::{LabError, backing, ganesha, nbdkit, tgt};
use crate::process;
use std::path::Path;
use std::time::Duration;

/// Servers [`restart`] can restart.
pub const RESTARTABLE: &[&str] = &["ganesha", "tgtd", "nbdkit"];

fn load(state_dir: &Path) -> Result<LabState, LabError> {
    LabState::load(state_dir)
        .map_err(LabError::System)?
        .ok_or_else(|| LabError::System(format!("no lab is recorded in {}", state_dir.display())))
}

/// Stop `server` if it still runs (by its recorded PID), start it again with
/// the same ports and backing store, and wait until it serves. The new PID is
/// recorded before the readiness wait, so `lab down` stops it whatever happens.
pub fn restart(state_dir: &Path, server: &str) -> Result<(), LabError> {
    if !RESTARTABLE.contains(&server) {
        return Err(LabError::System(format!(
            "cannot restart {server:?} (allowed: {})",
            RESTARTABLE.join(", ")
        )));
    }
    let mut st = load(state_dir)?;
    let missing =
        |what: &str| LabError::System(format!("the lab in {} has no {what}", state_dir.display()));
    let ns = st
        .netns
        .clone()
        .ok_or_else(|| missing("network namespace"))?;
    let b = st.backing.clone().ok_or_else(|| missing("backing store"))?;
    let (served_dir, store) = st.served().ok_or_else(|| missing("backing store"))?;
    let anchor = st
        .server("rpcbind")
        .filter(|s| s.proc.alive())
        .map(|s| s.proc.clone())
        .ok_or_else(|| missing("running rpcbind (its namespace anchor)"))?;
    let i = st
        .servers
        .iter()
        .position(|s| s.name == server)
        .ok_or_else(|| missing(server))?;
    let old = st.servers[i].clone();
    if old.proc.alive() {
        let gone = if server == "tgtd" {
            tgt::stop(&old.proc)
        } else {
            old.proc.stop(Duration::from_secs(10))
        };
        if !gone {
            return Err(LabError::System(format!(
                "{server} (pid {}) would not stop",
                old.proc.pid
            )));
        }
    }
    let port = |k: usize| {
        old.ports
            .get(k)
            .copied()
            .ok_or_else(|| missing(&format!("port {k} of {server}")))
    };
    let tools = Tools::find()?;
    let at = Listen::of(st.net, &ns);
    let proc = match server {
        "ganesha" => ganesha::start(
            &tools,
            &anchor,
            st.net,
            &served_dir,
            port(0)?,
            port(1)?,
            state_dir,
        )?,
        "tgtd" => tgt::start(&tools, &anchor, at, port(0)?, state_dir)?,
        _ => nbdkit::start(&tools, &anchor, at, port(0)?, &store, state_dir)?,
    };
    st.servers[i].proc = proc.clone();
    st.save().map_err(LabError::System)?;
    match server {
        "ganesha" => ganesha::wait_ready(
            &tools,
            &anchor,
            at,
            &proc,
            port(0)?,
            port(1)?,
            backing::FILE,
        ),
        "tgtd" => tgt::configure_and_wait(&tools, at, &proc, port(0)?, &store),
        _ => nbdkit::wait_ready(&tools, at, &proc, port(0)?, b.size),
    }
}

/// Take the storage host's link down (`up == false`) or bring it back up:
/// the root-namespace end of its veth pair. Bringing it up restores the
/// connected route with it. Refused for a `loopback` lab, which has no link.
pub fn set_link(state_dir: &Path, up: bool) -> Result<(), LabError> {
    let st = load(state_dir)?;
    if st.net == NetMode::Loopback {
        return Err(LabError::BadConfig(format!(
            "the lab in {} serves on 127.0.0.1 (--net loopback): it has no link to cut or restore; \
             bring it up with --net netns",
            state_dir.display()
        )));
    }
    let ns = st.netns.ok_or_else(|| {
        LabError::System(format!(
            "the lab in {} has no network namespace",
            state_dir.display()
        ))
    })?;
    let ip = Tools::teardown("ip");
    let state = if up { "up" } else { "down" };
    process::run(&ip, &["link", "set", &ns.host_if, state])
        .map(|_| ())
        .map_err(LabError::System)
}
