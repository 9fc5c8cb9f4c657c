//! nfs-ganesha with the VFS FSAL: NFSv3 and NFSv4 of the directory holding the
//! backing file, exported as pseudo path `/storlab` (also the NFSv3 mount path:
//! `Mount_Path_Pseudo`). `Graceless` skips the 90 s grace period; recovery
//! state, PID file, config and log live in the state directory.

use super::LabError;
use super::netns::Netns;
use super::process::{self, Proc};
use super::ready;
use super::rpcbind;
use super::tools::Tools;
use std::path::Path;

/// The export's pseudo path (and NFSv3 mount path).
pub const EXPORT: &str = "/storlab";

/// ganesha's configuration for one export of `dir`.
pub fn config(dir: &Path, nfs_port: u16, mountd_port: u16, state_dir: &Path) -> String {
    format!(
        r#"# Written by storlab lab up; removed by storlab lab down.
NFS_CORE_PARAM {{
    NFS_Port = {nfs_port};
    MNT_Port = {mountd_port};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Protocols = 3, 4;
    Mount_Path_Pseudo = true;
}}
NFSV4 {{
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "{recovery}";
}}
EXPORT {{
    Export_Id = 1;
    Path = "{dir}";
    Pseudo = "{EXPORT}";
    Access_Type = RW;
    Squash = No_Root_Squash;
    Protocols = 3, 4;
    Transports = TCP;
    SecType = sys;
    FSAL {{
        Name = VFS;
    }}
}}
"#,
        recovery = state_dir.join("ganesha-recovery").display(),
        dir = dir.display(),
    )
}

/// Write the config and start ganesha inside the storage host.
pub fn start(
    tools: &Tools,
    anchor: &Proc,
    dir: &Path,
    nfs_port: u16,
    mountd_port: u16,
    state_dir: &Path,
) -> Result<Proc, LabError> {
    let conf = state_dir.join("ganesha.conf");
    std::fs::write(&conf, config(dir, nfs_port, mountd_port, state_dir))
        .map_err(|e| LabError::System(format!("cannot write {}: {e}", conf.display())))?;
    let log = state_dir.join("ganesha.log");
    let mut args = rpcbind::join_args(anchor);
    args.extend([
        tools.ganesha.display().to_string(),
        "-F".into(),
        "-f".into(),
        conf.display().to_string(),
        "-L".into(),
        log.display().to_string(),
        "-p".into(),
        state_dir.join("ganesha.pid").display().to_string(),
        "-N".into(),
        "NIV_EVENT".into(),
    ]);
    process::spawn(&tools.nsenter, &args, &log).map_err(LabError::System)
}

/// Ready when `nfs-ls` lists `file` in the export over NFSv3 (mount protocol
/// found through rpcbind) and over NFSv4.
pub fn wait_ready(
    tools: &Tools,
    ns: &Netns,
    proc: &Proc,
    nfs_port: u16,
    file: &str,
) -> Result<(), LabError> {
    let addr = ns.ns_addr;
    let v3 = format!("nfs://{addr}{EXPORT}/?version=3&nfsport={nfs_port}");
    let v4 = format!("nfs://{addr}{EXPORT}/?version=4&nfsport={nfs_port}");
    ready::wait("ganesha", proc, || {
        ready::tcp(addr, nfs_port)?;
        for url in [&v3, &v4] {
            let out = process::run(&tools.nfs_ls, &[url])?;
            if !out.contains(file) {
                return Err(format!("nfs-ls {url}: {file} not listed"));
            }
        }
        Ok(())
    })
}
