//! The local file backends: regular files and block devices over io_uring
//! (here), or fio's psync (`psync.rs`: pread/pwrite on the engine thread).
//!
//! One ring per backend, registered files, and registered (fixed) buffers when
//! the kernel and RLIMIT_MEMLOCK allow. Submission is deferred to `reap`, which
//! submits and waits in one `io_uring_enter`; the hot path allocates nothing and
//! makes no other system call.

mod psync;
mod uring;

pub use psync::PsyncBackend;
use uring::Polling;
pub(crate) use uring::block_device_size;

use crate::io::{
    Backend, BackendError, BufferPool, Completion, OpenOptions, QueueError, Request, Wait,
};
use crate::workload::{Dir, SyncMode};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use uring::{Ring, Target};

/// How long drop waits for requests the kernel still owns.
const DROP_WAIT: Duration = Duration::from_secs(10);

/// How long the SQPOLL kernel thread spins without submissions before it
/// sleeps (fio leaves sq_thread_idle at 0, which the kernel takes as 1 s).
const SQPOLL_IDLE_MS: u32 = 1000;

/// Bytes the IOPOLL probe reads: a multiple of every logical block size.
const PROBE_LEN: usize = 4096;

/// The text of an OS error without Rust's " (os error N)" suffix.
pub(crate) fn errno_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// io_uring over local files and block devices.
pub struct FileBackend {
    ring: Ring,
    /// Per disk: registered index or plain fd.
    targets: Vec<Target>,
    /// Keeps the descriptors open for the ring's life.
    files: Vec<File>,
    /// Each disk's path, for [`Backend::check`].
    paths: Vec<PathBuf>,
    /// Registered buffers (slot count), 0 when plain buffers are used.
    reg_bufs: u32,
    depth: usize,
    inflight: usize,
    /// `quiesce` waited [`DROP_WAIT`] and the kernel still owned requests.
    gave_up: bool,
    fixed_files: bool,
    /// Whether `commit` enters the kernel at once ([`Backend::commit_each`]).
    commit_each: bool,
    /// `--hipri`: a completion failed with EOPNOTSUPP on the IOPOLL ring.
    poll_refused: bool,
    buffers_note: String,
    files_note: String,
    name: String,
}

fn open_one(path: &Path, opts: &OpenOptions) -> Result<File, BackendError> {
    let mut flags = 0;
    if opts.direct {
        flags |= libc::O_DIRECT;
    }
    match opts.sync {
        Some(SyncMode::Dsync) => flags |= libc::O_DSYNC,
        Some(SyncMode::Sync) => flags |= libc::O_SYNC,
        Some(SyncMode::None) | None => {}
    }
    let mut oo = std::fs::OpenOptions::new();
    oo.read(true).write(opts.write).custom_flags(flags);
    let target = path.display().to_string();
    let file = match oo.open(path) {
        Ok(f) => f,
        Err(e) => {
            let mode = if opts.write {
                "reading and writing"
            } else {
                "reading"
            };
            let text = errno_text(&e);
            let msg = match e.raw_os_error() {
                Some(libc::EINVAL) if opts.direct => format!(
                    "cannot open for O_DIRECT: {text} (the file system does not support direct I/O; turn direct off: --direct 0)"
                ),
                Some(libc::ENOENT) => format!("cannot open for {mode}: {text}"),
                Some(libc::EROFS) => {
                    format!("cannot open for {mode}: {text} (the workload writes)")
                }
                _ => format!("cannot open for {mode}: {text}"),
            };
            return Err(BackendError::new(target, msg));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| BackendError::new(&target, format!("cannot stat: {}", errno_text(&e))))?;
    let ft = meta.file_type();
    if !(ft.is_file() || ft.is_block_device()) {
        return Err(BackendError::new(
            target,
            "not a regular file or block device",
        ));
    }
    Ok(file)
}

/// Every disk, opened as `opts` says (both engines' files).
fn open_all(disks: &[PathBuf], opts: &OpenOptions) -> Result<Vec<File>, BackendError> {
    if disks.is_empty() {
        return Err(BackendError::new("file", "no disks to open"));
    }
    disks.iter().map(|p| open_one(p, opts)).collect()
}

/// A local file's identity ([`Backend::identity`]): a block device by its
/// device number, a file by the device it lives on and its inode, so two
/// paths to one file (a hard link, a bind mount, the FC role's block path)
/// name one store.
pub(crate) fn file_identity(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    if m.file_type().is_block_device() {
        let r = m.rdev();
        Some(format!(
            "block device {}:{}",
            libc::major(r),
            libc::minor(r)
        ))
    } else {
        let d = m.dev();
        Some(format!(
            "file device {}:{} inode {}",
            libc::major(d),
            libc::minor(d),
            m.ino()
        ))
    }
}

/// A disk whose file was unlinked (no name left: `st_nlink` 0) fails the
/// run: its I/O would still succeed, on data that vanishes at close.
fn check_files(files: &[File], paths: &[PathBuf]) -> Result<(), BackendError> {
    use std::os::unix::fs::MetadataExt;
    for (f, p) in files.iter().zip(paths) {
        if matches!(f.metadata(), Ok(m) if m.nlink() == 0) {
            return Err(BackendError::new(
                format!("file:{}", p.display()),
                "was deleted during the run (its I/O went on to a file with no name, \
                 whose data is gone when storlab closes it); the run is stopped",
            ));
        }
    }
    Ok(())
}

/// `--hipri`: one polled read of `file` (`path`), so that a device or file
/// system that cannot poll fails the open with one line, not the first I/O.
fn probe_poll(file: &File, path: &Path) -> Result<(), BackendError> {
    let fd = file.as_raw_fd();
    match uring::probe_iopoll(fd, PROBE_LEN) {
        Ok(_) => Ok(()),
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) => {
                    let queue = device_queue(file)
                        .filter(|q| {
                            std::fs::read_to_string(format!("{q}/io_poll"))
                                .is_ok_and(|v| v.trim() == "0")
                        })
                        .map(|q| format!(" ({q}/io_poll is 0: no poll queues)"))
                        .unwrap_or_default();
                    format!(
                        "its device or file system cannot poll for completions{queue}; \
                         turn hipri off (--hipri 0), or use a device with poll queues \
                         (NVMe with nvme.poll_queues > 0)"
                    )
                }
                _ => format!("{}; turn hipri off (--hipri 0)", errno_text(&e)),
            };
            Err(BackendError::new(
                path.display().to_string(),
                format!("hipri (IORING_SETUP_IOPOLL) refused: {why}"),
            ))
        }
    }
}

/// Whether `file` is, or sits on, a block device that queues requests to
/// hardware: not a loop device (whose driver passes each request to a worker
/// thread), not a file system without a device (tmpfs, FUSE, NFS).
fn on_a_device_queue(file: &File) -> bool {
    device_queue(file).is_some_and(|q| !Path::new(&q).with_file_name("loop").exists())
}

/// The sysfs queue directory of the block device holding `file` (the device
/// itself or the one under its file system), when it can be found.
fn device_queue(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // A partition's queue is its whole disk's.
    let disk = [sys.as_path(), sys.parent()?]
        .into_iter()
        .find(|d| d.join("queue/io_poll").exists())?;
    Some(format!(
        "/sys/block/{}/queue",
        disk.file_name()?.to_string_lossy()
    ))
}

impl FileBackend {
    /// Open every disk and build the ring. The ring is bound to the thread that
    /// first queues a request (io_uring's single issuer), so create it anywhere
    /// but drive it from one engine thread.
    pub fn open(disks: &[PathBuf], opts: &OpenOptions) -> Result<FileBackend, BackendError> {
        let name = match disks {
            [one] => one.display().to_string(),
            _ => format!("{} disks", disks.len()),
        };
        let files = open_all(disks, opts)?;
        if opts.hipri && !opts.direct {
            return Err(BackendError::new(
                &name,
                "hipri: polled completions (IORING_SETUP_IOPOLL) need O_DIRECT; \
                 set --direct 1 or turn hipri off (--hipri 0)",
            ));
        }
        if opts.hipri {
            for (f, p) in files.iter().zip(disks) {
                probe_poll(f, p)?;
            }
        }
        let depth = opts.depth.max(1) as usize;
        let sq = (depth as u32).next_power_of_two().min(1 << 15);
        let cq = sq.saturating_mul(2);
        let poll = Polling {
            sqpoll_idle_ms: opts.sqpoll.then_some(SQPOLL_IDLE_MS),
            sqpoll_cpu: opts.sqpoll_cpu,
            iopoll: opts.hipri,
        };
        let ring = Ring::new(sq, cq, poll).map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::ENOSYS) => " (this kernel has no io_uring)",
                Some(libc::EPERM) if opts.sqpoll => {
                    " (sqpoll: this kernel lets only privileged users (CAP_SYS_NICE) start \
                     the polling thread; turn sqpoll off (--sqpoll 0) or run as root)"
                }
                Some(libc::EPERM) => " (io_uring is disabled: see sysctl kernel.io_uring_disabled)",
                Some(libc::ENOMEM) => " (raise RLIMIT_MEMLOCK or lower the queue depth)",
                Some(libc::EINVAL) if opts.sqpoll_cpu.is_some() => {
                    " (sqpoll_cpu: that CPU is offline or not allowed to this process; \
                     pick another with --sqpoll_cpu or drop it)"
                }
                Some(libc::EINVAL) if opts.sqpoll || opts.hipri => {
                    " (this kernel refuses sqpoll or hipri; turn them off: --sqpoll 0, --hipri 0)"
                }
                _ => "",
            };
            let what = match (opts.sqpoll, opts.hipri) {
                (true, true) => "io_uring with sqpoll and iopoll",
                (true, false) => "io_uring with sqpoll",
                (false, true) => "io_uring with iopoll",
                (false, false) => "io_uring",
            };
            BackendError::new(
                &name,
                format!("cannot set up {what}: {}{hint}", errno_text(&e)),
            )
        })?;
        if !ring.has_ext_arg() {
            return Err(BackendError::new(
                &name,
                "io_uring on this kernel lacks timed waits (Linux 5.11 or later needed)",
            ));
        }
        let fds: Vec<_> = files.iter().map(|f| f.as_raw_fd()).collect();
        let (targets, fixed_files, files_note) = match ring.register_files(&fds) {
            Ok(()) => (
                (0..fds.len() as u32).map(Target::Fixed).collect(),
                true,
                "registered files".to_string(),
            ),
            Err(e) if opts.sqpoll && !ring.sqpoll_takes_plain_files() => {
                return Err(BackendError::new(
                    &name,
                    format!(
                        "sqpoll: cannot register the files with io_uring ({}), and this \
                         kernel's polling thread takes registered files only (before Linux \
                         5.11); turn sqpoll off (--sqpoll 0)",
                        errno_text(&e)
                    ),
                ));
            }
            Err(e) => (
                fds.iter().map(|&fd| Target::Fd(fd)).collect(),
                false,
                format!("plain files (registration failed: {})", errno_text(&e)),
            ),
        };
        // A device behind O_DIRECT starts each request while the engine
        // prepares the next. Elsewhere one enter per batch is cheaper: a
        // page-cache or tmpfs read completes inside the submission; a file
        // system without a block device (FUSE, NFS) and a loop device hand
        // each request to a worker thread, a wake-up per enter (measured in
        // BENCHMARKS.md). With SQPOLL the kernel's thread submits anyway.
        let commit_each =
            opts.direct && !ring.setup().sqpoll && files.iter().all(on_a_device_queue);
        Ok(FileBackend {
            ring,
            targets,
            files,
            paths: disks.to_vec(),
            reg_bufs: 0,
            depth,
            inflight: 0,
            gave_up: false,
            fixed_files,
            commit_each,
            poll_refused: false,
            buffers_note: "plain buffers".to_string(),
            files_note,
            name,
        })
    }

    /// The io_uring features in use, for the run's environment report
    /// ("io_uring, registered files, registered buffers, single issuer").
    pub fn features(&self) -> String {
        let setup = self.ring.setup();
        let mut s = format!("io_uring, {}, {}", self.files_note, self.buffers_note);
        if setup.single_issuer {
            s.push_str(", single issuer, deferred task work");
        } else if setup.coop_taskrun {
            s.push_str(", cooperative task work");
        }
        if setup.sqpoll {
            s.push_str(", sqpoll");
        }
        if setup.iopoll {
            s.push_str(", iopoll");
        }
        s
    }

    /// Whether files are registered with the ring.
    pub fn registered_files(&self) -> bool {
        self.fixed_files
    }

    /// Whether the pool's buffers are registered with the ring.
    pub fn registered_buffers(&self) -> bool {
        self.reg_bufs > 0
    }

    /// Requests queued or running that have not been reaped.
    pub fn in_flight(&self) -> usize {
        self.inflight
    }

    fn fatal(&self, what: &str, e: &io::Error) -> BackendError {
        BackendError::new(
            &self.name,
            format!("io_uring {what} failed: {}", errno_text(e)),
        )
    }

    /// Submit and wait for up to `want` completions, bounded by `timeout`.
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<(), BackendError> {
        self.ring
            .submit_wait(want, timeout)
            .map_err(|e| self.fatal("enter", &e))
    }

    fn drain(&mut self, out: &mut Vec<Completion>) -> usize {
        let start = out.len();
        let n = self.ring.drain(out);
        self.inflight -= n;
        if self.ring.setup().iopoll
            && out[start..]
                .iter()
                .any(|c| c.result == Err(libc::EOPNOTSUPP))
        {
            self.poll_refused = true;
        }
        n
    }
}

// SAFETY: a request's buffer goes to the kernel in `queue` and is reported
// done only when the kernel posts its completion (`drain`); drop cancels and
// waits for what the kernel still owns, and `retire` says false when some of
// it outlived the wait (see `quiesce`).
unsafe impl Backend for FileBackend {
    fn name(&self) -> &'static str {
        "file"
    }

    fn check(&mut self) -> Result<(), BackendError> {
        check_files(&self.files, &self.paths)
    }

    fn features(&self) -> String {
        FileBackend::features(self)
    }

    fn identity(&self, disk: usize) -> Option<String> {
        file_identity(self.files.get(disk)?)
    }

    fn error_detail(&self) -> Option<String> {
        self.poll_refused.then(|| {
            format!(
                "hipri: {} refused polled I/O (IORING_SETUP_IOPOLL): its device has no poll \
                 queues or its file system cannot poll; turn hipri off (--hipri 0)",
                self.name
            )
        })
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn register_buffers(&mut self, pool: &BufferPool) -> Result<(), BackendError> {
        if self.reg_bufs > 0 {
            return Ok(());
        }
        if pool.count() > u16::MAX as usize + 1 {
            self.buffers_note = "plain buffers (too many slots to register)".to_string();
            return Ok(());
        }
        match self.ring.register_buffers(pool) {
            Ok(()) => {
                self.reg_bufs = pool.count() as u32;
                self.buffers_note = "registered buffers".to_string();
            }
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(libc::ENOMEM) => "RLIMIT_MEMLOCK too low".to_string(),
                    _ => errno_text(&e),
                };
                self.buffers_note = format!("plain buffers (registration failed: {why})");
            }
        }
        Ok(())
    }

    #[inline]
    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if self.inflight >= self.depth {
            return Err(QueueError::Busy);
        }
        if !self.ring.is_enabled() {
            self.ring
                .enable()
                .map_err(|e| QueueError::Fatal(self.fatal("enable", &e)))?;
        }
        let Some(&target) = self.targets.get(req.disk as usize) else {
            return Err(QueueError::Fatal(BackendError::new(
                &self.name,
                format!("request for disk {} of {}", req.disk, self.targets.len()),
            )));
        };
        let buf_index = (req.slot < self.reg_bufs).then_some(req.slot as u16);
        let write = req.dir == Dir::Write;
        // SAFETY: the request's lease lasts until its completion is reaped
        // (Lane), and the completion carrying `slot` is reported only once the
        // kernel posts it; drop and `retire` wait for (or cancel) every request
        // the kernel owns, and `retire` says false when some outlive the wait.
        // Registered buffer `slot` is the pool's buffer `slot`, which holds the lease.
        let push = |ring: &mut Ring| unsafe {
            ring.push_rw(
                write,
                target,
                &req.buf,
                req.offset,
                buf_index,
                req.slot as u64,
            )
        };
        if !push(&mut self.ring) {
            // The SQ is smaller than the depth (clamped): start what is queued.
            self.enter(0, Some(Duration::ZERO))
                .map_err(QueueError::Fatal)?;
            if !push(&mut self.ring) {
                return Err(QueueError::Busy);
            }
        }
        self.inflight += 1;
        Ok(())
    }

    fn retire(&mut self) -> bool {
        self.quiesce()
    }

    #[inline]
    fn commit(&mut self) -> Result<(), BackendError> {
        if self.commit_each && self.ring.sq_pending() > 0 {
            // Each request to the device at once (see `commit_each`).
            return self.enter(0, None);
        }
        // Deferred: the next reap submits and waits in one io_uring_enter.
        Ok(())
    }

    fn commit_each(&self) -> bool {
        self.commit_each
    }

    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        if !self.ring.is_enabled() {
            return Ok(0);
        }
        let want = wait.want(self.inflight);
        let mut got = self.drain(out);
        let pending = self.ring.sq_pending();
        if got >= want {
            if pending > 0 {
                // Start what is queued without waiting.
                self.enter(0, None)?;
                got += self.drain(out);
            }
            return Ok(got);
        }
        match wait.timeout {
            Some(t) if t.is_zero() => {
                if pending > 0 || self.ring.needs_getevents() {
                    self.enter(0, None)?;
                    got += self.drain(out);
                }
            }
            None => {
                while got < want {
                    self.enter(want - got, None)?;
                    got += self.drain(out);
                }
            }
            Some(t) => {
                let start = Instant::now();
                loop {
                    let left = t.saturating_sub(start.elapsed());
                    self.enter(want - got, Some(left))?;
                    got += self.drain(out);
                    if got >= want || left.is_zero() || start.elapsed() >= t {
                        break;
                    }
                }
            }
        }
        Ok(got)
    }
}

impl FileBackend {
    /// Cancel what the kernel has not started and wait up to [`DROP_WAIT`]
    /// for the rest (requests already at the device cannot be cancelled):
    /// true when the kernel owns no request any more.
    fn quiesce(&mut self) -> bool {
        if self.inflight == 0 || self.gave_up {
            return self.inflight == 0;
        }
        if !self.ring.push_cancel_all() {
            let _ = self.ring.submit_wait(0, None);
            let _ = self.ring.push_cancel_all();
        }
        let start = Instant::now();
        while self.inflight > 0 {
            let left = DROP_WAIT.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            if self.ring.submit_wait(self.inflight, Some(left)).is_err() {
                break;
            }
            self.inflight -= self.ring.discard();
        }
        if self.inflight > 0 {
            self.gave_up = true;
            eprintln!(
                "storlab: {}: {} I/O requests still owned by the kernel after {} s",
                self.name,
                self.inflight,
                DROP_WAIT.as_secs()
            );
        }
        self.inflight == 0
    }
}

impl Drop for FileBackend {
    fn drop(&mut self) {
        // Nothing here wants the results. The lane asked `retire` first when
        // requests were in flight, and keeps their buffers if it said false.
        self.quiesce();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Lane;
    use crate::workload::Content;
    use crate::workload::content;
    use std::sync::atomic::{AtomicU32, Ordering};

    static N: AtomicU32 = AtomicU32::new(0);

    /// A unique temporary file path, removed on drop.
    struct TempFile(PathBuf);
    impl TempFile {
        /// A file of `len` zero bytes in the temporary directory.
        fn new(len: u64) -> Self {
            let t = TempFile::named_in(&std::env::temp_dir(), "file");
            let f = File::create(&t.0).unwrap();
            f.set_len(len).unwrap();
            t
        }

        /// A unique path `storlab-STEM-PID-N.tst` in `dir`; nothing is created.
        fn named_in(dir: &Path, stem: &str) -> Self {
            TempFile(dir.join(format!(
                "storlab-{stem}-{}-{}.tst",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            )))
        }

        /// Make the file `len` random bytes from `seed`; returns them.
        fn write_random(&self, len: usize, seed: u64) -> Vec<u8> {
            let mut data = vec![0u8; len];
            content::fill(&mut data, Content::Random, seed, 0);
            std::fs::write(&self.0, &data).unwrap();
            data
        }

        /// A backend of this one file.
        fn open(&self, o: &OpenOptions) -> Result<FileBackend, BackendError> {
            FileBackend::open(std::slice::from_ref(&self.0), o)
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn opts(write: bool, depth: u32) -> OpenOptions {
        OpenOptions {
            write,
            depth,
            ..OpenOptions::default()
        }
    }

    /// `b` with a pool of `slots` buffers of `size` bytes, registered.
    fn lane(b: FileBackend, slots: usize, size: usize) -> Lane<FileBackend> {
        Lane::new(Box::new(b), BufferPool::new(slots, size)).unwrap()
    }

    /// Reap until every slot in `n` requests has completed.
    fn reap_all(b: &mut Lane<FileBackend>, n: usize) -> Vec<Completion> {
        let mut out = Vec::new();
        while out.len() < n {
            b.reap(Wait::at_least(n - out.len()), &mut out).unwrap();
        }
        out.sort_by_key(|c| c.slot);
        out
    }

    fn write_then_read_back(register: bool) {
        write_then_read_back_with(register, &opts(true, 8));
    }

    fn write_then_read_back_with(register: bool, o: &OpenOptions) {
        const BS: usize = 64 * 1024;
        const SLOTS: usize = 8;
        let t = TempFile::new(0);
        let b = t.open(o).unwrap();
        let pool = BufferPool::new(SLOTS, BS);
        let mut b = if register {
            Lane::new(Box::new(b), pool).unwrap()
        } else {
            Lane::unregistered(Box::new(b), pool)
        };
        let f = b.backend();
        println!("features: {}", f.features());
        assert_eq!(
            f.registered_files(),
            f.features().contains("registered files")
        );
        assert_eq!(f.registered_buffers(), register);
        let content = Content::Mixed {
            compress_pct: 20,
            dedupe_pct: 0,
        };
        for s in 0..SLOTS {
            content::fill(b.buf_mut(s as u32), content, 3, s as u64);
        }
        for s in 0..SLOTS as u32 {
            b.queue(s, 0, Dir::Write, s as u64 * BS as u64, BS as u32)
                .unwrap();
        }
        b.commit().unwrap();
        let done = reap_all(&mut b, SLOTS);
        assert!(done.iter().all(|c| c.result == Ok(BS as u32)), "{done:?}");
        assert_eq!(b.in_flight(), 0);
        for s in 0..SLOTS {
            b.buf_mut(s as u32).fill(0xAA);
        }
        // Read back in reverse slot order so each slot reads another block.
        for s in 0..SLOTS as u32 {
            let block = SLOTS as u64 - 1 - s as u64;
            b.queue(s, 0, Dir::Read, block * BS as u64, BS as u32)
                .unwrap();
        }
        b.commit().unwrap();
        let done = reap_all(&mut b, SLOTS);
        assert!(done.iter().all(|c| c.result == Ok(BS as u32)), "{done:?}");
        let mut expect = vec![0u8; BS];
        for s in 0..SLOTS {
            content::fill(&mut expect, content, 3, (SLOTS - 1 - s) as u64);
            assert!(b.buf(s as u32) == &expect[..], "slot {s} read wrong data");
        }
        // The file holds what was written.
        let data = std::fs::read(&t.0).unwrap();
        assert_eq!(data.len(), SLOTS * BS);
        content::fill(&mut expect, content, 3, 5);
        assert!(data[5 * BS..6 * BS] == expect[..]);
    }

    #[test]
    fn write_then_read_back_registered_buffers() {
        write_then_read_back(true);
    }

    #[test]
    fn write_then_read_back_plain_buffers() {
        write_then_read_back(false);
    }

    #[test]
    fn sqpoll_writes_and_reads_back_with_registered_files_and_buffers() {
        let o = OpenOptions {
            sqpoll: true,
            ..opts(true, 8)
        };
        write_then_read_back_with(true, &o);
        let t = TempFile::new(1 << 16);
        let b = t.open(&o).unwrap();
        let b = lane(b, 2, 4096);
        let f = b.backend().features();
        assert!(f.contains("sqpoll"), "{f}");
        // SQPOLL needs registered files on kernels before 5.11: still on.
        assert!(f.contains("registered files, registered buffers"), "{f}");
        assert!(!f.contains("iopoll"), "{f}");
        let plain = t.open(&opts(false, 2)).unwrap();
        assert!(!plain.features().contains("sqpoll"), "{}", plain.features());
    }

    #[test]
    fn sqpoll_wakes_the_idle_kernel_thread() {
        let t = TempFile::new(1 << 16);
        let o = OpenOptions {
            sqpoll: true,
            ..opts(false, 2)
        };
        let b = t.open(&o).unwrap();
        let mut b = lane(b, 2, 4096);
        b.queue(0, 0, Dir::Read, 0, 4096).unwrap();
        b.commit().unwrap();
        assert_eq!(reap_all(&mut b, 1)[0].result, Ok(4096));
        // Past the idle time the kernel thread (a task of this process named
        // iou-sqp-PID) sleeps, and the next submit must wake it.
        let start = Instant::now();
        while !sqpoll_threads_asleep() {
            assert!(
                start.elapsed() < Duration::from_millis(SQPOLL_IDLE_MS as u64 * 5),
                "the SQPOLL thread never went idle"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // A request queued now completes only if the submit wakes it.
        b.queue(1, 0, Dir::Read, 4096, 4096).unwrap();
        b.commit().unwrap();
        let mut out = Vec::new();
        let wait = Wait::at_least(1).or_after(Duration::from_secs(5));
        let got = b.reap(wait, &mut out).unwrap();
        assert_eq!(got, 1, "the idle SQPOLL thread was not woken");
        assert_eq!(out[0].result, Ok(4096));
    }

    /// Whether this process has SQPOLL threads and all of them sleep.
    fn sqpoll_threads_asleep() -> bool {
        let mut seen = 0;
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if !comm.starts_with("iou-sqp") {
                continue;
            }
            seen += 1;
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            if !state.starts_with('S') {
                return false;
            }
        }
        seen > 0
    }

    #[test]
    fn hipri_needs_direct() {
        let t = TempFile::new(1 << 16);
        let o = OpenOptions {
            hipri: true,
            ..opts(false, 2)
        };
        let e = t.open(&o).err().unwrap().to_string();
        assert!(
            e.starts_with(&format!("{}: hipri:", t.0.display()))
                && e.contains("need O_DIRECT")
                && e.contains("turn hipri off (--hipri 0)"),
            "{e}"
        );
    }

    /// O_DIRECT on a file of a block device asks the engine to commit each
    /// request (the device starts it while the next is prepared) and still
    /// reads what it should; a page-cache file, a file on tmpfs (no device)
    /// and an SQPOLL ring take a refill in one commit.
    #[test]
    fn direct_files_on_a_device_commit_each_request_and_the_rest_batch() {
        let t = TempFile::new(1 << 20);
        assert!(!t.open(&opts(false, 4)).unwrap().commit_each());
        let direct = OpenOptions {
            direct: true,
            ..opts(false, 4)
        };
        let b = t.open(&direct).unwrap();
        let on_device = on_a_device_queue(&b.files[0]);
        println!("{}: on a device queue: {on_device}", t.0.display());
        assert_eq!(b.commit_each(), on_device);
        let mut b = lane(b, 2, 4096);
        b.queue(0, 0, Dir::Read, 0, 4096).unwrap();
        b.commit().unwrap();
        b.queue(1, 0, Dir::Read, 8192, 4096).unwrap();
        b.commit().unwrap();
        let done = reap_all(&mut b, 2);
        assert!(done.iter().all(|c| c.result == Ok(4096)), "{done:?}");
        let sqpoll = OpenOptions {
            sqpoll: true,
            ..direct
        };
        assert!(!t.open(&sqpoll).unwrap().commit_each());
        // tmpfs has no block device under it (O_DIRECT there: Linux 6.6+).
        if Path::new("/dev/shm").is_dir() {
            let shm = TempFile(PathBuf::from(format!(
                "/dev/shm/storlab-each-{}-{}.tst",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            )));
            File::create(&shm.0).unwrap().set_len(1 << 20).unwrap();
            match shm.open(&direct) {
                Ok(b) => assert!(!b.commit_each(), "tmpfs: {}", b.features()),
                Err(e) => println!("tmpfs refuses O_DIRECT here: {e}"),
            }
        }
    }

    /// `--hipri` on a file: where the device (or file system) cannot poll, as
    /// this VM's virtio disk and tmpfs, one error naming hipri, the file and
    /// what to do; where it can, polled reads return the file's data.
    #[test]
    fn hipri_polls_or_names_the_refusal() {
        let mut dirs = vec![std::env::temp_dir()];
        if Path::new("/dev/shm").is_dir() {
            dirs.push(PathBuf::from("/dev/shm"));
        }
        for dir in dirs {
            let t = TempFile::named_in(&dir, "hipri");
            let data = t.write_random(8192, 9);
            let o = OpenOptions {
                direct: true,
                hipri: true,
                ..opts(false, 2)
            };
            match t.open(&o) {
                Ok(b) => {
                    assert!(b.features().contains("iopoll"), "{}", b.features());
                    let mut b = lane(b, 1, 8192);
                    b.queue(0, 0, Dir::Read, 0, 8192).unwrap();
                    b.commit().unwrap();
                    assert_eq!(reap_all(&mut b, 1)[0].result, Ok(8192));
                    assert!(b.buf(0) == &data[..]);
                }
                Err(e) => {
                    let e = e.to_string();
                    println!("{}: {e}", dir.display());
                    if e.contains("cannot open for O_DIRECT") {
                        continue;
                    }
                    assert!(
                        e.starts_with(&format!(
                            "{}: hipri (IORING_SETUP_IOPOLL) refused: ",
                            t.0.display()
                        )) && e.contains("cannot poll")
                            && e.ends_with(
                                "turn hipri off (--hipri 0), or use a device with poll \
                                 queues (NVMe with nvme.poll_queues > 0)"
                            ),
                        "{e}"
                    );
                    assert_eq!(e.lines().count(), 1, "{e}");
                }
            }
        }
    }

    /// A sparse file passes the open's polled probe (a hole is read without
    /// the device) where the device cannot poll; the first polled I/O that
    /// reaches the device is refused with EOPNOTSUPP, and the error detail
    /// names hipri.
    #[test]
    fn hipri_refused_after_the_probe_is_named_in_the_detail() {
        let t = TempFile::new(1 << 20);
        let o = OpenOptions {
            direct: true,
            hipri: true,
            write: true,
            ..opts(true, 2)
        };
        let b = match t.open(&o) {
            Ok(b) => b,
            Err(e) => {
                println!("the probe refused already: {e}");
                return;
            }
        };
        let mut b = lane(b, 1, 4096);
        // An allocating write is not polled (the file system drops the flag);
        // reading the block back goes to the device polled.
        b.buf_mut(0).fill(0x3c);
        b.queue(0, 0, Dir::Write, 64 << 10, 4096).unwrap();
        b.commit().unwrap();
        let written = reap_all(&mut b, 1)[0].result;
        if written.is_ok() {
            b.buf_mut(0).fill(0);
            b.queue(0, 0, Dir::Read, 64 << 10, 4096).unwrap();
            b.commit().unwrap();
        }
        let done = if written.is_ok() {
            reap_all(&mut b, 1)[0].result
        } else {
            written
        };
        match done {
            Ok(n) => {
                assert_eq!(n, 4096);
                assert!(b.buf(0).iter().all(|&x| x == 0x3c));
                assert_eq!(b.backend().error_detail(), None);
            }
            Err(errno) => {
                assert_eq!(errno, libc::EOPNOTSUPP);
                let d = b.backend().error_detail().unwrap();
                println!("{d}");
                assert!(
                    d.starts_with(&format!("hipri: {} refused polled I/O", t.0.display()))
                        && d.ends_with("turn hipri off (--hipri 0)"),
                    "{d}"
                );
            }
        }
    }

    #[test]
    fn check_fails_once_the_file_is_unlinked() {
        let t = TempFile::new(1 << 20);
        let mut b = t.open(&opts(false, 1)).unwrap();
        b.check().unwrap();
        std::fs::remove_file(&t.0).unwrap();
        let e = b.check().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "file:{}: was deleted during the run",
                t.0.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn busy_past_depth_and_reap_timeouts() {
        let t = TempFile::new(1 << 20);
        let b = t.open(&opts(false, 3)).unwrap();
        let mut b = lane(b, 4, 4096);
        let mut out = Vec::new();
        // Nothing in flight: returns at once, whatever min and timeout.
        assert_eq!(b.reap(Wait::at_least(1), &mut out).unwrap(), 0);
        let timed = Wait::at_least(1).or_after(Duration::from_millis(50));
        assert_eq!(b.reap(timed, &mut out).unwrap(), 0);
        for s in 0..3 {
            b.queue(s, 0, Dir::Read, s as u64 * 4096, 4096).unwrap();
        }
        assert!(matches!(
            b.queue(3, 0, Dir::Read, 0, 4096),
            Err(QueueError::Busy)
        ));
        b.commit().unwrap();
        // min above the number in flight is bounded by it.
        let n = b.reap(Wait::at_least(10), &mut out).unwrap();
        assert_eq!(n, 3);
        assert_eq!(out.len(), 3);
        b.queue(3, 0, Dir::Read, 0, 4096).unwrap();
        b.commit().unwrap();
        // A poll eventually sees it without blocking.
        let mut polls = 0;
        while b
            .reap(Wait::at_least(1).or_after(Duration::ZERO), &mut out)
            .unwrap()
            == 0
        {
            polls += 1;
            assert!(polls < 1_000_000, "poll never completed");
            std::thread::yield_now();
        }
        assert_eq!(out.last().unwrap().slot, 3);
    }

    #[test]
    fn timed_reap_returns_after_timeout_with_fewer() {
        // A pipe stands in for slow storage: the read cannot finish.
        let t = TempFile::new(0);
        let b = t.open(&opts(false, 2)).unwrap();
        let mut b = lane(b, 1, 4096);
        let mut out = Vec::new();
        let start = Instant::now();
        let timed = Wait::at_least(1).or_after(Duration::from_millis(30));
        assert_eq!(b.reap(timed, &mut out).unwrap(), 0);
        assert!(
            start.elapsed() < Duration::from_millis(25),
            "nothing in flight must not wait"
        );
        // A read at EOF is a short (zero-length) completion, reported as such.
        b.queue(0, 0, Dir::Read, 0, 4096).unwrap();
        b.commit().unwrap();
        let wait = Wait::at_least(1).or_after(Duration::from_secs(5));
        assert_eq!(b.reap(wait, &mut out).unwrap(), 1);
        assert_eq!(
            out,
            vec![Completion {
                slot: 0,
                result: Ok(0)
            }]
        );
    }

    #[test]
    fn timed_reap_waits_for_the_timeout_when_nothing_finishes() {
        use std::io::Write as _;
        use std::os::unix::net::UnixStream;
        // A socket stands in for storage that does not answer yet.
        let t = TempFile::new(0);
        let mut b = t.open(&opts(false, 2)).unwrap();
        let (rx, mut tx) = UnixStream::pair().unwrap();
        b.targets[0] = Target::Fd(rx.as_raw_fd());
        let mut b = lane(b, 1, 16);
        b.queue(0, 0, Dir::Read, u64::MAX, 16).unwrap();
        b.commit().unwrap();
        let mut out = Vec::new();
        let ms40 = Duration::from_millis(40);
        let none = Wait::at_least(0).or_after(ms40);
        assert_eq!(b.reap(none, &mut out).unwrap(), 0);
        let poll_one = Wait::at_least(1).or_after(Duration::ZERO);
        assert_eq!(b.reap(poll_one, &mut out).unwrap(), 0);
        let start = Instant::now();
        let one = Wait::at_least(1).or_after(ms40);
        assert_eq!(b.reap(one, &mut out).unwrap(), 0);
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(39),
            "returned after {waited:?}"
        );
        assert!(waited < Duration::from_secs(2), "returned after {waited:?}");
        tx.write_all(b"0123456789abcdef").unwrap();
        assert_eq!(b.reap(Wait::at_least(1), &mut out).unwrap(), 1);
        assert_eq!(
            out,
            vec![Completion {
                slot: 0,
                result: Ok(16)
            }]
        );
        assert!(b.buf(0) == b"0123456789abcdef");

        // Dropping with a request the kernel still owns cancels it and waits.
        b.queue(0, 0, Dir::Read, u64::MAX, 16).unwrap();
        b.commit().unwrap();
        let briefly = Wait::at_least(0).or_after(Duration::from_millis(5));
        assert_eq!(b.reap(briefly, &mut out).unwrap(), 0);
        assert_eq!(b.backend().in_flight(), 1);
        let start = Instant::now();
        drop(b);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "drop took {:?}",
            start.elapsed()
        );
        tx.write_all(b"late").unwrap();
    }

    #[test]
    fn a_file_reached_by_two_paths_has_one_identity_and_another_file_another() {
        let t = TempFile::new(8192);
        let link = TempFile::named_in(&std::env::temp_dir(), "link");
        std::fs::hard_link(&t.0, &link.0).unwrap();
        let other = TempFile::new(8192);
        let id = |p: &PathBuf| {
            FileBackend::open(std::slice::from_ref(p), &opts(false, 1))
                .unwrap()
                .identity(0)
                .expect("a file has an identity")
        };
        let first = id(&t.0);
        assert!(first.starts_with("file device "), "{first}");
        assert_eq!(first, id(&link.0));
        assert_ne!(first, id(&other.0));
        let psync = PsyncBackend::open(std::slice::from_ref(&link.0), &opts(false, 1))
            .unwrap()
            .identity(0);
        assert_eq!(psync.as_deref(), Some(first.as_str()));
    }

    #[test]
    fn write_on_read_only_fd_is_an_error_completion() {
        let t = TempFile::new(8192);
        let b = t.open(&opts(false, 2)).unwrap();
        let mut b = lane(b, 2, 4096);
        b.queue(1, 0, Dir::Write, 0, 4096).unwrap();
        b.queue(0, 0, Dir::Read, 4096, 4096).unwrap();
        b.commit().unwrap();
        let done = reap_all(&mut b, 2);
        assert_eq!(
            done[0],
            Completion {
                slot: 0,
                result: Ok(4096)
            }
        );
        assert_eq!(
            done[1],
            Completion {
                slot: 1,
                result: Err(libc::EBADF)
            }
        );
        // The backend stays usable.
        b.queue(0, 0, Dir::Read, 0, 4096).unwrap();
        b.commit().unwrap();
        assert_eq!(reap_all(&mut b, 1)[0].result, Ok(4096));
    }

    #[test]
    fn open_errors_name_the_path() {
        let missing = std::env::temp_dir().join(format!("storlab-missing-{}", std::process::id()));
        let err = FileBackend::open(std::slice::from_ref(&missing), &opts(false, 1))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: cannot open for reading: No such file or directory",
                missing.display()
            )
        );
        let dir = std::env::temp_dir();
        let err = FileBackend::open(std::slice::from_ref(&dir), &opts(false, 1))
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("not a regular file or block device"),
            "{err}"
        );
    }

    #[test]
    fn direct_read_or_clear_error() {
        let t = TempFile::new(0);
        let data = t.write_random(16384, 8);
        let o = OpenOptions {
            direct: true,
            sync: None,
            write: false,
            depth: 4,
            size_needed: 0,
            ..OpenOptions::default()
        };
        match t.open(&o) {
            Err(e) => {
                println!(
                    "O_DIRECT not supported on {}: checking the error message instead",
                    t.0.display()
                );
                let msg = e.to_string();
                assert!(msg.starts_with(&t.0.display().to_string()), "{msg}");
                assert!(
                    msg.contains("cannot open for O_DIRECT")
                        && msg.contains("turn direct off: --direct 0"),
                    "{msg}"
                );
            }
            Ok(b) => {
                let mut b = lane(b, 2, 8192);
                b.queue(0, 0, Dir::Read, 8192, 8192).unwrap();
                b.queue(1, 0, Dir::Read, 0, 8192).unwrap();
                b.commit().unwrap();
                let done = reap_all(&mut b, 2);
                if done[0].result == Err(libc::EINVAL) {
                    println!(
                        "O_DIRECT open succeeded but I/O gave EINVAL on {}",
                        t.0.display()
                    );
                }
                assert_eq!(done[0].result, Ok(8192));
                assert_eq!(done[1].result, Ok(8192));
                assert!(b.buf(0) == &data[8192..]);
                assert!(b.buf(1) == &data[..8192]);
            }
        }
    }

    #[test]
    fn backend_moves_to_another_thread() {
        let t = TempFile::new(1 << 16);
        let b = t.open(&opts(false, 4)).unwrap();
        let b = lane(b, 4, 4096);
        std::thread::spawn(move || {
            let mut b = b;
            for round in 0..100u64 {
                for s in 0..4u32 {
                    b.queue(s, 0, Dir::Read, (round % 16) * 4096, 4096).unwrap();
                }
                b.commit().unwrap();
                assert!(reap_all(&mut b, 4).iter().all(|c| c.result == Ok(4096)));
            }
        })
        .join()
        .unwrap();
    }

    /// Page-cache 4 KiB random reads at depth 32 on one thread; prints IOPS.
    /// Run with `cargo test --release --lib -- --ignored page_cache_iops --nocapture`.
    #[test]
    #[ignore]
    fn page_cache_iops() {
        use crate::workload::pattern::Rng;
        const SIZE: u64 = 256 << 20;
        const DEPTH: usize = 32;
        let t = TempFile::new(0);
        let mut data = vec![0u8; 1 << 20];
        {
            let f = File::create(&t.0).unwrap();
            use std::os::unix::fs::FileExt;
            for i in 0..SIZE >> 20 {
                content::fill(&mut data, Content::Random, 1, i);
                f.write_all_at(&data, i << 20).unwrap();
            }
        }
        let b = t.open(&opts(false, DEPTH as u32)).unwrap();
        let mut b = lane(b, DEPTH, 4096);
        let mut rng = Rng::new(7);
        let mut out = Vec::with_capacity(DEPTH);
        let blocks = SIZE / 4096;
        for s in 0..DEPTH as u32 {
            b.queue(s, 0, Dir::Read, rng.below(blocks) * 4096, 4096)
                .unwrap();
        }
        b.commit().unwrap();
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < Duration::from_secs(3) {
            out.clear();
            b.reap(Wait::at_least(1), &mut out).unwrap();
            for c in &out {
                assert_eq!(c.result, Ok(4096));
                b.queue(c.slot, 0, Dir::Read, rng.below(blocks) * 4096, 4096)
                    .unwrap();
            }
            n += out.len() as u64;
            b.commit().unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{}: {:.0} IOPS on one thread ({})",
            t.0.display(),
            n as f64 / secs,
            b.backend().features()
        );
    }
}
