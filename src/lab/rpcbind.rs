//! rpcbind, the first process of the storage host: it runs in the lab's network
//! namespace and in a new mount namespace with a private tmpfs over /run. The
//! other servers join that mount namespace through its PID, so
//! /run/rpcbind.sock, /run/tgtd and /run/ganesha are the storage host's own and
//! never clash with the root namespace's. ganesha needs rpcbind to serve NFSv3
//! (it exits when it cannot register): it registers through the Unix socket
//! /run/rpcbind.sock (libtirpc's local transport), which works from either
//! network namespace. In `netns` mode the servers also join rpcbind's network
//! namespace; in `loopback` mode they stay in the root one (see [`super::net`]).

use super::LabError;
use super::net::NetMode;
use super::netns::Netns;
use super::ready;
use super::tools::Tools;
use crate::process::{self, Proc};
use std::path::Path;

/// Start rpcbind as the storage host's anchor process.
pub fn start(tools: &Tools, ns: &Netns, state_dir: &Path) -> Result<Proc, LabError> {
    let script = format!(
        "mount -t tmpfs -o mode=0755 storlab-run /run && mkdir -p /run/rpcbind /run/lock && exec {} -f",
        tools.rpcbind.display()
    );
    let args: Vec<String> = vec![
        format!("--net={}", ns.path().display()),
        "--".into(),
        tools.unshare.display().to_string(),
        "--mount".into(),
        "--propagation".into(),
        "private".into(),
        "--".into(),
        tools.sh.display().to_string(),
        "-c".into(),
        script,
    ];
    process::spawn(&tools.nsenter, &args, &state_dir.join("rpcbind.log")).map_err(LabError::System)
}

/// Ready when `rpcinfo -p` lists the portmapper: asked over the veth pair
/// from the root namespace, or (a namespace without one, `loopback` mode)
/// from inside the namespace on 127.0.0.1.
pub fn wait_ready(tools: &Tools, ns: &Netns, proc: &Proc) -> Result<(), LabError> {
    let addr = ns.inner_addr().to_string();
    let rpcinfo = tools.rpcinfo.display().to_string();
    let net = format!("--net={}", ns.path().display());
    ready::wait("rpcbind", proc, || {
        let out = if ns.veth {
            ready::tcp(ns.ns_addr, 111)?;
            process::run(&tools.rpcinfo, &["-p", &addr])?
        } else {
            process::run(&tools.nsenter, &[&net, "--", &rpcinfo, "-p", &addr])?
        };
        if out.contains("portmapper") {
            Ok(())
        } else {
            Err(format!("rpcinfo -p {addr} (in {}): no portmapper", ns.name))
        }
    })
}

/// Arguments that make `nsenter` join the storage host's namespaces by
/// `anchor`: mount and network (`netns`), or mount only (`loopback`: the
/// server stays in the root network namespace).
pub fn join_args(anchor: &Proc, net: NetMode) -> Vec<String> {
    let mut args = vec!["-t".to_string(), anchor.pid.to_string(), "-m".into()];
    if net == NetMode::Netns {
        args.push("-n".into());
    }
    args.push("--".into());
    args
}

/// Whether RPC program `prog` (e.g. 100005, MOUNT) is registered with the
/// anchor's rpcbind: `rpcinfo -p` run in its mount namespace, which reaches
/// rpcbind through /run/rpcbind.sock.
pub fn registered(tools: &Tools, anchor: &Proc, prog: u32) -> Result<(), String> {
    let pid = anchor.pid.to_string();
    let rpcinfo = tools.rpcinfo.display().to_string();
    let out = process::run(&tools.nsenter, &["-t", &pid, "-m", "--", &rpcinfo, "-p"])?;
    let want = prog.to_string();
    if out
        .lines()
        .any(|l| l.split_whitespace().next() == Some(want.as_str()))
    {
        Ok(())
    } else {
        Err(format!(
            "program {prog} is not registered with rpcbind (pid {}) on /run/rpcbind.sock",
            anchor.pid
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_servers_join_the_mount_namespace_only() {
        let anchor = Proc {
            pid: 42,
            start_time: 1,
            log: Default::default(),
        };
        assert_eq!(
            join_args(&anchor, NetMode::Netns),
            ["-t", "42", "-m", "-n", "--"]
        );
        assert_eq!(
            join_args(&anchor, NetMode::Loopback),
            ["-t", "42", "-m", "--"]
        );
    }
}
