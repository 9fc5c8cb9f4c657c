//! The backing store: one file, fully written (no holes), alone in a directory
//! that ganesha exports.

use crate::prepare::{self, PrepareRequest};
use crate::workload::Content;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
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
    // SAFETY: statvfs is plain old data; all-zero bytes are a valid value.
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

/// Make the directory and write `size` bytes into the file. `made` is called
/// as soon as the directory exists (to record it before the long write).
pub fn create(
    backing: &Backing,
    size: u64,
    slot: u8,
    mut made: impl FnMut(&BackingInfo) -> Result<(), String>,
) -> Result<BackingInfo, String> {
    let dir = dir_for(backing, slot);
    let parent = dir.parent().unwrap_or(Path::new("/"));
    if !parent.is_dir() {
        return Err(format!(
            "backing directory {} does not exist",
            parent.display()
        ));
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
        format!(
            "cannot create {}: {e} (left over from an earlier lab? run `storlab lab down`)",
            dir.display()
        )
    })?;
    let path = dir.join(FILE);
    let info = BackingInfo {
        kind: if matches!(backing, Backing::Ram) {
            "ram"
        } else {
            "disk"
        }
        .into(),
        dir,
        path,
        size,
    };
    made(&info)?;
    // Prepared like any storlab data file: written in full with incompressible
    // content (never sparse, so reads never hit a hole) and marked as
    // storlab's, so workloads may write to it and `restore` can reset it.
    let req = PrepareRequest {
        path: &info.path,
        size,
        content: Content::Random,
        seed: SEED,
        writes: true,
        allow_foreign_writes: false,
    };
    prepare::prepare(&req).map_err(|e| format!("cannot write backing file: {e}"))?;
    Ok(info)
}

/// Seed of the backing store's content.
pub const SEED: u64 = crate::workload::jobfile::DEFAULT_SEED;

/// Remove the file and its directory; what is already gone is fine.
pub fn remove(info: &BackingInfo) -> Result<(), String> {
    match std::fs::remove_dir_all(&info.dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", info.dir.display()))
        }
        _ => Ok(()),
    }
}
