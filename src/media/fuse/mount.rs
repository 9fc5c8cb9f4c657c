//! Mounting and unmounting the FUSE file system with mount(2) and umount2(2)
//! (root only; no fusermount), and [`cleanup`]: what is left of a mount whose
//! server died or hangs is aborted and detached.

use super::sys::{self, Errno};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The file system type in /proc/self/mountinfo.
pub const FSTYPE: &str = "fuse.storlab";
/// The mount's source name.
pub const SOURCE: &str = "storlab-media";
/// Where the kernel's FUSE control file system lists connections.
const FUSECTL: &str = "/sys/fs/fuse/connections";

/// One line of /proc/self/mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// Mount point.
    pub mountpoint: PathBuf,
    /// File system type.
    pub fstype: String,
    /// Source.
    pub source: String,
    /// Device number as the kernel's `dev_t` (major << 20 | minor), which
    /// names the FUSE connection under /sys/fs/fuse/connections.
    pub dev: u32,
}

/// Undo mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse one mountinfo line.
fn parse_line(line: &str) -> Option<MountEntry> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    let (major, minor) = l.get(2)?.split_once(':')?;
    let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    Some(MountEntry {
        mountpoint: PathBuf::from(unescape(l.get(4)?)),
        fstype: r.first()?.to_string(),
        source: unescape(r.get(1)?),
        dev: major << 20 | minor,
    })
}

/// Every mount this process sees, in mount order.
pub fn mounts() -> Vec<MountEntry> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(parse_line)
        .collect()
}

/// `mp` as mountinfo names it: its parent canonicalised, then its name (a
/// mount whose server died cannot itself be canonicalised: ENOTCONN).
pub fn normalize(mp: &Path) -> PathBuf {
    let abs = if mp.is_absolute() {
        mp.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(mp)
    };
    match (abs.parent(), abs.file_name()) {
        (Some(p), Some(name)) => std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .join(name),
        _ => abs,
    }
}

/// storlab's FUSE mounts at `mp`, the topmost last.
pub fn mounted(mp: &Path) -> Vec<MountEntry> {
    let mp = normalize(mp);
    mounts()
        .into_iter()
        .filter(|m| m.fstype == FSTYPE && m.mountpoint == mp)
        .collect()
}

/// Refuse a mount point inside the backing directory or the other way round:
/// the file system would serve itself.
pub fn check_apart(backing: &Path, mp: &Path) -> Result<(), String> {
    let (b, m) = (normalize(backing), normalize(mp));
    if m.starts_with(&b) || b.starts_with(&m) {
        return Err(format!(
            "mount point {} and backing directory {}: one holds the other (the file system would serve itself)",
            mp.display(),
            backing.display()
        ));
    }
    Ok(())
}

fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

/// Mount the connection of `/dev/fuse` descriptor `dev` at `mp` for every user
/// (`allow_other`), the kernel checking permissions from the attributes
/// (`default_permissions`).
pub fn mount(dev: &OwnedFd, mp: &Path) -> Result<(), String> {
    let st = std::fs::metadata(mp).map_err(|e| format!("mount point {}: {e}", mp.display()))?;
    if !st.is_dir() {
        return Err(format!("mount point {}: not a directory", mp.display()));
    }
    let data = format!(
        "fd={},rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions",
        dev.as_raw_fd()
    );
    sys::mount(
        SOURCE,
        bytes(mp),
        FSTYPE,
        libc::MS_NOSUID | libc::MS_NODEV,
        &data,
    )
    .map_err(|e| format!("cannot mount FUSE at {}: {e}", mp.display()))
}

/// Unmount `mp`; if it is busy (a server still has a file open), detach it
/// (it goes when the last user lets go). Not mounted is fine.
pub fn unmount(mp: &Path) -> Result<(), String> {
    match sys::umount2(bytes(mp), 0) {
        Ok(()) => Ok(()),
        Err(Errno(libc::EBUSY)) => sys::umount2(bytes(mp), libc::MNT_DETACH)
            .map_err(|e| format!("cannot detach {}: {e}", mp.display())),
        Err(Errno(libc::EINVAL)) | Err(Errno(libc::ENOENT)) if mounted(mp).is_empty() => Ok(()),
        Err(e) => Err(format!("cannot unmount {}: {e}", mp.display())),
    }
}

/// Abort FUSE connection `dev` through the control file system, mounting it
/// for the moment if nobody has. Pending and future requests then fail at
/// once (ENOTCONN) instead of waiting for a server that will never answer.
fn abort(dev: u32) -> Result<(), String> {
    let ctl = Path::new(FUSECTL);
    let ours = !ctl.join(dev.to_string()).exists()
        && !mounts()
            .iter()
            .any(|m| m.fstype == "fusectl" && m.mountpoint == ctl);
    if ours {
        sys::mount("fusectl", bytes(ctl), "fusectl", 0, "")
            .map_err(|e| format!("cannot mount fusectl on {FUSECTL}: {e}"))?;
    }
    let file = ctl.join(dev.to_string()).join("abort");
    // A connection already gone (its server died and the kernel ended it)
    // has no directory: nothing to abort.
    let r = match std::fs::write(&file, b"1") {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!(
            "cannot abort FUSE connection ({}): {e}",
            file.display()
        )),
        _ => Ok(()),
    };
    if ours {
        let _ = sys::umount2(bytes(ctl), libc::MNT_DETACH);
    }
    r
}

/// Leave nothing of storlab's FUSE file system at `mp`, whatever became of
/// its server: abort each connection mounted there (its pending I/O fails at
/// once) and detach the mount. Idempotent; other file systems at `mp` are
/// left alone. Call it after stopping the server (`storlab lab down`, or a
/// failed `lab up`).
pub fn cleanup(mp: &Path) -> Result<(), String> {
    let mp = normalize(mp);
    let mut errors = Vec::new();
    for m in mounted(&mp).iter().rev() {
        if let Err(e) = abort(m.dev) {
            errors.push(e);
        }
        if let Err(e) = sys::umount2(bytes(&mp), libc::MNT_DETACH) {
            errors.push(format!("cannot detach {}: {e}", mp.display()));
        }
    }
    if !mounted(&mp).is_empty() {
        errors.push(format!("{} is still mounted", mp.display()));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_parse_with_escapes_and_optional_fields() {
        let l = "36 35 0:52 / /dev/shm/a\\040b rw,nosuid shared:12 - fuse.storlab storlab-media rw,user_id=0";
        let m = parse_line(l).unwrap();
        assert_eq!(m.mountpoint, PathBuf::from("/dev/shm/a b"));
        assert_eq!(m.fstype, FSTYPE);
        assert_eq!(m.source, SOURCE);
        assert_eq!(m.dev, 52);
        let l = "22 1 8:1 / / rw - ext4 /dev/sda1 rw";
        assert_eq!(parse_line(l).unwrap().dev, 8 << 20 | 1);
        assert_eq!(parse_line("garbage"), None);
    }

    #[test]
    fn normalize_keeps_the_last_name_and_resolves_the_parent() {
        let d = std::env::temp_dir();
        let c = std::fs::canonicalize(&d).unwrap();
        assert_eq!(normalize(&d.join("x")), c.join("x"));
    }
}
