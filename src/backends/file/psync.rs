//! fio's psync over local files and block devices: each request is one
//! pread or pwrite on the engine thread, made at `commit`, and its completion
//! is handed back by the next `reap`.
//!
//! Nothing is in flight outside a call, so `reap` never waits and drop has
//! nothing to cancel. Where io_uring must punt a page-cache read it cannot do
//! without blocking to a worker thread (tmpfs), the call does it at once.

use super::{check_files, file_identity, open_all};
use crate::io::{Backend, BackendError, Completion, IoBuf, OpenOptions, QueueError, Request, Wait};
use crate::workload::Dir;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

/// pread/pwrite over local files and block devices, one request at a time.
pub struct PsyncBackend {
    files: Vec<File>,
    /// Each disk's path, for [`Backend::check`].
    paths: Vec<PathBuf>,
    depth: usize,
    /// Accepted and not yet done: they run at the next `commit` or `reap`.
    queued: Vec<Request>,
    /// Done and not yet reaped.
    done: Vec<Completion>,
}

impl PsyncBackend {
    /// Open every disk as the io_uring backend does (direct, sync, write).
    pub fn open(disks: &[PathBuf], opts: &OpenOptions) -> Result<PsyncBackend, BackendError> {
        let files = open_all(disks, opts)?;
        let depth = opts.depth.max(1) as usize;
        Ok(PsyncBackend {
            files,
            paths: disks.to_vec(),
            depth,
            queued: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
        })
    }

    /// Make every queued request, in the order queued.
    fn run_queued(&mut self) {
        for req in self.queued.drain(..) {
            let fd = self.files[req.disk as usize].as_raw_fd();
            // SAFETY: `req` holds its lease until its completion is pushed
            // below, after the call returned (the trait's contract).
            let result = unsafe { transfer(fd, req.dir, &req.buf, req.offset) };
            self.done.push(Completion {
                slot: req.slot,
                result,
            });
        }
    }
}

/// One pread (a read lands in `buf`) or pwrite (of `buf`) at `offset` of
/// `fd`: the bytes moved (short at the end of a file), or the errno. A call
/// an interrupting signal cut short is made again.
///
/// # Safety
/// `buf` must be a lease its caller holds for the whole call: no one else
/// reads or writes its bytes meanwhile.
unsafe fn transfer(fd: RawFd, dir: Dir, buf: &IoBuf, offset: u64) -> Result<u32, i32> {
    let offset = libc::off_t::try_from(offset).map_err(|_| libc::EINVAL)?;
    let len = buf.len() as usize;
    loop {
        let n = match dir {
            // SAFETY: the lease names `len` writable bytes no one else
            // touches during the call (the caller's promise).
            Dir::Read => unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), len, offset) },
            // SAFETY: as above, read by the kernel only.
            Dir::Write => unsafe { libc::pwrite(fd, buf.as_ptr().cast(), len, offset) },
        };
        match u32::try_from(n) {
            Ok(n) => return Ok(n),
            Err(_) => match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                errno => return Err(errno.unwrap_or(libc::EIO)),
            },
        }
    }
}

// SAFETY: a request's buffer is touched only inside `transfer`, called from
// `commit` or `reap` on a request `queue` accepted, before its completion is
// recorded; once a call returns the kernel holds no buffer, so nothing is
// touched after a completion is reaped or the backend dropped.
unsafe impl Backend for PsyncBackend {
    fn name(&self) -> &'static str {
        "file"
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn features(&self) -> String {
        "psync (pread/pwrite on the engine thread)".to_string()
    }

    fn identity(&self, disk: usize) -> Option<String> {
        file_identity(self.files.get(disk)?)
    }

    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if self.queued.len() + self.done.len() >= self.depth {
            return Err(QueueError::Busy);
        }
        if req.disk as usize >= self.files.len() {
            return Err(QueueError::Fatal(BackendError::new(
                "file",
                format!("request for disk {} of {}", req.disk, self.files.len()),
            )));
        }
        self.queued.push(req);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        self.run_queued();
        Ok(())
    }

    /// Each request is made at its commit, stamped just before (fio's psync).
    fn commit_each(&self) -> bool {
        true
    }

    /// What is queued is made first; then every request is done, so this
    /// never waits, whatever `wait` says.
    fn reap(&mut self, _wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        self.run_queued();
        let n = self.done.len();
        out.append(&mut self.done);
        Ok(n)
    }

    fn check(&mut self) -> Result<(), BackendError> {
        check_files(&self.files, &self.paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferPool, Lane};

    fn lane(path: &std::path::Path, write: bool, depth: u32) -> Lane<PsyncBackend> {
        let opts = OpenOptions {
            write,
            depth,
            ..OpenOptions::default()
        };
        let b = PsyncBackend::open(&[path.to_path_buf()], &opts).unwrap();
        Lane::new(Box::new(b), BufferPool::new(depth as usize + 1, 4096)).unwrap()
    }

    fn reap(l: &mut Lane<PsyncBackend>) -> Vec<Completion> {
        let mut out = Vec::new();
        l.reap(Wait::POLL, &mut out).unwrap();
        out
    }

    /// Requests are made at commit, in order; a write on a read-only file
    /// fails alone with EBADF, a read at the end is short, and the backend
    /// goes on.
    #[test]
    fn made_at_commit_errors_are_completions() {
        let path = std::env::temp_dir().join(format!("storlab-psync-{}.tst", std::process::id()));
        std::fs::write(&path, [7u8; 6144]).unwrap();
        let mut l = lane(&path, false, 3);
        l.queue(0, 0, Dir::Read, 0, 4096).unwrap();
        assert!(reap(&mut l).len() == 1, "reap makes what is queued");
        l.queue(0, 0, Dir::Write, 0, 4096).unwrap();
        l.queue(1, 0, Dir::Read, 4096, 4096).unwrap();
        l.queue(2, 0, Dir::Read, 0, 4096).unwrap();
        assert!(matches!(
            l.queue(3, 0, Dir::Read, 0, 1),
            Err(QueueError::Busy)
        ));
        l.commit().unwrap();
        let results: Vec<_> = reap(&mut l).iter().map(|c| (c.slot, c.result)).collect();
        assert_eq!(
            results,
            [(0, Err(libc::EBADF)), (1, Ok(2048)), (2, Ok(4096))]
        );
        assert!(l.buf(2).iter().all(|&b| b == 7));
        assert!(reap(&mut l).is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
