//! The passthrough file system: each request on a node becomes the same call
//! on its backing file, and the backing file system's error (ENOSPC, EIO,
//! ENOENT, ESTALE...) is the reply, unchanged. Names and attributes here; data
//! in `data.rs`, directories in `dir.rs`.

use super::abi::{self, Args, InHeader, op};
use super::nodes::{Handles, Nodes};
use super::reply::Reply;
use super::sys::{self, Errno, Sys};
use crate::media::Medium;
use crate::media::dirty::{self, DirtyMap, Scope};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How file data reaches the kernel's clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// Every read and write comes to this server (`FOPEN_DIRECT_IO`) and is
    /// answered at the medium's time: the mode of every emulated device.
    Direct,
    /// Reads are served from the kernel's page cache of the FUSE file
    /// (`FOPEN_KEEP_CACHE`); writes go through to the server at once (no
    /// writeback cache, so ENOSPC and EIO reach the writer's write call).
    PageCache,
    /// The kernel does the reads and writes on the backing file itself
    /// (`FOPEN_PASSTHROUGH`, Linux 6.9+): the layer costs nothing on the data
    /// path. For media that add nothing ([`Medium::page_cache`]).
    Passthrough,
}

impl CacheMode {
    /// Names as the command line takes them.
    pub const ALLOWED: &'static str = "direct, page-cache, passthrough";

    /// Parse a name.
    pub fn parse(s: &str) -> Result<CacheMode, String> {
        match s {
            "direct" => Ok(CacheMode::Direct),
            "page-cache" => Ok(CacheMode::PageCache),
            "passthrough" => Ok(CacheMode::Passthrough),
            _ => Err(format!(
                "cache mode {s:?}: unknown (allowed: {})",
                CacheMode::ALLOWED
            )),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Direct => "direct",
            CacheMode::PageCache => "page-cache",
            CacheMode::Passthrough => "passthrough",
        }
    }
}

/// What the dispatcher tells the reader thread to do with a request.
#[derive(Debug)]
pub enum Answer {
    /// Send this reply now.
    Now(Reply),
    /// Send this reply no earlier than this time (ns, CLOCK_MONOTONIC).
    At(u64, Reply),
    /// Send nothing (FORGET, INTERRUPT).
    Nothing,
}

impl From<Sys<Reply>> for Answer {
    fn from(r: Sys<Reply>) -> Answer {
        Answer::Now(r.unwrap_or_else(Reply::err))
    }
}

/// An open file.
pub struct OpenFile {
    /// The backing file, opened with the client's flags (less O_APPEND and
    /// O_DIRECT: the kernel gives every offset, and the backing store may be
    /// tmpfs).
    pub fd: OwnedFd,
    /// Opened O_SYNC or O_DSYNC: its writes are synchronous.
    pub sync: bool,
    /// Its node.
    pub node: u64,
    /// Its passthrough id with the kernel, closed at RELEASE.
    pub backing_id: Option<i32>,
    /// It is the store's (see [`Fs::counts`]).
    pub store: bool,
}

/// The file system's state, shared by every reader thread.
pub struct Fs {
    /// Node ids and their backing files.
    pub nodes: Nodes,
    /// Open files.
    pub files: Handles<OpenFile>,
    /// Open directories.
    pub dirs: super::dir::Dirs,
    /// The emulated device.
    pub medium: Arc<dyn Medium>,
    /// How data reaches clients (may drop from passthrough to page cache
    /// when the kernel refuses it at INIT).
    pub mode: Mutex<CacheMode>,
    /// How long the kernel may keep names and attributes.
    pub timeout: Duration,
    /// Passthrough: each node's one backing id with the kernel and how many
    /// open files share it (the kernel refuses a second, different backing
    /// file on an inode that has one open: the second open would fail EIO).
    pub backings: Mutex<std::collections::HashMap<u64, (i32, u32)>>,
    /// The server's own round trip, charged against every data reply's due
    /// time (see `calibrate`), ns.
    pub overhead_ns: AtomicU64,
    /// While the server measures that round trip: the thread whose reads are
    /// probes (held for a fixed time, the medium not asked); 0 otherwise.
    pub probe_tid: AtomicU32,
    /// The chunks of the store written since the lab last took them (every
    /// operation that can change its data marks it, after the change).
    pub dirty: DirtyMap,
    /// Which file is the store, whose changes `dirty` records.
    pub scope: Scope,
}

/// The device and inode of the regular file `name` in the directory `dir`.
fn store_id(dir: &OwnedFd, name: &[u8]) -> Option<(u64, u64)> {
    let f = sys::openat(dir.as_fd(), name, libc::O_PATH | libc::O_NOFOLLOW, 0).ok()?;
    let st = sys::fstat(f.as_fd()).ok()?;
    (st.st_mode & libc::S_IFMT == libc::S_IFREG).then_some((st.st_dev, st.st_ino))
}

/// Attributes as FUSE carries them.
pub fn attr(st: &libc::stat) -> abi::Attr {
    abi::Attr {
        ino: st.st_ino,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: st.st_atime as u64,
        mtime: st.st_mtime as u64,
        ctime: st.st_ctime as u64,
        atimensec: st.st_atime_nsec as u32,
        mtimensec: st.st_mtime_nsec as u32,
        ctimensec: st.st_ctime_nsec as u32,
        mode: st.st_mode,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

/// Parse the request's arguments or answer EINVAL (a request shorter than
/// its opcode's struct: never from a correct kernel).
macro_rules! arg {
    ($args:expr, name) => {
        match $args.name() {
            Some(v) => v,
            None => return Answer::Now(Reply::err(Errno(libc::EINVAL))),
        }
    };
    ($args:expr, $t:ty) => {
        match $args.take::<$t>() {
            Some(v) => v,
            None => return Answer::Now(Reply::err(Errno(libc::EINVAL))),
        }
    };
}

impl Fs {
    /// The file system over the backing directory `root` (O_PATH), whose
    /// file `store` (when given and there) alone is recorded in the
    /// written-chunk map (see [`crate::media::dirty`]).
    pub fn new(
        root: OwnedFd,
        medium: Arc<dyn Medium>,
        mode: CacheMode,
        store: Option<&[u8]>,
    ) -> Sys<Fs> {
        let id = store.and_then(|name| store_id(&root, name));
        Ok(Fs {
            scope: Scope::new(store.map(<[u8]>::to_vec), id),
            nodes: Nodes::new(root)?,
            files: Handles::default(),
            dirs: super::dir::Dirs::default(),
            medium,
            mode: Mutex::new(mode),
            timeout: Duration::from_secs(1),
            backings: Mutex::default(),
            overhead_ns: AtomicU64::new(0),
            probe_tid: AtomicU32::new(0),
            dirty: DirtyMap::new(dirty::COVERS),
        })
    }

    /// Changes through this open file count in the written-chunk map: it is
    /// the store's, or every file counts.
    pub fn counts(&self, f: &OpenFile) -> bool {
        f.store || self.scope.every_file()
    }

    /// Before a take: when the store's name no longer holds the file found
    /// at start (replaced in the backing directory itself, where the server
    /// does not see it), mark everything and let every file count from now on.
    pub fn recheck_store(&self) {
        if self.scope.every_file() {
            return;
        }
        if !self
            .scope
            .still_holds(|name| store_id(self.nodes.root(), name))
        {
            self.store_lost("the store replaced or removed in the backing directory");
        }
    }

    /// `why` may have replaced the store or moved it away: mark everything,
    /// and let every file count from now on.
    fn store_lost(&self, why: &'static str) {
        self.dirty.mark_all(why);
        self.scope.lose_track();
    }

    /// The current cache mode.
    pub fn mode(&self) -> CacheMode {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answer one request that arrived at `arrival_ns` on `chan` (after INIT).
    pub fn dispatch(&self, h: &InHeader, mut a: Args, arrival_ns: u64, chan: &OwnedFd) -> Answer {
        let n = h.nodeid;
        match h.opcode {
            op::LOOKUP => {
                let name = arg!(a, name);
                self.lookup(n, name).map(|e| Reply::of(&e)).into()
            }
            op::FORGET => {
                self.nodes.forget(n, arg!(a, abi::ForgetIn).nlookup);
                Answer::Nothing
            }
            op::BATCH_FORGET => {
                let count = arg!(a, abi::BatchForgetIn).count;
                for _ in 0..count {
                    let one = arg!(a, abi::ForgetOne);
                    self.nodes.forget(one.nodeid, one.nlookup);
                }
                Answer::Nothing
            }
            op::GETATTR => {
                let g = arg!(a, abi::GetattrIn);
                self.getattr(n, g).into()
            }
            op::SETATTR => {
                let s = arg!(a, abi::SetattrIn);
                self.setattr(n, &s).into()
            }
            op::MKDIR => {
                let m = arg!(a, abi::MkdirIn);
                let name = arg!(a, name);
                self.mkdir(h, name, m.mode).into()
            }
            op::UNLINK | op::RMDIR => {
                let name = arg!(a, name);
                let flags = if h.opcode == op::RMDIR {
                    libc::AT_REMOVEDIR
                } else {
                    0
                };
                self.nodes
                    .fd(n)
                    .and_then(|d| sys::unlinkat(d.as_fd(), name, flags))
                    .map(|()| {
                        if flags == 0 && self.scope.touches(n == abi::ROOT_ID, name) {
                            // The store may be gone, or come back as another file.
                            self.store_lost("an unlink");
                        }
                        Reply::ok()
                    })
                    .into()
            }
            op::RENAME | op::RENAME2 => {
                let (newdir, flags) = if h.opcode == op::RENAME {
                    (arg!(a, abi::RenameIn).newdir, 0)
                } else {
                    let r = arg!(a, abi::Rename2In);
                    (r.newdir, r.flags)
                };
                let old = arg!(a, name);
                let new = arg!(a, name);
                self.rename(n, old, newdir, new, flags).into()
            }
            op::STATFS => self.statfs().into(),
            op::ACCESS => {
                let mask = arg!(a, abi::AccessIn).mask;
                self.nodes
                    .fd(n)
                    .and_then(|fd| sys::access(&sys::proc_path(fd.as_fd()), mask as i32))
                    .map(|()| Reply::ok())
                    .into()
            }
            op::OPEN => {
                let o = arg!(a, abi::OpenIn);
                self.open(n, o.flags as i32, chan).into()
            }
            op::CREATE => {
                let c = arg!(a, abi::CreateIn);
                let name = arg!(a, name);
                self.create(h, name, &c, chan).into()
            }
            op::READ => {
                let r = arg!(a, abi::ReadIn);
                let probe = h.pid != 0 && h.pid == self.probe_tid.load(Ordering::Relaxed);
                self.read(&r, arrival_ns, probe)
            }
            op::WRITE => {
                let w = arg!(a, abi::WriteIn);
                self.write(&w, a.rest(), arrival_ns)
            }
            op::FSYNC => {
                let f = arg!(a, abi::FsyncIn);
                self.fsync(&f, arrival_ns)
            }
            // close(2) on a descriptor: no durability is asked (that is
            // FSYNC), so the medium is not involved.
            op::FLUSH => Answer::Now(Reply::ok()),
            op::RELEASE => {
                let r = arg!(a, abi::ReleaseIn);
                self.release(r.fh, chan);
                Answer::Now(Reply::ok())
            }
            op::FALLOCATE => {
                let f = arg!(a, abi::FallocateIn);
                let open = self.files.get(f.fh);
                let r = open
                    .as_ref()
                    .map_err(|e| *e)
                    .and_then(|o| sys::fallocate(o.fd.as_fd(), f.mode as i32, f.offset, f.length));
                // Marked even when it failed: it may have done part.
                if open.is_ok_and(|o| !self.counts(&o)) {
                    // Another file than the store.
                } else if f.mode as i32
                    & (libc::FALLOC_FL_COLLAPSE_RANGE | libc::FALLOC_FL_INSERT_RANGE)
                    != 0
                {
                    self.dirty
                        .mark_all("a fallocate that moves data (collapse or insert range)");
                } else {
                    self.dirty.mark(f.offset, f.length);
                }
                r.map(|()| Reply::ok()).into()
            }
            op::LSEEK => {
                let l = arg!(a, abi::LseekIn);
                self.files
                    .get(l.fh)
                    .and_then(|o| sys::lseek(o.fd.as_fd(), l.offset, l.whence as i32))
                    .map(|offset| Reply::of(&abi::LseekOut { offset }))
                    .into()
            }
            op::OPENDIR => self.dirs.opendir(&self.nodes, n).into(),
            op::READDIR => {
                let r = arg!(a, abi::ReadIn);
                self.dirs.readdir(&r).into()
            }
            op::RELEASEDIR => {
                self.dirs.release(arg!(a, abi::ReleaseIn).fh);
                Answer::Now(Reply::ok())
            }
            op::FSYNCDIR => {
                let f = arg!(a, abi::FsyncIn);
                self.dirs.fsyncdir(&f).into()
            }
            // Every operation completes at its medium's time, which is
            // bounded: the kernel may wait for it (the protocol lets a file
            // system ignore INTERRUPT).
            op::INTERRUPT => Answer::Nothing,
            op::DESTROY => Answer::Now(Reply::ok()),
            _ => Answer::Now(Reply::err(Errno(libc::ENOSYS))),
        }
    }

    /// The entry reply for node `id` with attributes `st`.
    pub(super) fn entry(&self, id: u64, st: &libc::stat) -> abi::EntryOut {
        let (s, ns) = (self.timeout.as_secs(), self.timeout.subsec_nanos());
        abi::EntryOut {
            nodeid: id,
            // Node ids are never reused, so generation 0 keeps nodeid:generation unique.
            generation: 0,
            entry_valid: s,
            attr_valid: s,
            entry_valid_nsec: ns,
            attr_valid_nsec: ns,
            attr: attr(st),
        }
    }

    /// The attribute reply for `st`.
    fn attr_out(&self, st: &libc::stat) -> Reply {
        Reply::of(&abi::AttrOut {
            attr_valid: self.timeout.as_secs(),
            attr_valid_nsec: self.timeout.subsec_nanos(),
            dummy: 0,
            attr: attr(st),
        })
    }

    /// LOOKUP, including "." (a node by id alone: NFS file handles) and ".."
    /// (a directory's parent; the backing directory is its own parent, so
    /// nothing outside it is reachable).
    fn lookup(&self, parent: u64, name: &[u8]) -> Sys<abi::EntryOut> {
        let dir = self.nodes.fd(parent)?;
        let fd = match name {
            b"." => self.nodes.live_fd(parent)?,
            b".." if parent == abi::ROOT_ID => dir,
            b".." => Arc::new(sys::openat(
                dir.as_fd(),
                b"..",
                libc::O_PATH | libc::O_DIRECTORY,
                0,
            )?),
            _ => Arc::new(sys::openat(
                dir.as_fd(),
                name,
                libc::O_PATH | libc::O_NOFOLLOW,
                0,
            )?),
        };
        let (id, st) = self.nodes.remember(fd)?;
        Ok(self.entry(id, &st))
    }

    /// Look up `name` in `dir` after making it; chown it to the caller.
    fn made(&self, h: &InHeader, dir: &OwnedFd, name: &[u8]) -> Sys<abi::EntryOut> {
        let fd = sys::openat(dir.as_fd(), name, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
        self.own(h, &fd)?;
        let (id, st) = self.nodes.remember(Arc::new(fd))?;
        Ok(self.entry(id, &st))
    }

    /// Give a file this server made to the user who asked for it.
    pub(super) fn own(&self, h: &InHeader, fd: &OwnedFd) -> Sys<()> {
        // SAFETY: geteuid has no preconditions.
        if (h.uid, h.gid) != (unsafe { libc::geteuid() }, unsafe { libc::getegid() }) {
            sys::fchown(fd.as_fd(), h.uid, h.gid)?;
        }
        Ok(())
    }

    fn getattr(&self, n: u64, g: abi::GetattrIn) -> Sys<Reply> {
        const GETATTR_FH: u32 = 1;
        let st = if g.getattr_flags & GETATTR_FH != 0
            && let Ok(f) = self.files.get(g.fh)
        {
            sys::fstat(f.fd.as_fd())?
        } else {
            sys::fstat(self.nodes.fd(n)?.as_fd())?
        };
        Ok(self.attr_out(&st))
    }

    fn setattr(&self, n: u64, s: &abi::SetattrIn) -> Sys<Reply> {
        use abi::fattr;
        let fd = self.nodes.fd(n)?;
        let path = sys::proc_path(fd.as_fd());
        let file = if s.valid & fattr::FH != 0 {
            self.files.get(s.fh).ok()
        } else {
            None
        };
        if s.valid & fattr::MODE != 0 {
            sys::chmod(&path, s.mode & 0o7777)?;
        }
        if s.valid & (fattr::UID | fattr::GID) != 0 {
            let uid = if s.valid & fattr::UID != 0 {
                s.uid
            } else {
                u32::MAX
            };
            let gid = if s.valid & fattr::GID != 0 {
                s.gid
            } else {
                u32::MAX
            };
            sys::fchown(fd.as_fd(), uid, gid)?;
        }
        if s.valid & fattr::SIZE != 0 {
            // What the truncate changes: from the shorter size to the longer.
            let old = sys::fstat(fd.as_fd());
            let r = match &file {
                Some(f) => sys::ftruncate(f.fd.as_fd(), s.size),
                None => sys::truncate(&path, s.size),
            };
            match old {
                Ok(st) if !self.scope.counts(st.st_dev, st.st_ino) => {}
                Ok(st) => {
                    let old = st.st_size as u64;
                    self.dirty
                        .mark(old.min(s.size), old.max(s.size) - old.min(s.size))
                }
                Err(_) => self.dirty.mark_all("a truncate of a file of unknown size"),
            }
            r?;
        }
        if s.valid & (fattr::ATIME | fattr::MTIME | fattr::ATIME_NOW | fattr::MTIME_NOW) != 0 {
            let time = |set: u32, now: u32, sec: u64, nsec: u32| libc::timespec {
                tv_sec: sec as libc::time_t,
                tv_nsec: if s.valid & now != 0 {
                    libc::UTIME_NOW
                } else if s.valid & set != 0 {
                    nsec as libc::c_long
                } else {
                    libc::UTIME_OMIT
                },
            };
            sys::utimens(
                &path,
                [
                    time(fattr::ATIME, fattr::ATIME_NOW, s.atime, s.atimensec),
                    time(fattr::MTIME, fattr::MTIME_NOW, s.mtime, s.mtimensec),
                ],
            )?;
        }
        Ok(self.attr_out(&sys::fstat(fd.as_fd())?))
    }

    fn mkdir(&self, h: &InHeader, name: &[u8], mode: u32) -> Sys<Reply> {
        let dir = self.nodes.fd(h.nodeid)?;
        sys::mkdirat(dir.as_fd(), name, mode)?;
        self.made(h, &dir, name).map(|e| Reply::of(&e))
    }

    fn rename(&self, olddir: u64, old: &[u8], newdir: u64, new: &[u8], flags: u32) -> Sys<Reply> {
        let (o, n) = (self.nodes.fd(olddir)?, self.nodes.fd(newdir)?);
        sys::renameat2(o.as_fd(), old, n.as_fd(), new, flags)?;
        // It may have replaced the store, or moved it away.
        if self.scope.touches(olddir == abi::ROOT_ID, old)
            || self.scope.touches(newdir == abi::ROOT_ID, new)
        {
            self.store_lost("a rename");
        }
        Ok(Reply::ok())
    }

    fn statfs(&self) -> Sys<Reply> {
        let s = sys::fstatvfs(self.nodes.root().as_fd())?;
        Ok(Reply::of(&abi::StatfsOut {
            blocks: s.f_blocks,
            bfree: s.f_bfree,
            bavail: s.f_bavail,
            files: s.f_files,
            ffree: s.f_ffree,
            bsize: s.f_bsize as u32,
            namelen: s.f_namemax as u32,
            frsize: s.f_frsize as u32,
            ..Default::default()
        }))
    }
}
