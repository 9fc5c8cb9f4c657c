//! Preparing the data files a run reads and writes (the studies' `iobw.tst`
//! step), and keeping the user's data safe.
//!
//! storlab never destroys data it did not create unless told explicitly. Every
//! file it creates gets a sidecar marker `.<filename>.storlab` in the same
//! directory recording the file's device and inode, the prepared size and
//! content, and whether the fill completed. A file is storlab's ([`Ownership::Ours`])
//! only while the marker's device and inode still match it; a file of the user's
//! that replaced ours is foreign.

use crate::workload::Content;
use crate::workload::content;
use crate::workload::units;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Files are filled in writes of this size; chunk `i` holds
/// `content::fill(.., seed, i)` (the last chunk may be shorter).
pub const CHUNK: u64 = 1 << 20;

/// Version of the marker format.
pub const MARKER_FORMAT: u32 = 1;

/// The sidecar marker of a file storlab created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    /// Marker format version ([`MARKER_FORMAT`]).
    pub format: u32,
    /// st_dev of the file.
    pub dev: u64,
    /// st_ino of the file.
    pub ino: u64,
    /// Bytes prepared (filled) from offset 0.
    pub size: u64,
    /// Content written.
    pub content: Content,
    /// Content seed.
    pub seed: u64,
    /// Whether the fill finished (false while filling, so a crash is detected).
    pub complete: bool,
    /// storlab version that wrote the marker.
    pub storlab_version: String,
    /// When the file was created, Unix seconds.
    pub created: u64,
}

/// Who a path belongs to.
#[derive(Clone, Debug, PartialEq)]
pub enum Ownership {
    /// Nothing there.
    Missing,
    /// A regular file storlab created (its marker matches its device and inode).
    Ours(Marker),
    /// An existing file storlab did not create (or whose marker does not match).
    Foreign,
    /// A block device: never storlab's.
    BlockDevice,
}

/// What to prepare.
#[derive(Clone, Copy, Debug)]
pub struct PrepareRequest<'a> {
    /// The file or block device.
    pub path: &'a Path,
    /// Bytes the workload uses from offset 0.
    pub size: u64,
    /// Content to fill with.
    pub content: Content,
    /// Content seed.
    pub seed: u64,
    /// Whether the workload writes.
    pub writes: bool,
    /// The user's explicit `--allow-overwrite`: storlab may write to files it did not create.
    pub allow_foreign_writes: bool,
}

/// What prepare did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The path prepared.
    pub path: PathBuf,
    /// The file was created by this call.
    pub created: bool,
    /// Bytes written by this call.
    pub filled_bytes: u64,
    /// Existing data was used as it was (nothing written).
    pub reused: bool,
    /// Bytes usable from offset 0 (the requested size).
    pub size: u64,
}

/// Why prepare (or remove) failed. Every message is one line naming the path.
#[derive(Debug)]
pub enum PrepareError {
    /// The workload writes but the target is not storlab's.
    Refused {
        /// The target.
        path: PathBuf,
    },
    /// The target is smaller than the workload needs.
    TooSmall {
        /// The target.
        path: PathBuf,
        /// Its size in bytes.
        have: u64,
        /// The size needed in bytes.
        need: u64,
    },
    /// The parent directory of a file to create does not exist.
    NoParent {
        /// The file to create.
        path: PathBuf,
        /// Its missing directory.
        dir: PathBuf,
    },
    /// The target is neither a regular file nor a block device.
    NotAFile {
        /// The target.
        path: PathBuf,
    },
    /// A system call failed.
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What storlab was doing ("create", "write", "fsync").
        action: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for PrepareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrepareError::Refused { path } => write!(
                f,
                "refusing to write to {}: storlab did not create it (pass --allow-overwrite to let storlab overwrite it)",
                path.display()
            ),
            PrepareError::TooSmall { path, have, need } => write!(
                f,
                "{}: is {have} bytes ({}), the workload needs {need} bytes ({}): \
                 use a bigger file or device, or a smaller size or fewer VM disks",
                path.display(),
                units::format_size(*have),
                units::format_size(*need)
            ),
            PrepareError::NoParent { path, dir } => write!(
                f,
                "cannot create {}: directory {} does not exist",
                path.display(),
                dir.display()
            ),
            PrepareError::NotAFile { path } => {
                write!(f, "{}: not a regular file or block device", path.display())
            }
            PrepareError::Io {
                path,
                action,
                source,
            } => write!(
                f,
                "{}: cannot {action}: {}",
                path.display(),
                crate::backends::file::errno_text(source)
            ),
        }
    }
}

impl PrepareError {
    /// Whether the storage or the system failed (no space left, an I/O error,
    /// permission denied, a read-only file system) rather than the request:
    /// the same command may work once the storage is fixed. `false` means the
    /// user must change the command (refused, too small, no such directory,
    /// not a file, a path that cannot name a file).
    pub fn is_environment(&self) -> bool {
        match self {
            PrepareError::Refused { .. }
            | PrepareError::TooSmall { .. }
            | PrepareError::NoParent { .. }
            | PrepareError::NotAFile { .. } => false,
            PrepareError::Io { source, .. } => !matches!(
                source.raw_os_error(),
                Some(
                    libc::ENOENT | libc::ENOTDIR | libc::EISDIR | libc::ENAMETOOLONG | libc::ELOOP
                )
            ),
        }
    }
}

impl std::error::Error for PrepareError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrepareError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err<'a>(path: &'a Path, action: &'static str) -> impl FnOnce(io::Error) -> PrepareError + 'a {
    move |source| PrepareError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// The sidecar marker path of `path`: `.<filename>.storlab` in the same directory.
pub fn marker_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.storlab"))
}

fn read_marker(path: &Path) -> Option<Marker> {
    let text = fs::read(marker_path(path)).ok()?;
    let m: Marker = serde_json::from_slice(&text).ok()?;
    (m.format == MARKER_FORMAT).then_some(m)
}

fn write_marker(path: &Path, m: &Marker) -> Result<(), PrepareError> {
    let mp = marker_path(path);
    let tmp = mp.with_file_name(format!(
        "{}.tmp",
        mp.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let json = serde_json::to_vec_pretty(m).expect("marker serializes");
    let write = || -> io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(&json)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, &mp)
    };
    write().map_err(io_err(&mp, "write the marker"))
}

/// Who `path` belongs to; see [`Ownership`]. A marker that cannot be read,
/// parsed, or that names another device or inode makes the file foreign.
pub fn ownership(path: &Path) -> io::Result<Ownership> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Ownership::Missing),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_block_device() {
        return Ok(Ownership::BlockDevice);
    }
    if !ft.is_file() {
        return Ok(Ownership::Foreign);
    }
    match read_marker(path) {
        Some(m) if m.dev == meta.dev() && m.ino == meta.ino() => Ok(Ownership::Ours(m)),
        _ => Ok(Ownership::Foreign),
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Write `content` over `[from, to)` of `file` in [`CHUNK`]-aligned writes
/// (`from` is rounded down to a chunk; `to` is the file's size), then fsync.
/// Returns bytes written.
fn fill_range(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    content: Content,
    seed: u64,
) -> Result<u64, PrepareError> {
    let from = from / CHUNK * CHUNK;
    let mut chunks = Chunks::new(content, seed, to);
    let n = write_range(file, path, (from, to), &mut chunks)?;
    file.sync_all().map_err(io_err(path, "fsync"))?;
    Ok(n)
}

/// The prepared content of a `size`-byte file, one [`CHUNK`] at a time:
/// chunk `n` is [`content::fill`]`(.., n)` over its length (the last one
/// shorter). The last chunk made is kept, so ranges that fall in one chunk,
/// taken in order, cost its content once.
struct Chunks {
    content: Content,
    seed: u64,
    size: u64,
    made: Option<u64>,
    buf: Vec<u8>,
}

impl Chunks {
    fn new(content: Content, seed: u64, size: u64) -> Chunks {
        Chunks {
            content,
            seed,
            size,
            made: None,
            buf: Vec::new(),
        }
    }

    /// Chunk `n`'s bytes. Zeros are the same in every chunk: made once.
    fn chunk(&mut self, n: u64) -> &[u8] {
        let len = CHUNK.min(self.size.saturating_sub(n * CHUNK)) as usize;
        let same = self.made == Some(n) || (self.made.is_some() && self.content == Content::Zeros);
        if !same || self.buf.len() != len {
            self.buf.resize(len, 0);
            content::fill(&mut self.buf, self.content, self.seed, n);
            self.made = Some(n);
        }
        &self.buf
    }
}

/// Write the prepared content over exactly `[range.0, range.1)` of `file`
/// (cut at the file's size), no fsync: one write per chunk the range
/// touches. Returns bytes written.
fn write_range(
    file: &File,
    path: &Path,
    range: (u64, u64),
    chunks: &mut Chunks,
) -> Result<u64, PrepareError> {
    let (from, to) = (range.0, range.1.min(chunks.size));
    let mut off = from;
    while off < to {
        let (n, at) = (off / CHUNK, (off % CHUNK) as usize);
        let len = (CHUNK - off % CHUNK).min(to - off) as usize;
        file.write_all_at(&chunks.chunk(n)[at..at + len], off)
            .map_err(io_err(path, "write"))?;
        off += len as u64;
    }
    Ok(to.saturating_sub(from))
}

/// Rewrite a file storlab prepared back to its initial content (the studies'
/// "restore from snapshot" between tests): the content is a pure function of
/// seed and offset, so no copy of the file is kept. Refuses files storlab did
/// not create. Returns bytes written.
pub fn restore(path: &Path) -> Result<u64, PrepareError> {
    restore_ranges(path, &[(0, u64::MAX)])
}

/// [`restore`] only the byte ranges `[from, to)` of `ranges` (the parts of
/// the file written since its last restore; any order, overlaps allowed),
/// cut at the prepared size, then one fsync. Only those bytes are written.
/// Refuses files storlab did not create. Returns bytes written.
pub fn restore_ranges(path: &Path, ranges: &[(u64, u64)]) -> Result<u64, PrepareError> {
    let marker = match ownership(path).map_err(io_err(path, "inspect"))? {
        Ownership::Ours(m) if m.complete => m,
        _ => {
            return Err(PrepareError::Refused {
                path: path.to_path_buf(),
            });
        }
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io_err(path, "open"))?;
    let mut cut: Vec<(u64, u64)> = ranges
        .iter()
        .map(|&(from, to)| (from, to.min(marker.size)))
        .filter(|(from, to)| from < to)
        .collect();
    cut.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(cut.len());
    for (from, to) in cut {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    let mut chunks = Chunks::new(marker.content, marker.seed, marker.size);
    let mut written = 0;
    for (from, to) in merged {
        written += write_range(&file, path, (from, to), &mut chunks)?;
    }
    file.sync_all().map_err(io_err(path, "fsync"))?;
    Ok(written)
}

fn size_of(file: &File, path: &Path, block: bool) -> Result<u64, PrepareError> {
    if block {
        crate::backends::file::block_device_size(file.as_raw_fd())
            .map_err(io_err(path, "read the device size"))
    } else {
        Ok(file.metadata().map_err(io_err(path, "stat"))?.len())
    }
}

/// Check, writing nothing, that the existing file or block device `path`
/// holds `need` bytes: for a store storlab does not prepare (the lab's own,
/// which the lab made and fills), so that a workload larger than the store is
/// refused before any I/O instead of failing on reads past its end.
pub fn check_size(path: &Path, need: u64) -> Result<(), PrepareError> {
    let file = File::open(path).map_err(io_err(path, "open"))?;
    let block = file
        .metadata()
        .map_err(io_err(path, "stat"))?
        .file_type()
        .is_block_device();
    let have = size_of(&file, path, block)?;
    if have < need {
        return Err(PrepareError::TooSmall {
            path: path.to_path_buf(),
            have,
            need,
        });
    }
    Ok(())
}

/// Make `req.path` ready for the workload; see the module docs and the rules:
///
/// * missing: create it (the directory must exist), fill `size` bytes, fsync,
///   with the marker written incomplete before and complete after;
/// * ours, complete, large enough, same content and seed: reuse, write nothing;
/// * ours otherwise: extend (same content and seed) or refill;
/// * foreign file or block device: refuse if the workload writes without
///   `allow_foreign_writes`; if read-only, only check its size; with
///   `allow_foreign_writes`, fill it (no marker: it stays the user's).
pub fn prepare(req: &PrepareRequest) -> Result<Prepared, PrepareError> {
    let path = req.path;
    let owner = ownership(path).map_err(io_err(path, "stat"))?;
    let done = |created, filled_bytes, reused| Prepared {
        path: path.to_path_buf(),
        created,
        filled_bytes,
        reused,
        size: req.size,
    };
    match owner {
        Ownership::Missing => {
            let dir = match path.parent() {
                Some(d) if d.as_os_str().is_empty() => Path::new("."),
                Some(d) => d,
                None => {
                    return Err(PrepareError::NotAFile {
                        path: path.to_path_buf(),
                    });
                }
            };
            if !dir.is_dir() {
                return Err(PrepareError::NoParent {
                    path: path.to_path_buf(),
                    dir: dir.to_path_buf(),
                });
            }
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(io_err(path, "create"))?;
            let meta = file.metadata().map_err(io_err(path, "stat"))?;
            let mut marker = Marker {
                format: MARKER_FORMAT,
                dev: meta.dev(),
                ino: meta.ino(),
                size: req.size,
                content: req.content,
                seed: req.seed,
                complete: false,
                storlab_version: env!("CARGO_PKG_VERSION").to_string(),
                created: now_unix(),
            };
            // A file this call created and could not finish (no space, an I/O
            // error) is removed with its marker: a partial fill is never
            // reused, so keeping it would only hold the space.
            let made = (|| {
                write_marker(path, &marker)?;
                let filled = fill_range(&file, path, 0, req.size, req.content, req.seed)?;
                marker.complete = true;
                write_marker(path, &marker)?;
                Ok(filled)
            })();
            match made {
                Ok(filled) => Ok(done(true, filled, false)),
                Err(e) => {
                    drop(file);
                    let _ = fs::remove_file(path);
                    let _ = fs::remove_file(marker_path(path));
                    Err(e)
                }
            }
        }
        Ownership::Ours(mut marker) => {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(io_err(path, "open"))?;
            let len = file.metadata().map_err(io_err(path, "stat"))?.len();
            let same = marker.content == req.content && marker.seed == req.seed;
            if marker.complete && same && marker.size >= req.size && len >= req.size {
                return Ok(done(false, 0, true));
            }
            // Extend what is complete and alike; refill anything else.
            let from = if marker.complete && same {
                marker.size.min(len)
            } else {
                0
            };
            marker.size = req.size;
            marker.content = req.content;
            marker.seed = req.seed;
            marker.complete = false;
            write_marker(path, &marker)?;
            if from == 0 && len > req.size {
                file.set_len(req.size).map_err(io_err(path, "truncate"))?;
            }
            let filled = fill_range(&file, path, from, req.size, req.content, req.seed)?;
            marker.complete = true;
            write_marker(path, &marker)?;
            Ok(done(false, filled, false))
        }
        Ownership::Foreign | Ownership::BlockDevice => {
            let block = owner == Ownership::BlockDevice;
            if req.writes && !req.allow_foreign_writes {
                return Err(PrepareError::Refused {
                    path: path.to_path_buf(),
                });
            }
            let file = fs::OpenOptions::new()
                .read(true)
                .write(req.writes)
                .open(path)
                .map_err(io_err(path, "open"))?;
            let meta = file.metadata().map_err(io_err(path, "stat"))?;
            if !(meta.file_type().is_file() || block) {
                return Err(PrepareError::NotAFile {
                    path: path.to_path_buf(),
                });
            }
            let have = size_of(&file, path, block)?;
            if !req.writes {
                if have < req.size {
                    return Err(PrepareError::TooSmall {
                        path: path.to_path_buf(),
                        have,
                        need: req.size,
                    });
                }
                return Ok(done(false, 0, true));
            }
            if block && have < req.size {
                return Err(PrepareError::TooSmall {
                    path: path.to_path_buf(),
                    have,
                    need: req.size,
                });
            }
            let filled = fill_range(&file, path, 0, req.size, req.content, req.seed)?;
            Ok(done(false, filled, false))
        }
    }
}

/// Delete `path` and its marker if storlab created it; anything else is left
/// alone. Returns whether the file was deleted. A marker left without its file
/// is removed too.
pub fn remove(path: &Path) -> io::Result<bool> {
    match ownership(path)? {
        Ownership::Ours(_) => {
            fs::remove_file(path)?;
            match fs::remove_file(marker_path(path)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            Ok(true)
        }
        Ownership::Missing => {
            if read_marker(path).is_some() {
                let _ = fs::remove_file(marker_path(path));
            }
            Ok(false)
        }
        Ownership::Foreign | Ownership::BlockDevice => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    static N: AtomicU32 = AtomicU32::new(0);

    /// A fresh temporary directory, removed on drop.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new() -> Self {
            let p = std::env::temp_dir().join(format!(
                "storlab-prepare-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn req(path: &Path, size: u64, writes: bool) -> PrepareRequest<'_> {
        PrepareRequest {
            path,
            size,
            content: Content::Mixed {
                compress_pct: 30,
                dedupe_pct: 10,
            },
            seed: 99,
            writes,
            allow_foreign_writes: false,
        }
    }

    fn expected(size: u64, content: Content, seed: u64) -> Vec<u8> {
        let mut v = vec![0u8; size as usize];
        for (i, chunk) in v.chunks_mut(CHUNK as usize).enumerate() {
            content::fill(chunk, content, seed, i as u64);
        }
        v
    }

    #[test]
    fn check_size_refuses_a_store_smaller_than_needed_and_writes_nothing() {
        let d = TempDir::new();
        let p = d.path("store");
        fs::write(&p, vec![7u8; 4096]).unwrap();
        check_size(&p, 4096).unwrap();
        let e = check_size(&p, 4097).unwrap_err();
        assert!(
            matches!(
                e,
                PrepareError::TooSmall {
                    have: 4096,
                    need: 4097,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("{}: is 4096 bytes", p.display())),
            "{e}"
        );
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 4096]);
        assert!(!marker_path(&p).exists());
        assert!(check_size(&d.path("missing"), 1).is_err());
    }

    #[test]
    fn create_then_reuse_writes_nothing() {
        let d = TempDir::new();
        let p = d.path("iobw.tst");
        assert_eq!(ownership(&p).unwrap(), Ownership::Missing);
        let size = 3 * CHUNK + 12345;
        let r = req(&p, size, true);
        let first = prepare(&r).unwrap();
        assert!(first.created && !first.reused);
        assert_eq!(first.filled_bytes, size);
        assert_eq!(fs::metadata(&p).unwrap().len(), size);
        let Ownership::Ours(m) = ownership(&p).unwrap() else {
            panic!("not ours")
        };
        assert!(m.complete);
        assert_eq!((m.size, m.seed, m.content), (size, 99, r.content));
        // Content check.
        assert!(
            fs::read(&p).unwrap() == expected(size, r.content, 99),
            "filled data differs from content::fill"
        );

        let mtime = fs::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = prepare(&r).unwrap();
        assert!(!second.created && second.reused);
        assert_eq!(second.filled_bytes, 0);
        assert_eq!(fs::metadata(&p).unwrap().modified().unwrap(), mtime);
        // A smaller request reuses too.
        assert_eq!(prepare(&req(&p, CHUNK, false)).unwrap().filled_bytes, 0);

        assert!(remove(&p).unwrap());
        assert!(!p.exists() && !marker_path(&p).exists());
    }

    #[test]
    fn incomplete_marker_is_refilled_and_extension_appends() {
        let d = TempDir::new();
        let p = d.path("data");
        let r = req(&p, 2 * CHUNK, true);
        prepare(&r).unwrap();
        // Simulate a crash mid-fill: marker incomplete, data damaged.
        let Ownership::Ours(mut m) = ownership(&p).unwrap() else {
            panic!()
        };
        m.complete = false;
        write_marker(&p, &m).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .write_all_at(&[0xEE; 100], 10)
            .unwrap();
        let again = prepare(&r).unwrap();
        assert!(!again.reused && !again.created);
        assert_eq!(again.filled_bytes, 2 * CHUNK);
        assert_eq!(fs::read(&p).unwrap(), expected(2 * CHUNK, r.content, 99));
        let Ownership::Ours(m) = ownership(&p).unwrap() else {
            panic!()
        };
        assert!(m.complete);

        // Extend: only the new part (from the last whole chunk) is written.
        let bigger = req(&p, 3 * CHUNK + 10, true);
        let ext = prepare(&bigger).unwrap();
        assert_eq!(ext.filled_bytes, CHUNK + 10);
        assert_eq!(
            fs::read(&p).unwrap(),
            expected(3 * CHUNK + 10, r.content, 99)
        );

        // Other content: refilled.
        let mut zeros = req(&p, CHUNK, true);
        zeros.content = Content::Zeros;
        assert_eq!(prepare(&zeros).unwrap().filled_bytes, CHUNK);
        assert!(fs::read(&p).unwrap().iter().all(|&b| b == 0));
        assert!(remove(&p).unwrap());
    }

    #[test]
    fn foreign_file_refused_for_writes_accepted_for_reads() {
        let d = TempDir::new();
        let p = d.path("users-data");
        fs::write(&p, vec![7u8; 3 * 4096]).unwrap();
        assert_eq!(ownership(&p).unwrap(), Ownership::Foreign);
        let err = prepare(&req(&p, 4096, true)).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            msg,
            format!(
                "refusing to write to {}: storlab did not create it (pass --allow-overwrite to let storlab overwrite it)",
                p.display()
            )
        );
        assert!(!msg.contains('\n'));
        let ok = prepare(&req(&p, 3 * 4096, false)).unwrap();
        assert!(ok.reused && !ok.created && ok.filled_bytes == 0);
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 3 * 4096]);
        // remove leaves it alone.
        assert!(!remove(&p).unwrap());
        assert!(p.exists());

        // With the user's permission it is filled, but stays foreign.
        let mut allowed = req(&p, 2 * 4096, true);
        allowed.allow_foreign_writes = true;
        let done = prepare(&allowed).unwrap();
        assert_eq!(done.filled_bytes, 2 * 4096);
        assert_eq!(
            fs::read(&p).unwrap()[..2 * 4096],
            expected(2 * 4096, allowed.content, 99)[..]
        );
        assert_eq!(ownership(&p).unwrap(), Ownership::Foreign);
    }

    #[test]
    fn sliced_plan_sizes_created_files_and_refuses_a_small_foreign_one() {
        use crate::plan::{self, TargetKind};
        use crate::target::Target;
        use crate::workload::DiskLayout;
        let d = TempDir::new();
        // 4 VMs x 2 disks of 1 MiB, sliced on one file: it must hold 8 MiB.
        let mut spec = crate::workload::test_spec(4, 1, 2);
        let prep = |p: &Path, spec: &crate::workload::Spec, writes| {
            let t = vec![(Target::File(p.to_path_buf()), TargetKind::Single)];
            let plan = plan::build(spec, &t, 2);
            assert_eq!(plan.disks.len(), 1);
            prepare(&req(p, plan.disks[0].end(), writes))
        };
        let created = d.path("datastore");
        let r = prep(&created, &spec, true).unwrap();
        assert!(r.created);
        assert_eq!(fs::metadata(&created).unwrap().len(), 8 << 20);
        // A file of the user's (or a device) smaller than the working set.
        let small = d.path("user.img");
        fs::write(&small, vec![7u8; 6 << 20]).unwrap();
        let err = prep(&small, &spec, false).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, PrepareError::TooSmall { have, need, .. } if have == 6 << 20 && need == 8 << 20),
            "{msg}"
        );
        assert!(msg.starts_with(&small.display().to_string()), "{msg}");
        assert!(msg.contains("6291456") && msg.contains("8388608"), "{msg}");
        // The old layout needs one region only.
        spec.disk_layout = DiskLayout::Shared;
        assert!(prep(&small, &spec, false).unwrap().reused);
        assert_eq!(fs::read(&small).unwrap(), vec![7u8; 6 << 20]);
    }

    #[test]
    fn too_small_foreign_file() {
        let d = TempDir::new();
        let p = d.path("small");
        fs::write(&p, vec![1u8; 1000]).unwrap();
        let err = prepare(&req(&p, 1 << 20, false)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(
            err,
            PrepareError::TooSmall {
                have: 1000,
                need: 1048576,
                ..
            }
        ));
        assert!(msg.starts_with(&p.display().to_string()), "{msg}");
        assert!(msg.contains("1000") && msg.contains("1048576"), "{msg}");
        assert_eq!(fs::read(&p).unwrap(), vec![1u8; 1000]);
    }

    #[test]
    fn replaced_file_is_foreign() {
        let d = TempDir::new();
        let p = d.path("replaced");
        prepare(&req(&p, 8192, true)).unwrap();
        assert!(matches!(ownership(&p).unwrap(), Ownership::Ours(_)));
        // The user replaces our file with theirs (new inode, same name);
        // the old inode is kept alive so the number cannot be reused.
        let keep = d.path("old");
        fs::rename(&p, &keep).unwrap();
        fs::write(&p, b"precious").unwrap();
        assert_eq!(ownership(&p).unwrap(), Ownership::Foreign);
        assert!(matches!(
            prepare(&req(&p, 8, true)),
            Err(PrepareError::Refused { .. })
        ));
        assert!(!remove(&p).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"precious");
    }

    #[test]
    fn missing_directory_is_named() {
        let d = TempDir::new();
        let p = d.path("nope/file");
        let err = prepare(&req(&p, 4096, true)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot create {}: directory {} does not exist",
                p.display(),
                d.path("nope").display()
            )
        );
    }

    #[test]
    fn corrupt_marker_is_foreign() {
        let d = TempDir::new();
        let p = d.path("f");
        prepare(&req(&p, 4096, true)).unwrap();
        fs::write(marker_path(&p), b"{ not json").unwrap();
        assert_eq!(ownership(&p).unwrap(), Ownership::Foreign);
    }

    #[test]
    fn storage_failures_are_told_apart_from_bad_requests() {
        let io = |errno| PrepareError::Io {
            path: PathBuf::from("/x/data.dat"),
            action: "write",
            source: io::Error::from_raw_os_error(errno),
        };
        for errno in [
            libc::ENOSPC,
            libc::EIO,
            libc::EACCES,
            libc::EROFS,
            libc::EDQUOT,
        ] {
            assert!(io(errno).is_environment(), "errno {errno}");
        }
        for errno in [libc::ENOTDIR, libc::EISDIR, libc::ENAMETOOLONG] {
            assert!(!io(errno).is_environment(), "errno {errno}");
        }
        let d = TempDir::new();
        let p = d.path("f");
        fs::write(&p, b"someone else's data").unwrap();
        let refused = prepare(&req(&p, 4096, true)).unwrap_err();
        assert!(matches!(refused, PrepareError::Refused { .. }), "{refused}");
        assert!(!refused.is_environment());
        let missing = prepare(&req(&d.path("nope/f"), 4096, true)).unwrap_err();
        assert!(!missing.is_environment(), "{missing}");
    }

    /// Scribble `len` bytes of 0xEE at each offset of `at` in `p`.
    fn scribble(p: &Path, at: &[u64], len: usize) {
        let f = fs::OpenOptions::new().write(true).open(p).unwrap();
        for &o in at {
            f.write_all_at(&vec![0xEE; len], o).unwrap();
        }
    }

    #[test]
    fn restoring_the_written_ranges_brings_back_every_byte_and_writes_only_them() {
        let d = TempDir::new();
        let p = d.path("store");
        let size = 8 * CHUNK + 12345;
        prepare(&req(&p, size, true)).unwrap();
        let want = fs::read(&p).unwrap();
        let at = [10, 3 * CHUNK - 2, 8 * CHUNK + 100];
        scribble(&p, &at, 4);
        assert_ne!(fs::read(&p).unwrap(), want);
        // Given unordered, with an overlap, one range empty and one past the end.
        let ranges = [
            (8 * CHUNK + 100, 8 * CHUNK + 104),
            (3 * CHUNK - 2, 3 * CHUNK + 2),
            (10, 14),
            (2 * CHUNK, 3 * CHUNK),
            (5 * CHUNK, 5 * CHUNK),
            (size + CHUNK, size + 2 * CHUNK),
        ];
        let n = restore_ranges(&p, &ranges).unwrap();
        assert_eq!(
            n,
            4 + (CHUNK + 2) + 4,
            "the ranges' bytes, the overlap once"
        );
        assert!(fs::read(&p).unwrap() == want, "every byte back");
        assert_eq!(restore_ranges(&p, &[]).unwrap(), 0);
    }

    #[test]
    fn a_range_inside_a_chunk_is_restored_exactly_for_every_content() {
        let contents = [
            Content::Random,
            Content::Zeros,
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 30,
            },
        ];
        for content in contents {
            let d = TempDir::new();
            let p = d.path("store");
            let size = 3 * CHUNK + 5000;
            let mut r = req(&p, size, true);
            r.content = content;
            prepare(&r).unwrap();
            let want = fs::read(&p).unwrap();
            // Mid-chunk, across a chunk boundary, and the file's short last unit.
            let at = [CHUNK / 2 + 3, 2 * CHUNK - 100, size - 300];
            scribble(&p, &at, 200);
            let ranges: Vec<(u64, u64)> = at.iter().map(|&o| (o, o + 200)).collect();
            assert_eq!(restore_ranges(&p, &ranges).unwrap(), 600, "{content:?}");
            assert!(
                fs::read(&p).unwrap() == want,
                "{content:?}: every byte back"
            );
        }
    }

    #[test]
    fn a_range_left_out_stays_written_and_the_whole_restore_fixes_it() {
        let d = TempDir::new();
        let p = d.path("store");
        let size = 4 * CHUNK;
        prepare(&req(&p, size, true)).unwrap();
        let want = fs::read(&p).unwrap();
        scribble(&p, &[0, 2 * CHUNK], 1);
        restore_ranges(&p, &[(0, 1)]).unwrap();
        let now = fs::read(&p).unwrap();
        assert_eq!(now[..CHUNK as usize], want[..CHUNK as usize]);
        assert_eq!(now[2 * CHUNK as usize], 0xEE, "not asked: not restored");
        assert_eq!(restore(&p).unwrap(), size);
        assert!(fs::read(&p).unwrap() == want);
    }

    #[test]
    fn neither_restore_writes_a_file_storlab_did_not_create() {
        let d = TempDir::new();
        let p = d.path("store");
        fs::write(&p, vec![7u8; 2 * CHUNK as usize]).unwrap();
        for r in [restore_ranges(&p, &[(0, CHUNK)]), restore(&p)] {
            assert!(matches!(r, Err(PrepareError::Refused { .. })), "{r:?}");
        }
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 2 * CHUNK as usize]);
    }
}
