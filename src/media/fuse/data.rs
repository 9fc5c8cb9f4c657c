//! Opening files and moving their data. A READ, WRITE or FSYNC first asks the
//! medium when it completes (at its arrival time), then does the real I/O on
//! the backing file, and is answered no earlier than the medium's time.

use super::abi::{self, fopen};
use super::calibrate;
use super::fs::{Answer, CacheMode, Fs, OpenFile};
use super::reply::Reply;
use super::sys::{self, Errno, Sys};
use crate::media::{MediaOp, OpKind};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Open flags the backing file is not opened with: the kernel made or
/// checked the file already (O_CREAT, O_EXCL, O_NOCTTY); it gives every
/// write's offset, which pwrite on an O_APPEND file would ignore; and direct
/// I/O is the FUSE side's business (the backing store may be tmpfs).
const DROPPED: i32 =
    libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY | libc::O_APPEND | libc::O_DIRECT;

impl Fs {
    /// OPEN.
    pub(super) fn open(&self, n: u64, flags: i32, chan: &OwnedFd) -> Sys<Reply> {
        let node = self.nodes.live_fd(n)?;
        let old = self.size_before_trunc(flags, || sys::fstat(node.as_fd()));
        let fd = sys::reopen(node.as_fd(), flags & !DROPPED);
        self.truncated(old);
        let fd = fd?;
        Ok(Reply::of(&self.opened(n, fd, flags, chan)))
    }

    /// CREATE: make and open `name`, reply with its entry and the open file.
    pub(super) fn create(
        &self,
        h: &abi::InHeader,
        name: &[u8],
        c: &abi::CreateIn,
        chan: &OwnedFd,
    ) -> Sys<Reply> {
        let dir = self.nodes.fd(h.nodeid)?;
        // The client's O_EXCL stays: the backing file system decides.
        let flags = (c.flags as i32 & !DROPPED) | libc::O_CREAT | (c.flags as i32 & libc::O_EXCL);
        let old = self.size_before_trunc(flags, || {
            sys::openat(dir.as_fd(), name, libc::O_PATH | libc::O_NOFOLLOW, 0)
                .and_then(|f| sys::fstat(f.as_fd()))
        });
        let fd = sys::openat(dir.as_fd(), name, flags, c.mode);
        self.truncated(old);
        let fd = fd?;
        self.own(h, &fd)?;
        let (id, st) = self
            .nodes
            .remember(Arc::new(sys::reopen(fd.as_fd(), libc::O_PATH)?))?;
        let entry = self.entry(id, &st);
        let open = self.opened(id, fd, c.flags as i32, chan);
        let mut r = Reply::of(&entry);
        r.payload().extend_from_slice(abi::Pod::bytes(&open));
        Ok(r)
    }

    /// An open with O_TRUNC (the kernel sends it so, having negotiated
    /// atomic O_TRUNC) empties the file: its size before (0 for a file not
    /// there yet or another file than the store, `None` for one that cannot
    /// be read: marked whole), read by `stat` before the open.
    fn size_before_trunc(&self, flags: i32, stat: impl FnOnce() -> Sys<libc::stat>) -> Option<u64> {
        if flags & libc::O_TRUNC == 0 {
            return Some(0);
        }
        match stat() {
            Ok(st) if !self.scope.counts(st.st_dev, st.st_ino) => Some(0),
            Ok(st) => Some(st.st_size as u64),
            Err(Errno(libc::ENOENT)) => Some(0),
            Err(_) => None,
        }
    }

    /// Mark what a truncating open emptied (after it did).
    fn truncated(&self, old: Option<u64>) {
        match old {
            Some(size) => self.dirty.mark(0, size),
            None => self
                .dirty
                .mark_all("a truncating open of a file of unknown size"),
        }
    }

    /// Keep an opened backing file and say how the kernel is to use it.
    fn opened(&self, node: u64, fd: OwnedFd, flags: i32, chan: &OwnedFd) -> abi::OpenOut {
        let sync = flags & libc::O_DSYNC != 0;
        let (open_flags, backing_id) = match self.mode() {
            CacheMode::Direct => (fopen::DIRECT_IO | fopen::PARALLEL_DIRECT_WRITES, None),
            CacheMode::PageCache => (fopen::KEEP_CACHE, None),
            CacheMode::Passthrough => {
                match self.backing_of(node, &fd, chan) {
                    Ok(id) => (fopen::PASSTHROUGH, Some(id)),
                    Err(e) => {
                        // Not for this file (the kernel may refuse one it
                        // cannot stack on): the page cache serves it instead.
                        eprintln!(
                            "storlab media: passthrough refused ({e}); this file is served through the page cache"
                        );
                        (fopen::KEEP_CACHE, None)
                    }
                }
            }
        };
        self.nodes.count_open(node, 1);
        // A file that cannot be stat'ed counts: more to restore, never less.
        let store =
            sys::fstat(fd.as_fd()).map_or(true, |st| self.scope.counts(st.st_dev, st.st_ino));
        let fh = self.files.insert(OpenFile {
            fd,
            sync,
            node,
            backing_id,
            store,
        });
        abi::OpenOut {
            fh,
            open_flags,
            backing_id: backing_id.unwrap_or(0),
        }
    }

    /// The passthrough id every open file of `node` shares, registered with
    /// the kernel on its first open (`fd`, this open's file, when the node
    /// cannot be opened read-write: a read-only file).
    fn backing_of(&self, node: u64, fd: &OwnedFd, chan: &OwnedFd) -> Sys<i32> {
        let mut b = self.backings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((id, opens)) = b.get_mut(&node) {
            *opens += 1;
            return Ok(*id);
        }
        // Read-write, so a later open that writes finds it usable.
        let rw = self
            .nodes
            .fd(node)
            .and_then(|n| sys::reopen(n.as_fd(), libc::O_RDWR));
        let backing = rw.as_ref().map_or(fd.as_raw_fd(), |f| f.as_raw_fd());
        let id = sys::backing_open(chan.as_fd(), backing)?;
        b.insert(node, (id, 1));
        Ok(id)
    }

    /// RELEASE: close the file (and its node's passthrough id with its last
    /// open file).
    pub(super) fn release(&self, fh: u64, chan: &OwnedFd) {
        if let Some(f) = self.files.remove(fh) {
            self.nodes.count_open(f.node, -1);
            if f.backing_id.is_some() {
                let mut b = self.backings.lock().unwrap_or_else(|e| e.into_inner());
                let last = b.get_mut(&f.node).map(|(id, opens)| {
                    *opens -= 1;
                    (*opens == 0).then_some(*id)
                });
                if let Some(Some(id)) = last {
                    b.remove(&f.node);
                    let _ = sys::backing_close(chan.as_fd(), id);
                }
            }
        }
    }

    /// When to reply to `op` that arrived at `arrival_ns`: when the medium
    /// completes it, less the server's own round trip (see `calibrate`).
    fn due(&self, kind: OpKind, offset: u64, len: u32, sync: bool, arrival_ns: u64) -> u64 {
        let op = MediaOp {
            kind,
            offset,
            len,
            sync,
        };
        let done = self.medium.schedule(&op, arrival_ns).max(arrival_ns);
        calibrate::charge(done, arrival_ns, self.overhead_ns.load(Ordering::Relaxed))
    }

    /// READ: the medium's time (a `probe` read's is a fixed hold, see
    /// `calibrate`), then pread into the reply.
    pub(super) fn read(&self, r: &abi::ReadIn, arrival_ns: u64, probe: bool) -> Answer {
        let f = match self.files.get(r.fh) {
            Ok(f) => f,
            Err(e) => return Answer::Now(Reply::err(e)),
        };
        let due = if probe {
            arrival_ns + calibrate::PROBE_HOLD_NS
        } else {
            self.due(OpKind::Read, r.offset, r.size, false, arrival_ns)
        };
        let mut reply = Reply::with_capacity(r.size as usize);
        match sys::pread_append(f.fd.as_fd(), reply.payload(), r.size as usize, r.offset) {
            Ok(_) => Answer::At(due, reply),
            Err(e) => Answer::At(due, Reply::err(e)),
        }
    }

    /// WRITE: the medium's time (synchronous if the file was opened
    /// O_SYNC/O_DSYNC), then pwrite from the request.
    pub(super) fn write(&self, w: &abi::WriteIn, data: &[u8], arrival_ns: u64) -> Answer {
        let f = match self.files.get(w.fh) {
            Ok(f) => f,
            Err(e) => return Answer::Now(Reply::err(e)),
        };
        let Some(data) = data.get(..w.size as usize) else {
            return Answer::Now(Reply::err(Errno(libc::EINVAL)));
        };
        let sync = f.sync || w.flags as i32 & libc::O_DSYNC != 0;
        let due = self.due(OpKind::Write, w.offset, w.size, sync, arrival_ns);
        let written = sys::pwrite_full(f.fd.as_fd(), data, w.offset);
        // After the data changed (a failed write may have done part).
        if self.counts(&f) {
            self.dirty.mark(w.offset, data.len() as u64);
        }
        let reply = match written {
            Ok(n) => Reply::of(&abi::WriteOut {
                size: n as u32,
                padding: 0,
            }),
            Err(e) => Reply::err(e),
        };
        Answer::At(due, reply)
    }

    /// FSYNC: a flush of the medium, and fsync/fdatasync of the backing file.
    pub(super) fn fsync(&self, f: &abi::FsyncIn, arrival_ns: u64) -> Answer {
        let file = match self.files.get(f.fh) {
            Ok(file) => file,
            Err(e) => return Answer::Now(Reply::err(e)),
        };
        let due = self.due(OpKind::Flush, 0, 0, false, arrival_ns);
        let data_only = f.fsync_flags & abi::FSYNC_FDATASYNC != 0;
        let reply = match sys::fsync(file.fd.as_fd(), data_only) {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::err(e),
        };
        Answer::At(due, reply)
    }
}
