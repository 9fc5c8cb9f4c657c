//! tgt's tgtd: one iSCSI target (IQN [`IQN`], tid 1) with the backing file as
//! LUN 1, portal on the storage host's address (127.0.0.1 in `loopback` mode,
//! where tgtd joins only the storage host's mount namespace). tgtd's control socket is fixed
//! at /run/tgtd/socket.0; it lands in the storage host's private /run, so
//! `tgtadm` must run in tgtd's mount namespace (`nsenter -t PID -m`).
//! tgtd ignores SIGTERM: stop deletes the target, then the system, then SIGKILLs.

use super::LabError;
use super::net::Listen;
use super::ready;
use super::rpcbind;
use super::tools::Tools;
use crate::backends::iscsi::tgtadm_target_steps;
use crate::process::{self, Proc};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The target's IQN.
pub const IQN: &str = "iqn.2025-01.org.storlab:lab";

/// Start tgtd inside the storage host, listening on `at.addr:port`.
pub fn start(
    tools: &Tools,
    anchor: &Proc,
    at: Listen,
    port: u16,
    state_dir: &Path,
) -> Result<Proc, LabError> {
    let mut args = rpcbind::join_args(anchor, at.net);
    args.extend([
        tools.tgtd.display().to_string(),
        "-f".into(),
        "--nr_iothreads".into(),
        super::SERVER_IO_THREADS.to_string(),
        "--iscsi".into(),
        format!("portal={}:{port}", at.addr),
    ]);
    process::spawn(&tools.nsenter, &args, &state_dir.join("tgtd.log")).map_err(LabError::System)
}

/// Run `tgtadm ARGS` in tgtd's mount namespace.
fn tgtadm(nsenter: &Path, tgtadm: &Path, tgtd: &Proc, args: &[&str]) -> Result<String, String> {
    let pid = tgtd.pid.to_string();
    let tgtadm = tgtadm.display().to_string();
    let mut all = vec!["-t", &pid, "-m", "--", &tgtadm];
    all.extend_from_slice(args);
    process::run(nsenter, &all)
}

/// Wait for the control socket, create the target and LUN, then wait until
/// `iscsi-inq` answers for LUN 1.
pub fn configure_and_wait(
    tools: &Tools,
    at: Listen,
    tgtd: &Proc,
    port: u16,
    backing: &Path,
) -> Result<(), LabError> {
    let t = |args: &[&str]| tgtadm(&tools.nsenter, &tools.tgtadm, tgtd, args);
    ready::wait("tgtd", tgtd, || {
        t(&["--op", "show", "--mode", "system"]).map(|_| ())
    })?;
    let lun_path = backing.display().to_string();
    for args in tgtadm_target_steps(IQN, &lun_path) {
        t(&args).map_err(|e| LabError::Server {
            server: "tgtd".into(),
            message: e,
            log: tgtd.log.clone(),
            log_tail: tgtd.log_tail(ready::LOG_LINES),
        })?;
    }
    let url = url(at, port);
    ready::wait("tgtd", tgtd, || {
        ready::tcp(at.addr, port)?;
        let out = process::run(&tools.iscsi_inq, &[&url])?;
        if out.contains("DIRECT_ACCESS") {
            Ok(())
        } else {
            Err(format!("iscsi-inq {url}: not a disk"))
        }
    })
}

/// The target URL of LUN 1.
pub fn url(at: Listen, port: u16) -> String {
    format!("iscsi://{}:{port}/{IQN}/1", at.addr)
}

/// Delete the target and the system, then SIGKILL if tgtd is still there.
/// Returns whether tgtd is gone.
pub fn stop(tgtd: &Proc) -> bool {
    if tgtd.alive() {
        let nsenter: PathBuf = super::tools::Tools::teardown("nsenter");
        let tgtadm_bin = super::tools::Tools::teardown("tgtadm");
        let t = |args: &[&str]| tgtadm(&nsenter, &tgtadm_bin, tgtd, args);
        let _ = t(&[
            "--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", "1", "--force",
        ]);
        let _ = t(&["--op", "delete", "--mode", "system"]);
        if tgtd.wait_gone(Duration::from_secs(5)) {
            return true;
        }
    }
    tgtd.kill()
}
