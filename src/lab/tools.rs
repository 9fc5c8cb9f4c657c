//! The Debian packages and programs the lab runs, found before anything starts.

use super::LabError;
use std::path::{Path, PathBuf};

/// Absolute paths of every program the lab runs.
#[derive(Clone, Debug)]
pub struct Tools {
    /// `ip` (iproute2).
    pub ip: PathBuf,
    /// `tc` (iproute2): link shaping.
    pub tc: PathBuf,
    /// `nsenter` (util-linux).
    pub nsenter: PathBuf,
    /// `unshare` (util-linux).
    pub unshare: PathBuf,
    /// `losetup` (util-linux): the block baseline's loop device.
    pub losetup: PathBuf,
    /// `sh`, to mount the storage host's /run before rpcbind starts.
    pub sh: PathBuf,
    /// `rpcbind` (rpcbind).
    pub rpcbind: PathBuf,
    /// `rpcinfo` (rpcbind): readiness probe of rpcbind.
    pub rpcinfo: PathBuf,
    /// `ganesha.nfsd` (nfs-ganesha).
    pub ganesha: PathBuf,
    /// `tgtd` (tgt).
    pub tgtd: PathBuf,
    /// `tgtadm` (tgt).
    pub tgtadm: PathBuf,
    /// `nbdkit` (nbdkit).
    pub nbdkit: PathBuf,
    /// `qemu-img` (qemu-utils): readiness probe of nbdkit.
    pub qemu_img: PathBuf,
    /// `iscsi-inq` (libiscsi-bin): readiness probe of tgtd.
    pub iscsi_inq: PathBuf,
    /// `nfs-ls` (libnfs-utils): readiness probe of ganesha.
    pub nfs_ls: PathBuf,
}

/// Packages that ship no program the lab calls but must be there.
const LIBRARY_PACKAGES: &[&str] = &["nfs-ganesha-vfs"];

/// Whether a Debian package is installed.
fn installed(package: &str) -> bool {
    std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// The installed version of a Debian package, or "unknown".
pub fn version(package: &str) -> String {
    std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Find `name` on PATH or in the sbin directories root's PATH usually has.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(
            [
                "/usr/local/sbin",
                "/usr/local/bin",
                "/usr/sbin",
                "/usr/bin",
                "/sbin",
                "/bin",
            ]
            .map(PathBuf::from),
        )
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Locate `binary` of `package`, or say which package to install.
fn need(binary: &str, package: &str) -> Result<PathBuf, LabError> {
    let missing = || LabError::MissingPackage {
        package: package.into(),
        binary: binary.into(),
    };
    if !installed(package) {
        return Err(missing());
    }
    which(binary).ok_or_else(missing)
}

impl Tools {
    /// Find every program, failing on the first missing package.
    pub fn find() -> Result<Tools, LabError> {
        for p in LIBRARY_PACKAGES {
            if !installed(p) {
                return Err(LabError::MissingPackage {
                    package: (*p).into(),
                    binary: "libfsalvfs.so".into(),
                });
            }
        }
        Ok(Tools {
            ip: need("ip", "iproute2")?,
            tc: need("tc", "iproute2")?,
            nsenter: need("nsenter", "util-linux")?,
            unshare: need("unshare", "util-linux")?,
            losetup: need("losetup", "mount")?,
            sh: which("sh").unwrap_or_else(|| PathBuf::from("/bin/sh")),
            rpcbind: need("rpcbind", "rpcbind")?,
            rpcinfo: need("rpcinfo", "rpcbind")?,
            ganesha: need("ganesha.nfsd", "nfs-ganesha")?,
            tgtd: need("tgtd", "tgt")?,
            tgtadm: need("tgtadm", "tgt")?,
            nbdkit: need("nbdkit", "nbdkit")?,
            qemu_img: need("qemu-img", "qemu-utils")?,
            iscsi_inq: need("iscsi-inq", "libiscsi-bin")?,
            nfs_ls: need("nfs-ls", "libnfs-utils")?,
        })
    }

    /// A program for teardown, which must work even if packages went away since `up`.
    pub fn teardown(name: &str) -> PathBuf {
        which(name).unwrap_or_else(|| PathBuf::from("/usr/sbin").join(name))
    }
}
