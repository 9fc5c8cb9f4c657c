//! rpcbind, the first process of the storage host: it runs in the lab's network
//! namespace and in a new mount namespace with a private tmpfs over /run. The
//! other servers join both namespaces through its PID, so /run/rpcbind.sock,
//! /run/tgtd and /run/ganesha are the storage host's own and never clash with
//! the root namespace's. ganesha needs rpcbind to serve NFSv3.

use super::LabError;
use super::netns::Netns;
use super::process::{self, Proc};
use super::ready;
use super::tools::Tools;
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

/// Ready when `rpcinfo -p` lists the portmapper.
pub fn wait_ready(tools: &Tools, ns: &Netns, proc: &Proc) -> Result<(), LabError> {
    let addr = ns.ns_addr.to_string();
    ready::wait("rpcbind", proc, || {
        ready::tcp(ns.ns_addr, 111)?;
        let out = process::run(&tools.rpcinfo, &["-p", &addr])?;
        if out.contains("portmapper") {
            Ok(())
        } else {
            Err(format!("rpcinfo -p {addr}: no portmapper"))
        }
    })
}

/// Arguments that make `nsenter` join the storage host's namespaces (mount + network) by `anchor`.
pub fn join_args(anchor: &Proc) -> Vec<String> {
    vec![
        "-t".into(),
        anchor.pid.to_string(),
        "-m".into(),
        "-n".into(),
        "--".into(),
    ]
}
