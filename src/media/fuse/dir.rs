//! Directories: OPENDIR keeps a listing stream of the backing directory;
//! READDIR continues it from the kernel's offset, which is the backing file
//! system's own cookie (getdents64 `d_off`), so a listing resumes where the
//! kernel says whatever happened in between.

use super::abi::{self, Dirent, Pod};
use super::nodes::{Handles, Nodes};
use super::reply::Reply;
use super::sys::{self, DirEntry, Sys};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Mutex;

/// An open directory.
pub struct DirStream {
    fd: OwnedFd,
    /// The cookie after the last entry sent: where the kernel's next
    /// READDIR starts if it continues the listing.
    pos: u64,
    /// Entries read from the backing directory that did not fit the last reply.
    pending: Vec<DirEntry>,
}

/// The open directories, by the handle the kernel holds.
#[derive(Default)]
pub struct Dirs(Handles<Mutex<DirStream>>);

impl Dirs {
    /// How many are open.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// RELEASEDIR.
    pub(super) fn release(&self, fh: u64) {
        self.0.remove(fh);
    }

    /// OPENDIR of node `n`.
    pub(super) fn opendir(&self, nodes: &Nodes, n: u64) -> Sys<Reply> {
        let node = nodes.fd(n)?;
        let fd = sys::reopen(node.as_fd(), libc::O_RDONLY | libc::O_DIRECTORY)?;
        let fh = self.0.insert(Mutex::new(DirStream {
            fd,
            pos: 0,
            pending: Vec::new(),
        }));
        Ok(Reply::of(&abi::OpenOut {
            fh,
            ..Default::default()
        }))
    }

    /// READDIR: as many entries from `offset` on as fit in `size` bytes.
    pub(super) fn readdir(&self, r: &abi::ReadIn) -> Sys<Reply> {
        let dir = self.0.get(r.fh)?;
        let mut d = dir.lock().unwrap_or_else(|e| e.into_inner());
        if d.pos != r.offset {
            sys::lseek(d.fd.as_fd(), r.offset, libc::SEEK_SET)?;
            d.pos = r.offset;
            d.pending.clear();
        }
        let size = r.size as usize;
        let mut reply = Reply::with_capacity(size);
        let mut buf = vec![0u8; 32 * 1024];
        let mut used = 0;
        'fill: loop {
            if d.pending.is_empty() {
                d.pending = sys::getdents(d.fd.as_fd(), &mut buf)?;
                d.pending.reverse();
                if d.pending.is_empty() {
                    break;
                }
            }
            while let Some(e) = d.pending.pop() {
                let len = abi::dirent_len(e.name.len());
                if used + len > size {
                    d.pending.push(e);
                    break 'fill;
                }
                let out = reply.payload();
                out.extend_from_slice(
                    Dirent {
                        ino: e.ino,
                        off: e.off,
                        namelen: e.name.len() as u32,
                        typ: e.typ as u32,
                    }
                    .bytes(),
                );
                out.extend_from_slice(&e.name);
                out.resize(out.len() + len - size_of::<Dirent>() - e.name.len(), 0);
                used += len;
                d.pos = e.off;
            }
        }
        Ok(reply)
    }

    /// FSYNCDIR.
    pub(super) fn fsyncdir(&self, f: &abi::FsyncIn) -> Sys<Reply> {
        let dir = self.0.get(f.fh)?;
        let d = dir.lock().unwrap_or_else(|e| e.into_inner());
        sys::fsync(d.fd.as_fd(), f.fsync_flags & abi::FSYNC_FDATASYNC != 0)?;
        Ok(Reply::ok())
    }
}
