//! One mounted file system: the INIT handshake, the reader threads (one
//! /dev/fuse descriptor each, cloned with `FUSE_DEV_IOC_CLONE`, so many
//! requests are read and worked on at once), the timer thread, and unmounting.

use super::abi::{self, Args, InHeader, Pod, init};
use super::calibrate;
use super::fs::{Answer, CacheMode, Fs};
use super::mount;
use super::reply::{Lateness, Reply, Timer};
use super::sys::{self, Errno};
use crate::media::Medium;
use crate::media::dirty::Written;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest READ or WRITE: 256 pages (the kernel's default `max_pages_limit`).
const MAX_PAGES: u16 = 256;
const MAX_WRITE: u32 = MAX_PAGES as u32 * 4096;
/// A request buffer holds the largest WRITE and its headers.
const BUF_SIZE: usize = MAX_WRITE as usize + 4096;
/// Background requests (asynchronous reads and direct I/O) the kernel keeps
/// in flight: enough for QD 128 from a loop device, ganesha and tgt at once
/// (the kernel's default, 12, would cap every queue depth the studies ran).
const MAX_BACKGROUND: u16 = 512;

/// How the file system is served.
#[derive(Clone, Debug)]
pub struct Options {
    /// Reader threads, each with its own /dev/fuse descriptor.
    pub threads: usize,
    /// How data reaches clients; None: passthrough (page cache if the kernel
    /// has no passthrough) when the medium allows the page cache, else direct.
    pub mode: Option<CacheMode>,
    /// In direct mode, measure the server's own round trip once mounted and
    /// charge it against the medium's times (see `calibrate`), and let the
    /// timer end its sleeps as early as they usually end late (see
    /// `reply::Lead`): clients then see the medium's times rather than the
    /// medium's plus the server's. Off: no reply goes out before the
    /// medium's time as the server sees it.
    pub calibrate: bool,
    /// The store's file name in the backing directory: only its changes are
    /// recorded in the written-chunk map (see [`crate::media::dirty`]);
    /// None: every file's changes count.
    pub store: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            threads: 4,
            mode: None,
            calibrate: true,
            store: None,
        }
    }
}

/// A mounted file system and the threads that serve it.
pub struct Server {
    mountpoint: PathBuf,
    fs: Arc<Fs>,
    timer: Arc<Timer>,
    late_now: Arc<Lateness>,
    threads: Vec<JoinHandle<()>>,
    mounted: bool,
}

/// Open /dev/fuse.
fn open_dev() -> Result<OwnedFd, String> {
    sys::open(b"/dev/fuse", libc::O_RDWR, 0).map_err(|e| format!("cannot open /dev/fuse: {e}"))
}

/// Read the kernel's INIT on `dev` and answer it. Returns the cache mode the
/// kernel allows (passthrough only if it offers it).
fn handshake(dev: &OwnedFd, mode: CacheMode) -> Result<CacheMode, String> {
    let mut buf = vec![0u8; BUF_SIZE];
    let n = loop {
        match sys::read(dev.as_fd(), &mut buf) {
            Err(Errno(libc::EINTR)) => continue,
            r => break r.map_err(|e| format!("reading FUSE INIT: {e}"))?,
        }
    };
    let h = InHeader::read(&buf[..n]).ok_or("FUSE INIT: short request")?;
    let i = Args(&buf[size_of::<InHeader>()..n])
        .take::<abi::InitIn>()
        .filter(|_| h.opcode == abi::op::INIT)
        .ok_or_else(|| format!("FUSE: expected INIT, got opcode {}", h.opcode))?;
    if i.major != abi::KERNEL_VERSION || i.minor < 31 {
        Reply::err(Errno(libc::EPROTO)).send(dev, h.unique);
        return Err(format!(
            "FUSE protocol {}.{} of the kernel: 7.31 or later needed",
            i.major, i.minor
        ));
    }
    let mut offered = i.flags as u64;
    if offered & init::INIT_EXT != 0 {
        offered |= (i.flags2 as u64) << 32;
    }
    let mut want = init::ASYNC_READ
        | init::ATOMIC_O_TRUNC
        | init::EXPORT_SUPPORT
        | init::BIG_WRITES
        | init::ASYNC_DIO
        | init::PARALLEL_DIROPS
        | init::MAX_PAGES
        | init::INIT_EXT
        | init::DIRECT_IO_ALLOW_MMAP;
    if mode == CacheMode::Passthrough {
        want |= init::PASSTHROUGH;
    }
    let flags = want & offered;
    let mode = if mode == CacheMode::Passthrough && flags & init::PASSTHROUGH == 0 {
        eprintln!(
            "storlab media: the kernel offers no FUSE passthrough; serving through the page cache"
        );
        CacheMode::PageCache
    } else {
        mode
    };
    let out = abi::InitOut {
        major: abi::KERNEL_VERSION,
        minor: i.minor.min(abi::KERNEL_MINOR_VERSION),
        max_readahead: i.max_readahead,
        flags: flags as u32,
        max_background: MAX_BACKGROUND,
        congestion_threshold: MAX_BACKGROUND / 4 * 3,
        max_write: MAX_WRITE,
        time_gran: 1,
        max_pages: MAX_PAGES,
        flags2: (flags >> 32) as u32,
        // Backing files sit on an ordinary file system (depth 0).
        max_stack_depth: if mode == CacheMode::Passthrough { 1 } else { 0 },
        ..Default::default()
    };
    Reply::of(&out).send(dev, h.unique);
    Ok(mode)
}

/// Another descriptor of `dev`'s connection.
fn clone_dev(dev: &OwnedFd) -> Result<OwnedFd, String> {
    let fd = open_dev()?;
    sys::dev_clone(fd.as_fd(), dev.as_raw_fd())
        .map_err(|e| format!("cannot clone the /dev/fuse descriptor: {e}"))?;
    Ok(fd)
}

/// A reader thread: read requests from `chan`, answer each now or through the
/// timer, until the connection ends (ENODEV after unmount).
fn serve(fs: &Fs, chan: Arc<OwnedFd>, timer: &Timer, late_now: &Lateness) {
    if timer.lead {
        // Like the timer (see `Timer::run`): a request waiting for a reader
        // that ordinary work preempted is late before the server sees it.
        sys::set_realtime(1);
    }
    let mut buf = vec![0u8; BUF_SIZE];
    loop {
        let n = match sys::read(chan.as_fd(), &mut buf) {
            Ok(n) => n,
            // Interrupted, or a request withdrawn before we read it.
            Err(Errno(libc::EINTR | libc::EAGAIN | libc::ENOENT)) => continue,
            Err(Errno(libc::ENODEV)) => return,
            Err(e) => {
                eprintln!("storlab media: reading /dev/fuse: {e}");
                return;
            }
        };
        let arrival = sys::now_ns();
        let Some(h) = InHeader::read(&buf[..n]) else {
            continue;
        };
        let args = Args(&buf[size_of::<InHeader>()..n]);
        match fs.dispatch(&h, args, arrival, &chan) {
            Answer::Now(r) => r.send(&chan, h.unique),
            Answer::At(due, r) => {
                let now = sys::now_ns();
                if due <= now {
                    late_now.add(now - due);
                    r.send(&chan, h.unique);
                } else {
                    timer.push(due, chan.clone(), h.unique, r);
                }
            }
            Answer::Nothing => {}
        }
        if h.opcode == abi::op::DESTROY {
            return;
        }
    }
}

impl Server {
    /// Mount a passthrough file system of `backing` at `mountpoint` whose data
    /// operations complete at `medium`'s times, and start serving it.
    pub fn mount(
        backing: &Path,
        mountpoint: &Path,
        medium: Arc<dyn Medium>,
        opts: &Options,
    ) -> Result<Server, String> {
        if opts.threads == 0 || opts.threads > 64 {
            return Err(format!(
                "FUSE reader threads {}: allowed 1 to 64",
                opts.threads
            ));
        }
        let root = sys::open(
            backing.as_os_str().as_encoded_bytes(),
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .map_err(|e| format!("backing directory {}: {e}", backing.display()))?;
        mount::check_apart(backing, mountpoint)?;
        if !mount::mounted(mountpoint).is_empty() {
            return Err(format!(
                "{} already has storlab's media file system mounted (run its cleanup first)",
                mountpoint.display()
            ));
        }
        let wanted = opts.mode.unwrap_or(if medium.page_cache() {
            CacheMode::Passthrough
        } else {
            CacheMode::Direct
        });
        let dev = open_dev()?;
        mount::mount(&dev, mountpoint)?;
        let started = handshake(&dev, wanted)
            .and_then(|mode| {
                let fs = Fs::new(root, medium, mode, opts.store.as_deref().map(str::as_bytes))
                    .map_err(|e| format!("backing directory {}: {e}", backing.display()))?;
                let mut chans = vec![Arc::new(dev)];
                for _ in 1..opts.threads {
                    chans.push(Arc::new(clone_dev(&chans[0])?));
                }
                Ok((fs, chans))
            })
            .map(|(fs, chans)| {
                // The lead and real-time threads keep held replies on time:
                // only direct mode holds them against a measured round trip
                // (a page-cache or passthrough mount's data mostly bypasses
                // the server).
                let lead = opts.calibrate && fs.mode() == CacheMode::Direct;
                Server::start(mountpoint, fs, chans, lead)
            });
        if started.is_err() {
            let _ = mount::cleanup(mountpoint);
        }
        let server = started?;
        if opts.calibrate && server.mode() == CacheMode::Direct {
            // Without the measure the medium's times are kept as they are
            // (the server's round trip added to them, as before).
            if let Err(e) = calibrate::probe(&server.fs, backing, mountpoint) {
                eprintln!(
                    "storlab media: cannot measure the server's own round trip ({e}); \
                     replies keep the medium's times and add it"
                );
            }
        }
        Ok(server)
    }

    /// Start the threads.
    fn start(mountpoint: &Path, fs: Fs, chans: Vec<Arc<OwnedFd>>, lead: bool) -> Server {
        let fs = Arc::new(fs);
        let timer = Arc::new(Timer::new(lead));
        let late_now = Arc::new(Lateness::default());
        let mut threads = Vec::new();
        {
            let timer = timer.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("media-timer".into())
                    .spawn(move || timer.run())
                    .expect("spawn the media timer thread"),
            );
        }
        for (i, chan) in chans.into_iter().enumerate() {
            let (fs, timer, late_now) = (fs.clone(), timer.clone(), late_now.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("media-fuse{i}"))
                    .spawn(move || serve(&fs, chan, &timer, &late_now))
                    .expect("spawn a media reader thread"),
            );
        }
        Server {
            mountpoint: mountpoint.to_path_buf(),
            fs,
            timer,
            late_now,
            threads,
            mounted: true,
        }
    }

    /// Whether held replies are timed with the learned lead and their
    /// threads run real-time (direct mode with calibration on).
    pub fn leads(&self) -> bool {
        self.timer.lead
    }

    /// How data reaches clients.
    pub fn mode(&self) -> CacheMode {
        self.fs.mode()
    }

    /// The server's own round trip charged against each data reply's due
    /// time, ns (0: not measured; see `calibrate`).
    pub fn overhead_ns(&self) -> u64 {
        self.fs
            .overhead_ns
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The mount point.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// One line on how the replies kept the medium's times: replies held by
    /// the timer and sent after their due time, and replies whose backing I/O
    /// outlasted the medium's time.
    pub fn timing_summary(&self) -> String {
        let (n, mean, max) = self.timer.late.summary();
        let (m, mmean, mmax) = self.late_now.summary();
        format!(
            "{:.1} µs of the server's round trip charged against each reply{}; {n} replies held to the medium's time, late by {mean:.1} µs mean, {max:.1} µs max; \
             {m} sent at once (due by the time the I/O was done), late by {mmean:.1} µs mean, {mmax:.1} µs max",
            self.overhead_ns() as f64 / 1e3,
            if self
                .timer
                .realtime
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                ", timer real-time"
            } else {
                ""
            }
        )
    }

    /// What was written through the mount since the last take (see
    /// [`crate::media::dirty`]), and clear it. Unknown in passthrough mode:
    /// the kernel then writes the backing files itself, unseen.
    pub fn take_written(&self) -> Written {
        self.fs.recheck_store();
        let written = self.fs.dirty.take();
        if self.mode() == CacheMode::Passthrough {
            return Written::Unknown(
                "passthrough mode: the kernel writes the store itself, unseen by the server".into(),
            );
        }
        written
    }

    /// Open files and directories (for tests and status).
    pub fn open_handles(&self) -> usize {
        self.fs.files.len() + self.fs.dirs.len()
    }

    /// Unmount (detaching if busy), send what the timer holds and wait up to
    /// 5 s for the threads: after a detach they serve until the last user
    /// closes its files, and are left to end with the process.
    pub fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        let r = mount::unmount(&self.mountpoint);
        self.timer.stop();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && self.threads.iter().any(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for t in std::mem::take(&mut self.threads) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        r
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.mounted {
            let _ = self.unmount();
            let _ = mount::cleanup(&self.mountpoint);
        }
    }
}
