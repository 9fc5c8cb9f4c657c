//! The file-operations contract: what the metadata workload (`crate::meta`)
//! asks of a file system, by path, one operation at a time.
//!
//! Paths are relative to the directory the implementation was opened on and
//! use `/` between components; they never hold `.` or `..`. An
//! implementation is used by one thread at a time (each worker opens its own:
//! its own NFS connection, its own handle cache). It never reads the clock
//! for statistics: the caller times every operation.
//!
//! Implementations: a local directory (`backends::dir`) and storlab's NFS
//! client, NFSv3, NFSv4.0 and NFSv4.1 (`backends::nfs::meta`).

use std::fmt;

/// A failed file operation: the errno it maps to and one line naming the
/// operation and the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    /// The errno (an NFS status is mapped as the block backend maps it).
    pub errno: i32,
    /// What failed, naming the operation and the path.
    pub message: String,
}

impl FsError {
    /// An error of `errno` with `message`.
    pub fn new(errno: i32, message: impl Into<String>) -> FsError {
        FsError {
            errno,
            message: message.into(),
        }
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create a new file, failing (EEXIST) when the name exists: what storlab
    /// creates is always its own.
    Create,
    /// An existing file, for writing (and reading).
    Write,
    /// An existing file, for reading.
    Read,
}

/// What `stat` tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// A directory.
    pub dir: bool,
    /// Size in bytes.
    pub size: u64,
}

/// An open file: a number the implementation gave out, valid until `close`.
#[derive(Debug, PartialEq, Eq)]
pub struct Handle(pub u64);

/// A file system reached by path: a local directory or an NFS export.
pub trait FileOps: Send {
    /// What serves the operations, for the report ("local directory",
    /// "storlab NFSv4.1 client over TCP").
    fn describe(&self) -> String;
    /// Make directory `path` (its parent exists); EEXIST when it exists.
    fn mkdir(&mut self, path: &str) -> Result<(), FsError>;
    /// Remove the empty directory `path`.
    fn rmdir(&mut self, path: &str) -> Result<(), FsError>;
    /// Open `path`.
    fn open(&mut self, path: &str, mode: OpenMode) -> Result<Handle, FsError>;
    /// Write all of `data` at `offset`.
    fn write_at(&mut self, h: &Handle, offset: u64, data: &[u8]) -> Result<(), FsError>;
    /// Read up to `buf.len()` bytes at `offset`: the bytes read (fewer only at
    /// the end of the file).
    fn read_at(&mut self, h: &Handle, offset: u64, buf: &mut [u8]) -> Result<usize, FsError>;
    /// Make what was written through `h` stable (fsync; COMMIT over NFS).
    fn sync(&mut self, h: &Handle) -> Result<(), FsError>;
    /// Close `h`. Over NFS data written UNSTABLE is committed first (as the
    /// Linux client does at close); a local close does not fsync.
    fn close(&mut self, h: Handle) -> Result<(), FsError>;
    /// Drop what the client caches of `path`'s data, so the next read goes
    /// to the storage (`posix_fadvise(DONTNEED)` locally; storlab's NFS
    /// client caches no data).
    fn drop_cache(&mut self, path: &str) -> Result<(), FsError>;
    /// The attributes of `path`, asked of the storage (GETATTR over NFS).
    fn stat(&mut self, path: &str) -> Result<Attr, FsError>;
    /// Rename `from` to `to` (both relative paths; `to` must not exist).
    fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError>;
    /// Remove the file `path`.
    fn remove(&mut self, path: &str) -> Result<(), FsError>;
    /// The names in directory `path` (without `.` and `..`).
    fn list(&mut self, path: &str) -> Result<Vec<String>, FsError>;
}

/// `path`'s parent directory ("" for the top) and its last component.
pub fn split_path(path: &str) -> (&str, &str) {
    match path.rsplit_once('/') {
        Some((d, n)) => (d, n),
        None => ("", path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_parent_and_name() {
        assert_eq!(split_path("a/b/c"), ("a/b", "c"));
        assert_eq!(split_path("c"), ("", "c"));
        assert_eq!(FsError::new(2, "x: gone").to_string(), "x: gone");
    }
}
