//! nbdkit with the file plugin: export [`EXPORT`] of the backing file on the
//! storage host's address (127.0.0.1 in `loopback` mode, where it joins only
//! the storage host's mount namespace). nbdkit runs as a daemon (no `-f`): in the
//! foreground it sets PR_SET_PDEATHSIG and would die with `storlab lab up`.
//! Its stderr goes to /dev/null once it has daemonized, so its log holds only
//! start-up errors.

use super::LabError;
use super::net::Listen;
use super::ready;
use super::rpcbind;
use super::tools::Tools;
use crate::process::{self, Proc};
use std::path::Path;

/// The NBD export name.
pub const EXPORT: &str = "storlab";

/// Start nbdkit inside the storage host, listening on `at.addr:port`.
pub fn start(
    tools: &Tools,
    anchor: &Proc,
    at: Listen,
    port: u16,
    backing: &Path,
    state_dir: &Path,
) -> Result<Proc, LabError> {
    let pid_file = state_dir.join("nbdkit.pid");
    let mut args = rpcbind::join_args(anchor, at.net);
    args.extend([
        tools.nbdkit.display().to_string(),
        "--log=stderr".into(),
        "-P".into(),
        pid_file.display().to_string(),
        "-i".into(),
        at.addr.to_string(),
        "-p".into(),
        port.to_string(),
        "--threads".into(),
        super::SERVER_IO_THREADS.to_string(),
        "-e".into(),
        EXPORT.into(),
        "file".into(),
        backing.display().to_string(),
    ]);
    let log = state_dir.join("nbdkit.log");
    process::spawn_daemon(&tools.nsenter, &args, &log, &pid_file).map_err(|e| LabError::Server {
        server: "nbdkit".into(),
        message: e,
        log: log.clone(),
        log_tail: process::tail(&log, ready::LOG_LINES),
    })
}

/// The target URL of the export.
pub fn url(at: Listen, port: u16) -> String {
    format!("nbd://{}:{port}/{EXPORT}", at.addr)
}

/// Ready when `qemu-img info` over NBD reports the backing file's size.
pub fn wait_ready(
    tools: &Tools,
    at: Listen,
    proc: &Proc,
    port: u16,
    size: u64,
) -> Result<(), LabError> {
    let url = url(at, port);
    let want = format!("\"virtual-size\": {size}");
    ready::wait("nbdkit", proc, || {
        ready::tcp(at.addr, port)?;
        let out = process::run(&tools.qemu_img, &["info", "--output=json", &url])?;
        if out.contains(&want) {
            Ok(())
        } else {
            Err(format!("qemu-img info {url}: size is not {size}"))
        }
    })
}
