//! nfs-ganesha with the VFS FSAL: NFSv3 and NFSv4 of the directory holding the
//! backing file, exported as pseudo path `/storlab` (also the NFSv3 mount path:
//! `Mount_Path_Pseudo`). `Graceless` skips the 90 s grace period; recovery
//! state, PID file, config and log live in the state directory. In `loopback`
//! mode it binds 127.0.0.1 only (`Bind_Addr`) in the root network namespace
//! and registers with the anchor's rpcbind through /run/rpcbind.sock.

use super::LabError;
use super::net::{Listen, NetMode};
use super::ready;
use super::rpcbind;
use super::tools::Tools;
use crate::backends::nfs::rpc::MOUNT_PROG;
use crate::process::{self, Proc};
use std::net::Ipv4Addr;
use std::path::Path;

/// The export's pseudo path (and NFSv3 mount path).
pub const EXPORT: &str = "/storlab";

/// ganesha's configuration for one export of `dir`, listening on `bind` only
/// when given (else on every address of its network namespace).
pub fn config(
    dir: &Path,
    nfs_port: u16,
    mountd_port: u16,
    state_dir: &Path,
    bind: Option<Ipv4Addr>,
) -> String {
    let bind = bind
        .map(|a| format!("    Bind_Addr = {a};\n"))
        .unwrap_or_default();
    format!(
        r#"# Written by storlab lab up; removed by storlab lab down.
NFS_CORE_PARAM {{
    NFS_Port = {nfs_port};
    MNT_Port = {mountd_port};
{bind}    Enable_NLM = false;
    Enable_RQUOTA = false;
    Protocols = 3, 4;
    Mount_Path_Pseudo = true;
}}
# No chunked dirent cache: with it ganesha 4.3's READDIR loops (the same
# entries without end) once a directory changes while it is listed, which
# `storlab meta` does all the time.
MDCACHE {{
    Dir_Chunk = 0;
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

/// Write the config and start ganesha inside the storage host (in `loopback`
/// mode: in its mount namespace only, bound to 127.0.0.1).
pub fn start(
    tools: &Tools,
    anchor: &Proc,
    net: NetMode,
    dir: &Path,
    nfs_port: u16,
    mountd_port: u16,
    state_dir: &Path,
) -> Result<Proc, LabError> {
    let conf = state_dir.join("ganesha.conf");
    let bind = (net == NetMode::Loopback).then_some(Ipv4Addr::LOCALHOST);
    std::fs::write(&conf, config(dir, nfs_port, mountd_port, state_dir, bind))
        .map_err(|e| LabError::System(format!("cannot write {}: {e}", conf.display())))?;
    let log = state_dir.join("ganesha.log");
    let mut args = rpcbind::join_args(anchor, net);
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

/// Ready when `nfs-ls` lists `file` in the export over NFSv3 and over NFSv4.
/// In `netns` mode the NFSv3 probe finds the MOUNT port through rpcbind; in
/// `loopback` mode it is given the MOUNT port, and MOUNT must be registered
/// with the anchor's rpcbind (through its socket).
#[allow(clippy::too_many_arguments)]
pub fn wait_ready(
    tools: &Tools,
    anchor: &Proc,
    at: Listen,
    proc: &Proc,
    nfs_port: u16,
    mountd_port: u16,
    file: &str,
) -> Result<(), LabError> {
    let addr = at.addr;
    let loopback = at.net == NetMode::Loopback;
    let mount = if loopback {
        format!("&mountport={mountd_port}")
    } else {
        String::new()
    };
    let v3 = format!("nfs://{addr}{EXPORT}/?version=3&nfsport={nfs_port}{mount}");
    let v4 = format!("nfs://{addr}{EXPORT}/?version=4&nfsport={nfs_port}");
    ready::wait("ganesha", proc, || {
        ready::tcp(addr, nfs_port)?;
        if loopback {
            // MOUNT's rpcbind registration shows NFSv3 is served.
            rpcbind::registered(tools, anchor, MOUNT_PROG)?;
        }
        for url in [&v3, &v4] {
            let out = process::run(&tools.nfs_ls, &[url])?;
            if !out.contains(file) {
                return Err(format!("nfs-ls {url}: {file} not listed"));
            }
        }
        Ok(())
    })
}

/// The target URL of the backing file over NFS `version` ("3", "4" or "4.1"). In
/// `loopback` mode the NFSv3 URL names the MOUNT port (`&mountport=`): no
/// portmapper listens on 127.0.0.1 (rpcbind stays in the lab's namespace).
pub fn url(at: Listen, nfs_port: u16, mountd_port: u16, version: &str) -> String {
    let mut url = format!(
        "nfs://{}:{nfs_port}{EXPORT}/{}?version={version}",
        at.addr,
        super::backing::FILE
    );
    if at.net == NetMode::Loopback && version == "3" {
        url.push_str(&format!("&mountport={mountd_port}"));
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::netns::Netns;

    #[test]
    fn loopback_binds_127_0_0_1_and_netns_binds_everything_in_its_namespace() {
        let dir = Path::new("/dev/shm/storlab-lab3");
        let state = Path::new("/var/tmp/lab");
        let netns = config(dir, 12049, 12050, state, None);
        assert!(!netns.contains("Bind_Addr"), "{netns}");
        let lo = config(dir, 12049, 12050, state, Some(Ipv4Addr::LOCALHOST));
        assert!(
            lo.contains("    MNT_Port = 12050;\n    Bind_Addr = 127.0.0.1;\n    Enable_NLM"),
            "{lo}"
        );
        assert_eq!(lo.replace("    Bind_Addr = 127.0.0.1;\n", ""), netns);
    }

    #[test]
    fn only_the_loopback_nfs3_url_names_the_mount_port() {
        let ns = Netns::for_slot(3);
        let at = Listen::of(NetMode::Netns, &ns);
        assert_eq!(
            url(at, 12049, 12050, "3"),
            "nfs://10.99.3.2:12049/storlab/disk.img?version=3"
        );
        let at = Listen::of(NetMode::Loopback, &ns);
        assert_eq!(
            url(at, 12049, 12050, "3"),
            "nfs://127.0.0.1:12049/storlab/disk.img?version=3&mountport=12050"
        );
        assert_eq!(
            url(at, 12049, 12050, "4"),
            "nfs://127.0.0.1:12049/storlab/disk.img?version=4"
        );
        assert_eq!(
            url(at, 12049, 12050, "4.1"),
            "nfs://127.0.0.1:12049/storlab/disk.img?version=4.1"
        );
    }
}
