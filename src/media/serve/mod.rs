//! The media layer as a process of its own: `storlab media-serve` mounts the
//! FUSE file system over the lab's backing directory and serves it in the
//! foreground until SIGTERM or SIGINT, then unmounts and exits.
//! [`MediaServer`] is how the lab starts and stops it; [`cleanup`] removes
//! what a server that died (SIGKILL, crash) left mounted.
//!
//! Lifecycle as the lab uses it:
//! 1. `MediaServer::start(store, mountpoint, media, log)`: spawns the
//!    server in its own process group, returns once the file system answers
//!    (or fails naming the step, with nothing left mounted or running).
//! 2. The servers (ganesha, tgt, nbdkit) and the loop device use
//!    `MOUNTPOINT/disk.img`.
//! 3. Between tests, `MediaServer::reset()` returns the medium to its
//!    initial state, and `MediaServer::reset_taking_written()` does too and
//!    says which byte ranges were written through the mount since the last
//!    such take (see below), so the lab restores only those.
//! 4. `MediaServer::stop()` after them: SIGTERM, then SIGKILL, then
//!    [`cleanup`]; a record of the server (pid, start time) is enough, so
//!    `lab down` in another process can do it with [`MediaServer::from_proc`].
//!
//! The ready-file protocol (`LOG` is the server's log file):
//! * `LOG.ready` (with `.log` replaced): the server writes `PID\nresets 0\n`
//!   into it once the file system answers, and `PID\nresets N\n` after the
//!   Nth [`RESET_SIGNAL`], each time by renaming a whole file over it. The
//!   lab removes it before it signals and waits for it to appear again.
//! * `LOG.dirty`, the written ranges: to ask for them, the lab writes
//!   [`dirty::REQUEST`] (`take`) into it before the signal. A server that
//!   finds the request takes its map of written chunks (clearing it) and
//!   renames its answer over the request before it writes the ready file:
//!   `storlab-dirty 1`, then `range FROM TO` per written byte range or one
//!   `unknown WHY` line, then `end` ([`dirty::Written::to_text`]). Without
//!   the request the map is kept (a plain reset). A server that leaves the
//!   request unanswered (one older than the map) cannot tell: the lab then
//!   restores the whole store, as it does on `unknown`.
//! * `LOG.stats`, the medium's counters ([`MediaStats`]: the work each
//!   station has done, read hits and misses, operations by kind, the dirty
//!   data, with the time on CLOCK_MONOTONIC and the resets so far): a
//!   server whose medium is a model writes it before its first ready file,
//!   rewrites it every [`STATS_INTERVAL`] from a thread of its own and at
//!   once after each reset (before the ready file), each time by renaming
//!   a whole file over it, and removes it when it exits. No signal and no
//!   request: any process reads the latest ([`MediaServer::stats`]), and
//!   two snapshots give the shares over the time between them
//!   ([`MediaStats::since`]). A fixed or RAM medium writes none.

use super::Medium;
use super::dirty::{self, Written};
use super::fuse::{self, CacheMode, Options, Server};
use super::stats::{MediaStats, STATS_VERSION};
use crate::process::{self, Proc};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use super::fixed::FixedDelay;

/// The medium named `spec`: a built-in preset, or `fixed:...`
/// ([`FixedDelay`]); see [`crate::media::presets::resolve`], which also reads
/// the user's preset file.
pub fn medium(spec: &str) -> Result<Arc<dyn Medium>, String> {
    super::presets::resolve(spec, None)
}

/// What `storlab media-serve` serves.
#[derive(Clone)]
pub struct ServeConfig {
    /// The backing directory (holds the store file).
    pub backing: PathBuf,
    /// Where to mount.
    pub mountpoint: PathBuf,
    /// The medium.
    pub medium: Arc<dyn Medium>,
    /// Reader threads and cache mode.
    pub options: Options,
    /// Written with our PID once the file system answers.
    pub ready_file: Option<PathBuf>,
}

/// Block SIGTERM, SIGINT, SIGHUP and [`RESET_SIGNAL`] in this thread (and so
/// in every thread it starts after) and return the set, for [`wait_signal`].
fn block_signals() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is valid storage for sigemptyset to fill.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is ours; the calls only edit it and this thread's mask.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, RESET_SIGNAL] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    set
}

/// Wait for one of the signals in `set` (blocked by [`block_signals`]).
fn wait_signal(set: &libc::sigset_t) -> i32 {
    let mut sig = 0;
    // SAFETY: sigwait reads the set and writes one int we own.
    unsafe { libc::sigwait(set, &mut sig) };
    sig
}

/// The signal that returns the served medium to its initial state
/// ([`Medium::reset`]); the server then writes `resets N` into its ready file.
pub const RESET_SIGNAL: libc::c_int = libc::SIGUSR1;

/// The ready file's contents: the server's PID, then how many resets it did.
fn ready_text(resets: u64) -> String {
    format!("{}\nresets {resets}\n", std::process::id())
}

/// Write `text` into `f` (the ready or the written-ranges file) at once:
/// rename a whole file over it.
fn write_ready(f: &Path, text: &str) -> Result<(), String> {
    let mut tmp = f.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, f))
        .map_err(|e| format!("cannot write {}: {e}", f.display()))
}

/// The written-ranges file beside the ready file `ready`.
fn dirty_file(ready: &Path) -> PathBuf {
    ready.with_extension("dirty")
}

/// The statistics file beside the ready file `ready`.
fn stats_file(ready: &Path) -> PathBuf {
    ready.with_extension("stats")
}

/// How often a server rewrites its statistics file.
pub const STATS_INTERVAL: Duration = Duration::from_millis(200);

/// A statistics file older than this is refused: its server is stopped or
/// gone.
const STATS_STALE: Duration = Duration::from_secs(5);

/// Writes the medium's counters into the statistics file, one writer at a
/// time: the statistics thread, and the main loop after a reset (which it
/// does under the same lock, so no snapshot mixes the old counters with
/// the new reset count).
struct Publisher {
    file: PathBuf,
    medium: Arc<dyn Medium>,
    /// Resets done so far.
    resets: Mutex<u64>,
}

impl Publisher {
    /// Write a snapshot now (nothing for a medium without counters).
    fn publish(&self) -> Result<(), String> {
        let resets = self.resets.lock().unwrap_or_else(|p| p.into_inner());
        self.write(*resets)
    }

    /// Reset the medium, count it, and write the fresh counters.
    fn reset(&self) -> Result<(), String> {
        let mut resets = self.resets.lock().unwrap_or_else(|p| p.into_inner());
        self.medium.reset();
        *resets += 1;
        self.write(*resets)
    }

    fn write(&self, resets: u64) -> Result<(), String> {
        let at_ns = fuse::now_ns();
        let Some(counters) = self.medium.counters(at_ns) else {
            return Ok(());
        };
        let stats = MediaStats {
            version: STATS_VERSION,
            pid: std::process::id(),
            medium: self.medium.name().to_string(),
            resets,
            at_ns,
            counters,
        };
        write_ready(&self.file, &stats.to_json())
    }
}

/// The statistics thread: [`Publisher::publish`] every [`STATS_INTERVAL`]
/// until `stop` (a failure is said once, and the next tried again).
fn publish_every(p: Arc<Publisher>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut said = false;
        while !stop.load(Ordering::Relaxed) {
            std::thread::park_timeout(STATS_INTERVAL);
            if stop.load(Ordering::Relaxed) {
                break;
            }
            match p.publish() {
                Err(e) if !said => {
                    eprintln!("storlab media: the statistics not written (will retry): {e}");
                    said = true;
                }
                _ => {}
            }
        }
    })
}

/// Serve in the foreground until SIGTERM, SIGINT or SIGHUP (resetting the
/// medium on each [`RESET_SIGNAL`]); then unmount.
pub fn run(cfg: ServeConfig) -> Result<(), String> {
    let signals = block_signals();
    // The kernel applies the caller's umask before a create reaches us; ours
    // must not mask the mode a second time.
    // SAFETY: umask only sets this process's file mode mask.
    unsafe { libc::umask(0) };
    let name = cfg.medium.name().to_string();
    let medium = cfg.medium.clone();
    let mut server = Server::mount(&cfg.backing, &cfg.mountpoint, cfg.medium, &cfg.options)?;
    println!(
        "storlab media: {name} ({} mode, {:.1} µs round trip charged) serves {} at {} (pid {})",
        server.mode().name(),
        server.overhead_ns() as f64 / 1e3,
        cfg.backing.display(),
        cfg.mountpoint.display(),
        std::process::id()
    );
    let publisher = cfg.ready_file.as_deref().map(|f| {
        Arc::new(Publisher {
            file: stats_file(f),
            medium: medium.clone(),
            resets: Mutex::new(0),
        })
    });
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = match &publisher {
        Some(p) => {
            p.publish()?;
            Some(publish_every(p.clone(), stop.clone()))
        }
        None => None,
    };
    if let Some(f) = &cfg.ready_file {
        write_ready(f, &ready_text(0))?;
    }
    let mut resets = 0;
    let sig = loop {
        let sig = wait_signal(&signals);
        if sig != RESET_SIGNAL {
            break sig;
        }
        if let Some(f) = &cfg.ready_file {
            let d = dirty_file(f);
            if std::fs::read_to_string(&d).is_ok_and(|t| t == dirty::REQUEST) {
                // Not fatal: the request left unanswered, the lab restores
                // everything (which covers what this take cleared).
                if let Err(e) = write_ready(&d, &server.take_written().to_text()) {
                    eprintln!("storlab media: the written ranges not reported: {e}");
                }
            }
        }
        match &publisher {
            // Not fatal: the statistics then lag until the thread's next.
            Some(p) => {
                if let Err(e) = p.reset() {
                    eprintln!("storlab media: the statistics after the reset not written: {e}");
                }
            }
            None => medium.reset(),
        }
        resets += 1;
        if let Some(f) = &cfg.ready_file {
            write_ready(f, &ready_text(resets))?;
        }
    };
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = publishing {
        t.thread().unpark();
        let _ = t.join();
    }
    println!(
        "storlab media: signal {sig}, unmounting; {}",
        server.timing_summary()
    );
    let r = server.unmount();
    if let Some(f) = &cfg.ready_file {
        let _ = std::fs::remove_file(f);
        let _ = std::fs::remove_file(stats_file(f));
    }
    r
}

/// Remove what is left of the media file system at `mountpoint` (see
/// [`fuse::cleanup`]): for after a server died or would not stop.
pub fn cleanup(mountpoint: &Path) -> Result<(), String> {
    fuse::cleanup(mountpoint)
}

/// A running `storlab media-serve` process (what the lab records to stop it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MediaServer {
    /// The process (PID, start time, log).
    pub proc: Proc,
    /// Where it mounted the file system.
    pub mountpoint: PathBuf,
}

/// How long a server has to mount and answer INIT.
const START_TIMEOUT: Duration = Duration::from_secs(10);

impl MediaServer {
    /// Start `storlab media-serve` (this very binary) serving the directory
    /// of the store file `store` at `mountpoint` on media `media` (see
    /// [`medium`]; with `media_file`, a preset of that file, passed as
    /// `--media-file`), output to `log`. Only the store's changes are
    /// recorded for [`MediaServer::reset_taking_written`].
    pub fn start(
        store: &Path,
        mountpoint: &Path,
        media: &str,
        media_file: Option<&Path>,
        log: &Path,
    ) -> Result<MediaServer, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the storlab binary for the media server: {e}"))?;
        MediaServer::start_with(&exe, store, mountpoint, media, media_file, None, log)
    }

    /// [`MediaServer::start`] with the binary and the cache mode given.
    pub fn start_with(
        exe: &Path,
        store: &Path,
        mountpoint: &Path,
        media: &str,
        media_file: Option<&Path>,
        mode: Option<CacheMode>,
        log: &Path,
    ) -> Result<MediaServer, String> {
        // Refused here, before anything is mounted, with the file's own errors.
        super::presets::resolve(media, media_file)?;
        // Checked here, not only by the server: a failed start cleans up its
        // mount point, which must not take another server's mount with it.
        if !fuse::mount::mounted(mountpoint).is_empty() {
            return Err(format!(
                "{} already has storlab's media file system mounted (stop its server, or clean up after it)",
                mountpoint.display()
            ));
        }
        let ready = log.with_extension("ready");
        let _ = std::fs::remove_file(&ready);
        let _ = std::fs::remove_file(dirty_file(&ready));
        let _ = std::fs::remove_file(stats_file(&ready));
        let (Some(backing_dir), Some(name)) = (store.parent(), store.file_name()) else {
            return Err(format!(
                "store {}: not a file in a directory",
                store.display()
            ));
        };
        let mut args = vec![
            "media-serve".to_string(),
            "--backing".into(),
            backing_dir.display().to_string(),
            "--store".into(),
            name.to_string_lossy().into_owned(),
            "--mount".into(),
            mountpoint.display().to_string(),
            "--media".into(),
            media.into(),
            "--ready-file".into(),
            ready.display().to_string(),
        ];
        if let Some(f) = media_file {
            args.extend(["--media-file".into(), f.display().to_string()]);
        }
        if let Some(m) = mode {
            args.extend(["--cache".into(), m.name().into()]);
        }
        let proc = process::spawn(exe, &args, log)?;
        let server = MediaServer {
            proc,
            mountpoint: mountpoint.to_path_buf(),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(&ready).unwrap_or_default();
            if text.lines().next() == Some(&server.proc.pid.to_string()) {
                let _ = std::fs::remove_file(&ready);
                return Ok(server);
            }
            let why = if !server.proc.alive() {
                "exited"
            } else if Instant::now() >= deadline {
                "did not answer within 10 s"
            } else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let stopped = server.stop();
            let _ = std::fs::remove_file(&ready);
            let mut msg = format!(
                "media server for {} at {} {why}",
                backing_dir.display(),
                mountpoint.display()
            );
            if let Err(e) = stopped {
                msg.push_str(&format!(" (and stopping it: {e})"));
            }
            let tail = server.proc.log_tail(10);
            if !tail.is_empty() {
                msg.push_str(&format!(
                    "\n--- last lines of {} ---\n{tail}",
                    server.proc.log.display()
                ));
            }
            return Err(msg);
        }
    }

    /// The server recorded as `proc`, mounted at `mountpoint`.
    pub fn from_proc(proc: Proc, mountpoint: &Path) -> MediaServer {
        MediaServer {
            proc,
            mountpoint: mountpoint.to_path_buf(),
        }
    }

    /// Its PID.
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }

    /// Return its medium to the initial state ([`RESET_SIGNAL`]) and wait
    /// until the server says it has (it writes its ready file again). The
    /// server keeps its map of what was written.
    pub fn reset(&self) -> Result<(), String> {
        let _ = std::fs::remove_file(dirty_file(&self.ready_file()));
        self.signal_reset()
    }

    /// [`MediaServer::reset`], and take what was written through the mount
    /// since the last take (the server clears its map). `Unknown` when the
    /// server cannot tell (passthrough mode, a change it cannot bound, a
    /// server that does not answer the request, an unreadable answer); an
    /// error only when the reset itself fails.
    pub fn reset_taking_written(&self) -> Result<Written, String> {
        let d = dirty_file(&self.ready_file());
        if let Err(e) = std::fs::write(&d, dirty::REQUEST) {
            self.signal_reset()?;
            return Ok(Written::Unknown(format!(
                "cannot ask the media server for the written ranges: {}: {e}",
                d.display()
            )));
        }
        self.signal_reset()?;
        let answer = std::fs::read_to_string(&d);
        let _ = std::fs::remove_file(&d);
        Ok(match answer {
            Ok(t) if t == dirty::REQUEST => Written::Unknown(format!(
                "media server pid {} did not report the written ranges (started by an older storlab, or see its log)",
                self.proc.pid
            )),
            Ok(t) => Written::parse(&t).unwrap_or_else(|e| {
                Written::Unknown(format!(
                    "the media server's answer {} is unreadable: {e}",
                    d.display()
                ))
            }),
            Err(e) => Written::Unknown(format!(
                "no answer from the media server in {}: {e}",
                d.display()
            )),
        })
    }

    /// The medium's counters as the server last wrote them (at most
    /// [`STATS_INTERVAL`] old; `at_ns` says when, on CLOCK_MONOTONIC). Two
    /// give the shares between them ([`MediaStats::since`]). An error names
    /// the file and why: none (a fixed or RAM medium keeps no counters, or
    /// an older storlab started the server), unreadable, another server's,
    /// or not rewritten for seconds (the server is stopped or gone).
    pub fn stats(&self) -> Result<MediaStats, String> {
        let f = stats_file(&self.ready_file());
        let text = std::fs::read_to_string(&f).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "media server pid {} publishes no statistics ({} does not exist: its medium \
                     models no device, such as fixed: or ram, or an older storlab started it)",
                    self.proc.pid,
                    f.display()
                )
            } else {
                format!("cannot read the media statistics {}: {e}", f.display())
            }
        })?;
        let stats = MediaStats::parse(&text, &f.display().to_string())?;
        if stats.pid != self.proc.pid {
            return Err(format!(
                "{}: written by pid {}, not by the media server pid {}",
                f.display(),
                stats.pid,
                self.proc.pid
            ));
        }
        let age = Duration::from_nanos(fuse::now_ns().saturating_sub(stats.at_ns));
        if age > STATS_STALE {
            return Err(format!(
                "media server pid {} last wrote {} {:.1} s ago (it rewrites it every {} ms): \
                 stopped or gone",
                self.proc.pid,
                f.display(),
                age.as_secs_f64(),
                STATS_INTERVAL.as_millis()
            ));
        }
        Ok(stats)
    }

    /// Its ready file.
    fn ready_file(&self) -> PathBuf {
        self.proc.log.with_extension("ready")
    }

    /// Send [`RESET_SIGNAL`] and wait for the ready file.
    fn signal_reset(&self) -> Result<(), String> {
        let ready = self.ready_file();
        let _ = std::fs::remove_file(&ready);
        if !self.proc.signal(RESET_SIGNAL) {
            return Err(format!("media server pid {} is not running", self.proc.pid));
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ready.exists() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "media server pid {} did not reset its medium within 5 s",
                    self.proc.pid
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = std::fs::remove_file(&ready);
        Ok(())
    }

    /// Stop it (SIGTERM: it unmounts; SIGKILL after 10 s) and leave nothing
    /// mounted (see [`cleanup`]). Call after the servers using the mount have
    /// stopped. Idempotent.
    pub fn stop(&self) -> Result<(), String> {
        let gone = self.proc.stop(Duration::from_secs(10));
        let cleaned = cleanup(&self.mountpoint);
        if !gone {
            return Err(format!(
                "media server (pid {}) would not stop",
                self.proc.pid
            ));
        }
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_names_parse_or_say_what_is_allowed() {
        assert_eq!(medium("ram").unwrap().name(), "ram");
        assert!(medium("ram").unwrap().page_cache());
        assert_eq!(medium("fixed:50").unwrap().name(), "fixed:50,50,50");
        assert_eq!(medium("array-15k").unwrap().name(), "array-15k");
        let e = medium("nvme-typo").err().unwrap();
        assert!(
            e.contains("\"nvme-typo\"") && e.contains("nvme-ssd") && e.contains("fixed:US"),
            "{e}"
        );
        assert!(medium("fixed:x").is_err());
    }
}
