//! The backing store: one file, fully written (no holes), alone in a directory
//! that ganesha exports.

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The backing file's name inside its directory.
pub const FILE: &str = "disk.img";

/// Where the backing store lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backing {
    /// In /dev/shm (tmpfs): no page-cache eviction, no disk.
    Ram,
    /// In a directory on disk.
    Disk(PathBuf),
}

/// The backing store as made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackingInfo {
    /// `ram` or `disk`.
    pub kind: String,
    /// The directory the lab made (and exports over NFS).
    pub dir: PathBuf,
    /// The backing file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

/// Bytes free on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and a zeroed out-struct.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bfree as u64 * st.f_frsize as u64)
}

/// The directory the backing store of slot `slot` goes in.
pub fn dir_for(backing: &Backing, slot: u8) -> PathBuf {
    let parent = match backing {
        Backing::Ram => Path::new("/dev/shm"),
        Backing::Disk(d) => d.as_path(),
    };
    parent.join(format!("storlab-lab{slot}"))
}

/// Make the directory and write `size` bytes into the file.
pub fn create(backing: &Backing, size: u64, slot: u8) -> Result<BackingInfo, String> {
    let dir = dir_for(backing, slot);
    let parent = dir.parent().unwrap_or(Path::new("/"));
    if !parent.is_dir() {
        return Err(format!("backing directory {} does not exist", parent.display()));
    }
    if let Some(free) = free_bytes(parent)
        && free < size
    {
        return Err(format!(
            "not enough space in {} for a {size}-byte backing file ({free} bytes free)",
            parent.display()
        ));
    }
    std::fs::create_dir(&dir).map_err(|e| {
        format!("cannot create {}: {e} (left over from an earlier lab? run `storlab lab down`)", dir.display())
    })?;
    let path = dir.join(FILE);
    let info = BackingInfo {
        kind: if matches!(backing, Backing::Ram) { "ram" } else { "disk" }.into(),
        dir,
        path,
        size,
    };
    write_full(&info.path, size).map_err(|e| format!("cannot write backing file {}: {e}", info.path.display()))?;
    Ok(info)
}

/// Write every byte, so reads never hit a hole or an unwritten extent.
fn write_full(path: &Path, size: u64) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Remove the file and its directory; what is already gone is fine.
pub fn remove(info: &BackingInfo) -> Result<(), String> {
    match std::fs::remove_dir_all(&info.dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("cannot remove {}: {e}", info.dir.display())),
        _ => Ok(()),
    }
}
