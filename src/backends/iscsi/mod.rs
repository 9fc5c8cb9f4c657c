//! The iSCSI backend: libiscsi's asynchronous API, one session per target.
//!
//! Each target (`iscsi://host:port/iqn/lun`) gets its own libiscsi context,
//! logged in as a normal session without header digest; with `?nconnect=N`
//! it gets N sessions (N contexts, each with its own ISID, so the target sees
//! N sessions of one initiator) and its requests go round robin over them. I/O is READ(16) and
//! WRITE(16): reads land straight in the engine's buffer (the task's data-in
//! iovec points at the request's buffer), writes are sent straight from it. `commit`
//! flushes the queued PDUs to the sockets; `reap` polls the sockets and lets
//! libiscsi parse the answers, whose callbacks record `(tag, status, sense)`.
//!
//! * **Durability.** With `OpenOptions::sync` (dsync or sync alike: SCSI has no
//!   metadata distinction), a write carries the FUA bit when the LUN reports
//!   DPOFUA in MODE SENSE(10); otherwise the WRITE is followed by a SYNCHRONIZE
//!   CACHE(16) of the written blocks and the request completes when the flush
//!   does. `features()` names the method in use.
//! * **O_DIRECT** has no meaning here: there is no local page cache between the
//!   engine and the target, so `OpenOptions::direct` is ignored (the target's
//!   own caching is its business; use sync for durability).
//! * **Alignment.** Offsets and lengths must be multiples of the LUN's block
//!   size (READ CAPACITY(16)); a request that is not completes at once with
//!   `EINVAL`, and [`IscsiBackend::last_error`] says why.
//! * **Errors.** A SCSI failure completes the request with `EIO`; the status
//!   and sense are kept for [`IscsiBackend::last_error`]. A lost connection
//!   or a PDU libiscsi refuses (bad opcode, data past the task's buffer or
//!   MaxRecvDataSegmentLength; its automatic reconnect is off) makes `reap`
//!   fail with libiscsi's reason, explained (`explain`): the backend is
//!   broken, and dropping it cancels what libiscsi still holds. A PDU for no
//!   task libiscsi drops without a word: the engine's I/O timeout ends that
//!   (tests/hostile/iscsi.rs). A task failed by the transport (a Reject)
//!   completes with `EIO` and libiscsi's text.

mod sys;

use crate::io::{
    Backend, BackendError, Completion, OpenOptions, Polled, QueueError, Request, Wait, reap_polled,
};
use crate::target::Target;
use crate::workload::{Dir, SyncMode};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use sys::{Done, Session};

/// Longest single wait in `reap` while a session wants no events (libiscsi
/// asks for >= 100 ms in that case).
const IDLE_POLL_MS: i32 = 100;

/// The `tgtadm` arguments that make tgtd serve `backing` as LUN 1 of target 1,
/// named `iqn`, to every initiator: create the target, add the LUN, bind it.
/// The lab's tgtd and this backend's tests both set tgtd up with them.
pub fn tgtadm_target_steps<'a>(iqn: &'a str, backing: &'a str) -> [Vec<&'a str>; 3] {
    [
        vec![
            "--lld", "iscsi", "--op", "new", "--mode", "target", "--tid", "1", "-T", iqn,
        ],
        vec![
            "--lld",
            "iscsi",
            "--op",
            "new",
            "--mode",
            "logicalunit",
            "--tid",
            "1",
            "--lun",
            "1",
            "-b",
            backing,
        ],
        vec![
            "--lld", "iscsi", "--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL",
        ],
    ]
}

/// Counter for initiator names and ISIDs, unique within the process.
static SESSION_SEQ: AtomicU32 = AtomicU32::new(0);

/// A fresh initiator IQN for this process: `iqn.2026-11.lab.storlab:initiator-<pid>-<n>`.
pub fn default_initiator() -> String {
    let n = SESSION_SEQ.fetch_add(1, Ordering::Relaxed);
    format!(
        "iqn.2026-11.lab.storlab:initiator-{}-{n}",
        std::process::id()
    )
}

/// How sync writes are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncVia {
    /// Plain writes.
    None,
    /// WRITE(16) with the FUA bit.
    Fua,
    /// WRITE(16), then SYNCHRONIZE CACHE(16) of the same blocks.
    SyncCache,
}

/// What a tag is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Read,
    Write,
    /// The SYNCHRONIZE CACHE after a write.
    Flush,
}

/// The request behind one tag of one session.
#[derive(Clone, Copy, Debug)]
struct Pending {
    slot: u32,
    phase: Phase,
    offset: u64,
    len: u32,
}

/// One target's session and geometry.
struct Disk {
    session: Session,
    /// What INQUIRY's Device Identification page names the LUN
    /// ([`Backend::identity`]).
    identity: Option<String>,
    url: String,
    block_size: u32,
    size: u64,
    /// Indexed by tag.
    pending: Vec<Pending>,
}

/// The sessions of one target: `disks[first..first + n]`.
#[derive(Clone, Copy, Debug)]
struct Route {
    first: usize,
    n: usize,
    /// The session (of `n`) the next request goes to.
    next: usize,
}

/// libiscsi over one or more iSCSI LUNs.
pub struct IscsiBackend {
    // Field order matters only for readability: the sessions' Drop destroys
    // their contexts (running the cancelled callbacks) before freeing anything
    // the callbacks write to; nothing else here is reachable from C.
    /// One per session (several per target with `nconnect`).
    disks: Vec<Disk>,
    /// Per target (the requests' `disk`), its sessions.
    routes: Vec<Route>,
    depth: usize,
    /// Requests accepted by `queue` and not yet returned by `reap`.
    inflight: usize,
    /// Finished (or refused) requests waiting for `reap`.
    ready: Vec<Completion>,
    done: Vec<Done>,
    /// Writes waiting for their SYNCHRONIZE CACHE (scratch of `process_done`).
    flushes: Vec<Pending>,
    pollfds: Vec<libc::pollfd>,
    /// The sockets were serviced by [`Polled::block`] since the last
    /// [`Polled::collect`], which then need not poll them again at once.
    serviced: bool,
    /// Disk index of each entry in `pollfds`.
    poll_disks: Vec<usize>,
    sync: SyncVia,
    features: String,
    last_error: Option<String>,
    broken: Option<String>,
}

/// "host:port" as libiscsi wants it (IPv6 in brackets).
fn portal(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Bytes with a binary-unit hint: "16777216 bytes (16.0 MiB)".
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = "";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit.is_empty() {
        format!("{n} bytes")
    } else {
        format!("{n} bytes ({v:.1} {unit})")
    }
}

/// Why a TCP connection to `host:port` fails, or `None` if it succeeds
/// (libiscsi 1.19 reports every socket failure as "Can not reconnect right now").
fn tcp_problem(host: &str, port: u16) -> Option<String> {
    use std::net::{TcpStream, ToSocketAddrs};
    let addrs = match (host, port).to_socket_addrs() {
        Ok(a) => a.collect::<Vec<_>>(),
        Err(e) => return Some(format!("cannot resolve {host}: {e}")),
    };
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(3)) {
            Ok(_) => return None,
            Err(e) => last = Some(e),
        }
    }
    let e = last?;
    let text = super::file::errno_text(&e).to_lowercase();
    Some(match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!(
            "cannot connect to {}: connection refused (is the target running? `storlab lab up` starts the lab's)",
            portal(host, port)
        ),
        _ => format!(
            "cannot connect to {}: {text} (check the address and that the target is reachable)",
            portal(host, port)
        ),
    })
}

/// Whether libiscsi's `text` names errno `n` (":n" or "(n)", the number whole).
fn names_errno(text: &str, n: i32) -> bool {
    let n = n.to_string();
    text.match_indices(&n).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + n.len()..].chars().next();
        matches!(before, Some(':' | '(')) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// libiscsi's text for a session it tore down, with what it means where the
/// text alone does not say: libiscsi 1.19 reports data past the end of a
/// task's buffer (Data-In longer than the command) as a socket read failing
/// with EINVAL, a data segment over its MaxRecvDataSegmentLength as an
/// invalid data size, a reset met while writing as a bare errno, and gives
/// opcodes in decimal.
fn explain(what: &str) -> String {
    if names_errno(what, libc::EINVAL) {
        format!("{what}: the target sent more data than the command asked for")
    } else if what.contains("wrong opcode") {
        format!("{what}: the target answered a command with a PDU no answer to it may be")
    } else if what.contains("Invalid data size") {
        format!("{what}: a data segment longer than the initiator's MaxRecvDataSegmentLength")
    } else if names_errno(what, libc::ECONNRESET) && !what.contains("reset by peer") {
        format!("{what}: connection reset by peer")
    } else {
        what.to_string()
    }
}

/// Turn libiscsi's connect/login error text into one actionable line.
fn login_error(text: &str, host: &str, port: u16, lun: u32, initiator: &str) -> String {
    let t = text.to_ascii_lowercase();
    if t.contains("target not found") {
        "login failed: target not found (check the IQN; `storlab lab status` lists the lab's)"
            .to_string()
    } else if t.contains("logical_unit_not_supported") {
        format!(
            "LUN {lun} does not exist on the target (check the LUN number; `storlab lab status` lists the lab's)"
        )
    } else if t.contains("authoriz") || t.contains("authentic") || t.contains("chap") {
        format!(
            "login failed: the target refused initiator {initiator} ({text}; check the target's ACL)"
        )
    } else if let Some(problem) = tcp_problem(host, port) {
        problem
    } else {
        format!("login failed: {text}")
    }
}

impl IscsiBackend {
    /// One session per target; disk `i` of requests = `targets[i]`.
    ///
    /// Logs in to every target as `initiator` (see [`default_initiator`]),
    /// reads each LUN's capacity, refuses a LUN smaller than
    /// `opts.size_needed`, and picks how sync writes are made durable.
    /// `opts.direct` is ignored (see the module docs).
    pub fn open(
        targets: &[Target],
        opts: &OpenOptions,
        initiator: &str,
    ) -> Result<IscsiBackend, BackendError> {
        let depth = (opts.depth as usize).max(1);
        let want_sync = matches!(opts.sync, Some(SyncMode::Dsync) | Some(SyncMode::Sync));
        let mut disks = Vec::with_capacity(targets.len());
        let mut routes = Vec::with_capacity(targets.len());
        let mut all_fua = true;
        if targets.is_empty() {
            return Err(BackendError::new("iscsi", "no target to open"));
        }
        for target in targets {
            let url = target.to_string();
            let Target::Iscsi {
                host,
                port,
                iqn,
                lun,
                nconnect,
            } = target
            else {
                return Err(BackendError::new(url, "not an iSCSI target"));
            };
            routes.push(Route {
                first: disks.len(),
                n: *nconnect as usize,
                next: 0,
            });
            for _ in 0..*nconnect {
                let seq = SESSION_SEQ.fetch_add(1, Ordering::Relaxed);
                let isid = (std::process::id() ^ (seq << 16), seq as u16);
                let mut session =
                    Session::connect(initiator, iqn, &portal(host, *port), *lun, depth, isid)
                        .map_err(|e| {
                            BackendError::new(
                                url.clone(),
                                login_error(&e, host, *port, *lun, initiator),
                            )
                        })?;
                let cap = session
                    .read_capacity16()
                    .map_err(|e| BackendError::new(url.clone(), e))?;
                if cap.block_size == 0 || !cap.block_size.is_power_of_two() {
                    return Err(BackendError::new(
                        url,
                        format!(
                            "the LUN reports an unusable block size of {} bytes",
                            cap.block_size
                        ),
                    ));
                }
                let size = cap.blocks.saturating_mul(u64::from(cap.block_size));
                if size < opts.size_needed {
                    return Err(BackendError::new(
                        url,
                        format!(
                            "the LUN holds {} but the workload needs {} (use a bigger LUN or a smaller region)",
                            bytes(size),
                            bytes(opts.size_needed)
                        ),
                    ));
                }
                if want_sync && opts.write {
                    all_fua &= session.dpofua() == Some(true);
                }
                let identity = session.device_id().map(|id| format!("scsi {id}"));
                disks.push(Disk {
                    session,
                    identity,
                    url: url.clone(),
                    block_size: cap.block_size,
                    size,
                    pending: vec![
                        Pending {
                            slot: 0,
                            phase: Phase::Read,
                            offset: 0,
                            len: 0,
                        };
                        depth
                    ],
                });
            }
        }
        let sync = match (want_sync, all_fua) {
            (false, _) => SyncVia::None,
            (true, true) => SyncVia::Fua,
            (true, false) => SyncVia::SyncCache,
        };
        let mut blocks: Vec<u32> = disks.iter().map(|d| d.block_size).collect();
        blocks.sort_unstable();
        blocks.dedup();
        let blocks = blocks
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/");
        let mut features = format!("libiscsi, READ/WRITE(16), zero-copy reads, block {blocks}");
        if disks.len() > routes.len() {
            let most = routes.iter().map(|r| r.n).max().unwrap_or(1);
            features.push_str(&format!(", {most} sessions per target"));
        }
        match sync {
            SyncVia::None => {}
            SyncVia::Fua => features.push_str(", sync writes with FUA"),
            SyncVia::SyncCache => {
                features.push_str(", sync writes + SYNCHRONIZE CACHE(16) (no DPOFUA)")
            }
        }
        Ok(IscsiBackend {
            pollfds: Vec::with_capacity(disks.len()),
            serviced: false,
            poll_disks: Vec::with_capacity(disks.len()),
            disks,
            routes,
            depth,
            inflight: 0,
            ready: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            flushes: Vec::with_capacity(depth),
            sync,
            features,
            last_error: None,
            broken: None,
        })
    }

    /// The text of the last failed request ("iscsi://…: READ(16) of 4096 bytes
    /// at 8192: CHECK CONDITION, ILLEGAL_REQUEST/LBA_OUT_OF_RANGE"), if any.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Size in bytes of disk `i`'s LUN.
    pub fn disk_size(&self, i: usize) -> Option<u64> {
        self.disks.get(i).map(|d| d.size)
    }

    /// Block size of disk `i`'s LUN.
    pub fn block_size(&self, i: usize) -> Option<u32> {
        self.disks.get(i).map(|d| d.block_size)
    }

    /// Complete `slot` at once with `errno`, remembering why.
    fn refuse(&mut self, slot: u32, errno: i32, why: String) {
        self.last_error = Some(why);
        self.ready.push(Completion {
            slot,
            result: Err(errno),
        });
    }

    fn broken_error(&self) -> BackendError {
        let msg = self.broken.clone().unwrap_or_default();
        let target = self
            .disks
            .first()
            .map(|d| d.url.clone())
            .unwrap_or_default();
        BackendError::new(target, msg)
    }

    fn mark_broken(&mut self, disk: usize, what: &str) -> BackendError {
        let d = &self.disks[disk];
        let msg = format!(
            "connection lost ({}); the backend cannot go on",
            explain(what)
        );
        self.broken = Some(msg.clone());
        BackendError::new(d.url.clone(), msg)
    }

    /// Turn drained task results into completions (issuing the SYNCHRONIZE
    /// CACHE after a sync write where needed), appended to `ready`.
    fn process_done(&mut self) -> Result<(), BackendError> {
        for di in 0..self.disks.len() {
            self.done.clear();
            self.flushes.clear();
            let mut done = std::mem::take(&mut self.done);
            // drain frees every drained tag at once: read all their Pending
            // entries before any new submit may take one of those tags.
            self.disks[di].session.drain(&mut done);
            if let Some(d) = done.iter().find(|d| d.status == sys::STATUS_CANCELLED) {
                // libiscsi tore the session down (a protocol error or a lost
                // connection) and cancelled its tasks: say why, not "cancelled".
                let why = self.disks[di]
                    .session
                    .last_error()
                    .unwrap_or_else(|| sys::status_text(d.status, d.sense_key, d.ascq));
                self.done = done;
                return Err(self.mark_broken(di, &why));
            }
            for d in done.iter() {
                let disk = &self.disks[di];
                let p = disk.pending[d.tag as usize];
                if d.status != sys::STATUS_GOOD {
                    let op = match p.phase {
                        Phase::Read => "READ(16)",
                        Phase::Write => "WRITE(16)",
                        Phase::Flush => "SYNCHRONIZE CACHE(16)",
                    };
                    let mut status = sys::status_text(d.status, d.sense_key, d.ascq);
                    if d.status == sys::STATUS_ERROR
                        && let Some(e) = disk.session.last_error()
                    {
                        status = format!("{status} ({e})");
                    }
                    let why = format!(
                        "{}: {op} of {} bytes at {}: {status}",
                        disk.url, p.len, p.offset,
                    );
                    self.refuse(p.slot, libc::EIO, why);
                } else if p.phase == Phase::Write && self.sync == SyncVia::SyncCache {
                    self.flushes.push(p);
                } else {
                    self.ready.push(Completion {
                        slot: p.slot,
                        result: Ok(p.len),
                    });
                }
            }
            self.done = done;
            // The write is on the target: make it stable before completing.
            for k in 0..self.flushes.len() {
                let p = self.flushes[k];
                let disk = &mut self.disks[di];
                let bs = disk.block_size;
                match disk
                    .session
                    .sync_cache16(p.offset / u64::from(bs), p.len / bs)
                {
                    Ok(tag) => {
                        disk.pending[tag as usize] = Pending {
                            phase: Phase::Flush,
                            ..p
                        };
                    }
                    Err(e) => return Err(self.mark_broken(di, &e)),
                }
            }
        }
        Ok(())
    }

    /// One poll over every session's socket, waiting up to `timeout_ms`
    /// (-1: without bound), then let libiscsi handle what happened.
    fn pump(&mut self, timeout_ms: i32) -> Result<(), BackendError> {
        self.pollfds.clear();
        self.poll_disks.clear();
        let mut timeout_ms = timeout_ms;
        for (i, d) in self.disks.iter().enumerate() {
            let events = d.session.which_events();
            if events == 0 {
                // Nothing wanted for now: poll again soon.
                if !(0..=IDLE_POLL_MS).contains(&timeout_ms) {
                    timeout_ms = IDLE_POLL_MS;
                }
                continue;
            }
            self.pollfds.push(libc::pollfd {
                fd: d.session.fd(),
                events,
                revents: 0,
            });
            self.poll_disks.push(i);
        }
        let n = match sys::poll(&mut self.pollfds, timeout_ms) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            Err(e) => {
                let target = self.disks[0].url.clone();
                return Err(BackendError::new(target, format!("poll: {e}")));
            }
        };
        if n == 0 {
            return Ok(());
        }
        for k in 0..self.pollfds.len() {
            let revents = self.pollfds[k].revents;
            if revents == 0 {
                continue;
            }
            let di = self.poll_disks[k];
            if let Err(e) = self.disks[di].session.service(revents) {
                return Err(self.mark_broken(di, &e));
            }
        }
        Ok(())
    }
}

impl Polled for IscsiBackend {
    fn collect(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        // What finished since the last service first: a task libiscsi failed
        // while queueing (a write to a reset socket) carries the reason in
        // the context's error, which the next service would overwrite with
        // its own ("Can not reconnect right now").
        self.process_done()?;
        if !std::mem::take(&mut self.serviced) {
            self.pump(0)?;
            self.process_done()?;
        }
        let n = self.ready.len();
        out.append(&mut self.ready);
        self.inflight -= n;
        Ok(n)
    }

    fn in_flight(&self) -> usize {
        self.inflight
    }

    fn block(&mut self, limit: Option<Duration>) -> Result<bool, BackendError> {
        let ms = match limit {
            None => -1,
            // Round up so a sub-millisecond wait still sleeps.
            Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32,
        };
        self.pump(ms)?;
        self.serviced = true;
        Ok(true)
    }
}

// SAFETY: a request's buffer goes to libiscsi in `queue` (READ(16) lands in
// it, WRITE(16) sends from it) and its completion is made only from its task's
// callback, once libiscsi is through with it; a refused request never reaches
// libiscsi; dropping a session destroys its context, which cancels every task
// before returning, and libiscsi touches buffers only inside calls on it.
unsafe impl Backend for IscsiBackend {
    fn name(&self) -> &'static str {
        "iscsi"
    }

    fn identity(&self, disk: usize) -> Option<String> {
        self.disks
            .get(self.routes.get(disk)?.first)?
            .identity
            .clone()
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn features(&self) -> String {
        self.features.clone()
    }

    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if self.broken.is_some() {
            return Err(QueueError::Fatal(self.broken_error()));
        }
        if self.inflight >= self.depth {
            return Err(QueueError::Busy);
        }
        let Some(route) = self.routes.get_mut(req.disk as usize) else {
            let why = format!(
                "iscsi: request for disk {} but only {} target(s) are open",
                req.disk,
                self.routes.len()
            );
            self.inflight += 1;
            self.refuse(req.slot, libc::EINVAL, why);
            return Ok(());
        };
        let di = route.first + route.next;
        route.next = (route.next + 1) % route.n;
        let disk = &mut self.disks[di];
        let bs = disk.block_size;
        if req.offset % u64::from(bs) != 0 || req.len() % bs != 0 {
            let why = format!(
                "{}: {} bytes at {} is not aligned to the LUN's {}-byte blocks",
                disk.url,
                req.len(),
                req.offset,
                bs
            );
            self.inflight += 1;
            self.refuse(req.slot, libc::EINVAL, why);
            return Ok(());
        }
        if req.is_empty() {
            self.inflight += 1;
            self.ready.push(Completion {
                slot: req.slot,
                result: Ok(0),
            });
            return Ok(());
        }
        let lba = req.offset / u64::from(bs);
        let fua = self.sync == SyncVia::Fua;
        // SAFETY: the lease lasts until the request's completion is reaped
        // (Lane); the completion is made from this tag's Done, after libiscsi
        // is through with the buffer, and dropping the session cancels the
        // task before the lane frees the pool.
        let (res, phase) = unsafe {
            match req.dir {
                Dir::Read => (disk.session.read16(lba, bs, &req.buf), Phase::Read),
                Dir::Write => (disk.session.write16(lba, bs, &req.buf, fua), Phase::Write),
            }
        };
        match res {
            Ok(tag) => {
                disk.pending[tag as usize] = Pending {
                    slot: req.slot,
                    phase,
                    offset: req.offset,
                    len: req.len(),
                };
                self.inflight += 1;
                Ok(())
            }
            Err(e) => Err(QueueError::Fatal(self.mark_broken(di, &e))),
        }
    }

    /// The SCSI status and sense of the last failed request.
    fn error_detail(&self) -> Option<String> {
        self.last_error
            .as_ref()
            .map(|e| format!("last SCSI error: {e}"))
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        if self.broken.is_some() {
            return Err(self.broken_error());
        }
        if self.disks.iter().any(|d| d.session.has_output()) {
            self.pump(0)?;
        }
        Ok(())
    }

    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        if self.broken.is_some() {
            return Err(self.broken_error());
        }
        self.serviced = false;
        reap_polled(self, wait, out)
    }
}

#[cfg(test)]
mod tests {
    //! Against a real tgtd (Debian `tgt`), one per test, on a free port of
    //! 127.0.0.1 with its own control port (`tgtd -C`, socket
    //! /run/tgtd/socket.N), so tests and the lab never share a daemon.

    use super::*;
    use crate::io::{BufferPool, Io, Lane};
    use std::fs::File;
    use std::net::{TcpListener, TcpStream};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    const TGTD: &str = "/usr/sbin/tgtd";
    const TGTADM: &str = "/usr/sbin/tgtadm";
    const IQN: &str = "iqn.2026-11.lab.storlab:test";
    const READY_WAIT: Duration = Duration::from_secs(20);

    /// A tgtd serving `IQN` LUN 1 from a temporary file; stopped on drop.
    struct Tgt {
        child: Child,
        port: u16,
        ctl: String,
        backing: PathBuf,
        log: PathBuf,
    }

    fn need(path: &str) {
        assert!(
            Path::new(path).exists(),
            "{path} not found: the iSCSI tests need tgt and libiscsi; run ./setup.sh"
        );
    }

    fn free_port() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        l.local_addr().unwrap().port()
    }

    fn scratch_dir() -> PathBuf {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    }

    impl Tgt {
        fn start(lun_bytes: u64) -> Tgt {
            need(TGTD);
            need(TGTADM);
            let port = free_port();
            // tgtd's control port must be 1..=32767: derive it from the TCP
            // port (unique while the test runs), so parallel tests never share one.
            let ctl = if port > 32767 { port - 32767 } else { port }.to_string();
            let n = SESSION_SEQ.fetch_add(1, Ordering::Relaxed);
            let stem = format!("storlab-iscsi-test-{}-{n}", std::process::id());
            let backing = scratch_dir().join(format!("{stem}.img"));
            let log = std::env::temp_dir().join(format!("{stem}.log"));
            File::create(&backing)
                .and_then(|f| f.set_len(lun_bytes))
                .expect("create the backing file");
            let logf = File::create(&log).expect("create the tgtd log");
            let child = Command::new(TGTD)
                .args([
                    "-f",
                    "-C",
                    &ctl,
                    "--iscsi",
                    &format!("portal=127.0.0.1:{port}"),
                ])
                .stdin(Stdio::null())
                .stdout(logf.try_clone().unwrap())
                .stderr(logf)
                .spawn()
                .expect("spawn tgtd (run ./setup.sh)");
            let mut t = Tgt {
                child,
                port,
                ctl,
                backing,
                log,
            };
            t.wait_until("tgtd's control socket", |t| {
                t.adm(&["--op", "show", "--mode", "system"]).map(|_| ())
            });
            let b = t.backing.display().to_string();
            for args in tgtadm_target_steps(IQN, &b) {
                if let Err(e) = t.adm(&args) {
                    panic!("tgtadm {args:?}: {e}; log: {}", t.log_text());
                }
            }
            // Ready when a TCP connect and a full login to LUN 1 succeed.
            t.wait_until("an iSCSI login", |t| {
                TcpStream::connect(("127.0.0.1", t.port)).map_err(|e| e.to_string())?;
                IscsiBackend::open(&[t.target(1)], &opts(1, 0), &default_initiator())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            });
            t
        }

        fn wait_until(&mut self, what: &str, mut probe: impl FnMut(&Tgt) -> Result<(), String>) {
            let deadline = Instant::now() + READY_WAIT;
            loop {
                let err = match probe(self) {
                    Ok(()) => return,
                    Err(e) => e,
                };
                if let Ok(Some(st)) = self.child.try_wait() {
                    panic!("tgtd exited ({st}) before {what}: {}", self.log_text());
                }
                if Instant::now() >= deadline {
                    panic!(
                        "tgtd: no {what} after {READY_WAIT:?}: {err}; log: {}",
                        self.log_text()
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        fn adm(&self, args: &[&str]) -> Result<String, String> {
            let out = Command::new(TGTADM)
                .args(["-C", &self.ctl])
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("run tgtadm: {e}"))?;
            if out.status.success() {
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
            }
        }

        fn log_text(&self) -> String {
            std::fs::read_to_string(&self.log).unwrap_or_default()
        }

        fn target(&self, lun: u32) -> Target {
            Target::Iscsi {
                host: "127.0.0.1".into(),
                port: self.port,
                iqn: IQN.into(),
                lun,
                nconnect: 1,
            }
        }

        fn kill_now(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Drop for Tgt {
        fn drop(&mut self) {
            if let Ok(None) = self.child.try_wait() {
                // tgtd ignores SIGTERM: delete the target, then the system.
                let _ = self.adm(&[
                    "--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", "1", "--force",
                ]);
                let _ = self.adm(&["--op", "delete", "--mode", "system"]);
                let deadline = Instant::now() + Duration::from_secs(5);
                while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
                // Still there: SIGKILL our own child by PID.
                self.kill_now();
            }
            let _ = std::fs::remove_file(&self.backing);
            let _ = std::fs::remove_file(&self.log);
            let _ = std::fs::remove_file(format!("/run/tgtd/socket.{}", self.ctl));
            let _ = std::fs::remove_file(format!("/run/tgtd/socket.{}.lock", self.ctl));
        }
    }

    fn opts(depth: u32, size_needed: u64) -> OpenOptions {
        OpenOptions {
            write: true,
            depth,
            size_needed,
            ..OpenOptions::default()
        }
    }

    /// Byte `i` of the pattern for the block at `offset`.
    fn pattern(offset: u64, i: usize) -> u8 {
        (offset / 4096).wrapping_mul(31).wrapping_add(i as u64 * 7) as u8
    }

    /// `b` with one buffer per slot of its depth, and one more (to see Busy).
    fn lane(b: IscsiBackend) -> Lane<IscsiBackend> {
        let depth = b.depth();
        Lane::new(Box::new(b), BufferPool::new(depth + 1, 4096)).unwrap()
    }

    /// Run `ios` at the backend's depth, each of `bs` bytes; writes carry the
    /// pattern, reads are checked against it.
    fn drive(b: &mut Lane<IscsiBackend>, ios: &[(Dir, u64)], bs: u32) -> usize {
        let ios: Vec<Io> = ios
            .iter()
            .map(|&(dir, offset)| Io::new(dir, offset, bs))
            .collect();
        let mut finished = 0;
        let fill = |i: usize, buf: &mut [u8]| match ios[i].dir {
            Dir::Write => {
                for (j, x) in buf.iter_mut().enumerate() {
                    *x = pattern(ios[i].offset, j);
                }
            }
            Dir::Read => buf.fill(0xee),
        };
        let done = |i: usize, r: Result<u32, i32>, buf: &[u8]| {
            let Io { dir, offset, .. } = ios[i];
            assert_eq!(r, Ok(bs), "{dir:?} at {offset}");
            if dir == Dir::Read {
                assert!(
                    buf.iter()
                        .enumerate()
                        .all(|(j, &x)| x == pattern(offset, j)),
                    "data read at {offset} differs from what was written: {:?} vs {:?}",
                    &buf[..8],
                    (0..8).map(|j| pattern(offset, j)).collect::<Vec<_>>()
                );
            }
            finished += 1;
            Ok(())
        };
        let depth = b.backend().depth();
        b.run(&ios, depth, Duration::from_secs(10), fill, done)
            .unwrap_or_else(|e| panic!("{e}"));
        finished
    }

    #[test]
    fn libiscsi_errors_are_explained_by_their_errno() {
        let e = explain("read from socket failed, errno:22");
        assert!(e.ends_with("more data than the command asked for"), "{e}");
        let e = explain("Error when writing to socket :104");
        assert!(e.ends_with("connection reset by peer"), "{e}");
        let e = "iscsi_service: socket error Connection reset by peer(104).";
        assert_eq!(explain(e), e);
        // Numbers that only contain an errno are no errno.
        let e = explain("Got wrong opcode back for itt:1045  got:61 expected 33");
        assert!(e.ends_with("a PDU no answer to it may be"), "{e}");
        assert!(!names_errno("errno:220", 22));
    }

    #[test]
    fn pattern_written_at_qd16_reads_back() {
        let tgt = Tgt::start(16 << 20);
        let b = IscsiBackend::open(&[tgt.target(1)], &opts(16, 16 << 20), &default_initiator())
            .unwrap();
        assert_eq!(b.name(), "iscsi");
        assert_eq!(b.depth(), 16);
        assert_eq!(b.disk_size(0), Some(16 << 20));
        assert_eq!(b.block_size(0), Some(512));
        assert!(b.features().contains("block 512"), "{}", b.features());
        // The LUN is known by its device identification (VPD page 0x83),
        // the same over a second session.
        let id = b.identity(0).expect("tgt names its LUN in VPD page 0x83");
        assert!(id.starts_with("scsi "), "{id}");
        let again = IscsiBackend::open(&[tgt.target(1)], &opts(1, 0), &default_initiator())
            .unwrap()
            .identity(0);
        assert_eq!(again.as_deref(), Some(id.as_str()));
        println!("identity: {id}");
        let mut b = lane(b);
        // A scattered order so neighbouring requests are not adjacent.
        let blocks: Vec<u64> = (0..1024u64).map(|i| (i * 389) % 1024 * 4096).collect();
        let writes: Vec<_> = blocks.iter().map(|&o| (Dir::Write, o)).collect();
        assert_eq!(drive(&mut b, &writes, 4096), 1024);
        let reads: Vec<_> = blocks.iter().rev().map(|&o| (Dir::Read, o)).collect();
        assert_eq!(drive(&mut b, &reads, 4096), 1024);
        // Busy past depth, and reap with nothing in flight returns at once.
        for s in 0..16u32 {
            b.queue(s, 0, Dir::Read, u64::from(s) * 4096, 4096).unwrap();
        }
        assert!(matches!(
            b.queue(16, 0, Dir::Read, 0, 4096),
            Err(QueueError::Busy)
        ));
        b.commit().unwrap();
        let mut out = Vec::new();
        while out.len() < 16 {
            b.reap(Wait::at_least(16), &mut out).unwrap();
        }
        assert_eq!(b.reap(Wait::at_least(4), &mut out).unwrap(), 0);
        assert_eq!(
            b.reap(Wait::at_least(1).or_after(Duration::ZERO), &mut out)
                .unwrap(),
            0
        );
    }

    #[test]
    fn sync_writes_complete_with_fua_and_with_synchronize_cache() {
        let tgt = Tgt::start(4 << 20);
        let mut o = opts(8, 0);
        o.sync = Some(SyncMode::Dsync);
        let b = IscsiBackend::open(&[tgt.target(1)], &o, &default_initiator()).unwrap();
        let f = b.features();
        assert!(
            f.contains("FUA") || f.contains("SYNCHRONIZE CACHE"),
            "features do not say how sync writes are made durable: {f}"
        );
        println!("features: {f}");
        let chosen = b.sync;
        let mut b = lane(b);
        let ios: Vec<_> = (0..64u64).map(|i| (Dir::Write, i * 4096)).collect();
        assert_eq!(drive(&mut b, &ios, 4096), 64);
        drop(b);
        // The other method too, whichever the LUN chose.
        let mut b = IscsiBackend::open(&[tgt.target(1)], &o, &default_initiator()).unwrap();
        b.sync = if chosen == SyncVia::Fua {
            SyncVia::SyncCache
        } else {
            SyncVia::Fua
        };
        let mut b = lane(b);
        let ios: Vec<_> = (64..128u64).map(|i| (Dir::Write, i * 4096)).collect();
        assert_eq!(drive(&mut b, &ios, 4096), 64);
        let ios: Vec<_> = (0..128u64).map(|i| (Dir::Read, i * 4096)).collect();
        assert_eq!(drive(&mut b, &ios, 4096), 128);
    }

    #[test]
    fn open_errors_are_one_line_naming_the_url() {
        let tgt = Tgt::start(1 << 20);
        let init = default_initiator();
        // Wrong IQN.
        let wrong = Target::Iscsi {
            host: "127.0.0.1".into(),
            port: tgt.port,
            iqn: "iqn.x".into(),
            lun: 1,
            nconnect: 1,
        };
        let e = IscsiBackend::open(&[wrong], &opts(1, 0), &init)
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            format!(
                "iscsi://127.0.0.1:{}/iqn.x/1: login failed: target not found (check the IQN; `storlab lab status` lists the lab's)",
                tgt.port
            )
        );
        // Missing LUN.
        let e = IscsiBackend::open(&[tgt.target(7)], &opts(1, 0), &init)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "iscsi://127.0.0.1:{}/{IQN}/7: LUN 7 does not exist",
                tgt.port
            )),
            "{e}"
        );
        // LUN smaller than the workload needs: both sizes named.
        let e = IscsiBackend::open(&[tgt.target(1)], &opts(1, 2 << 20), &init)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("1048576 bytes (1.0 MiB)") && e.contains("2097152 bytes (2.0 MiB)"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        println!("{e}");
        // Nobody listening.
        let port = free_port();
        let none = Target::Iscsi {
            host: "127.0.0.1".into(),
            port,
            iqn: IQN.into(),
            lun: 1,
            nconnect: 1,
        };
        let e = IscsiBackend::open(&[none], &opts(1, 0), &init)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "iscsi://127.0.0.1:{port}/{IQN}/1: cannot connect to 127.0.0.1:{port}: connection refused"
            )),
            "{e}"
        );
        println!("{e}");
    }

    #[test]
    fn unaligned_and_out_of_range_requests_fail_cleanly() {
        let tgt = Tgt::start(1 << 20);
        let b = IscsiBackend::open(&[tgt.target(1)], &opts(4, 0), &default_initiator()).unwrap();
        let mut b = lane(b);
        b.queue(0, 0, Dir::Read, 100, 4096).unwrap();
        b.queue(1, 0, Dir::Read, 0, 1000).unwrap();
        b.queue(2, 0, Dir::Read, 1 << 20, 4096).unwrap();
        b.commit().unwrap();
        let mut out = Vec::new();
        let all = Wait::at_least(3).or_after(Duration::from_secs(10));
        while out.len() < 3 {
            b.reap(all, &mut out).unwrap();
        }
        out.sort_by_key(|c| c.slot);
        assert_eq!(out[0].result, Err(libc::EINVAL));
        assert_eq!(out[1].result, Err(libc::EINVAL));
        assert_eq!(out[2].result, Err(libc::EIO));
        let e = b.backend().last_error().unwrap();
        assert!(
            e.contains("READ(16)") && e.contains("CHECK CONDITION"),
            "{e}"
        );
        // Still usable.
        let ios: Vec<_> = (0..8u64).map(|i| (Dir::Write, i * 4096)).collect();
        assert_eq!(drive(&mut b, &ios, 4096), 8);
        // Dropping with requests in flight on a live session is safe: libiscsi
        // cancels them before the lane frees the buffers.
        for s in 0..3u32 {
            b.queue(s, 0, Dir::Read, u64::from(s) * 4096, 4096).unwrap();
        }
        b.commit().unwrap();
        assert_eq!(b.in_flight(), 3);
        drop(b);
    }

    #[test]
    fn server_death_breaks_reap_and_drop_is_safe() {
        let mut tgt = Tgt::start(4 << 20);
        let b = IscsiBackend::open(&[tgt.target(1)], &opts(8, 0), &default_initiator()).unwrap();
        let mut b = lane(b);
        for s in 0..8u32 {
            b.queue(s, 0, Dir::Read, u64::from(s) * 4096, 4096).unwrap();
        }
        tgt.kill_now();
        let mut out = Vec::new();
        // Some may have finished before the kill; the rest must fail the reap.
        let deadline = Instant::now() + Duration::from_secs(10);
        let all = Wait::at_least(8).or_after(Duration::from_millis(200));
        let err = 'wait: loop {
            match b.commit().and_then(|()| b.reap(all, &mut out)) {
                Err(e) => break e,
                Ok(_) if out.len() == 8 => {
                    // Everything answered before the kill: issue more.
                    out.clear();
                    for s in 0..8u32 {
                        if let Err(QueueError::Fatal(e)) = b.queue(s, 0, Dir::Read, 0, 4096) {
                            break 'wait e;
                        }
                    }
                }
                Ok(_) => {}
            }
            assert!(
                Instant::now() < deadline,
                "reap never noticed the dead target"
            );
        };
        let msg = err.to_string();
        assert!(msg.contains("connection lost"), "{msg}");
        assert!(
            b.reap(Wait::at_least(1).or_after(Duration::ZERO), &mut out)
                .is_err()
        );
        assert!(matches!(
            b.queue(8, 0, Dir::Read, 0, 4096),
            Err(QueueError::Fatal(_))
        ));
        drop(b);
    }

    /// 4k random reads at QD32 against tgtd over loopback, LUN in /dev/shm.
    /// `cargo test --release --lib backends::iscsi -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_4k_randread_qd32() {
        const LUN: u64 = 256 << 20;
        let tgt = Tgt::start(LUN);
        let depth = 32;
        let b =
            IscsiBackend::open(&[tgt.target(1)], &opts(depth, LUN), &default_initiator()).unwrap();
        let mut b = lane(b);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand_off = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % (LUN / 4096)) * 4096
        };
        let mut out = Vec::with_capacity(depth as usize);
        let mut free: Vec<u32> = (0..depth).collect();
        let mut run = |secs: u64, free: &mut Vec<u32>| {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < Duration::from_secs(secs) {
                while let Some(slot) = free.pop() {
                    b.queue(slot, 0, Dir::Read, rand_off(), 4096).unwrap();
                }
                b.commit().unwrap();
                out.clear();
                b.reap(Wait::at_least(1).or_after(Duration::from_secs(1)), &mut out)
                    .unwrap();
                for c in &out {
                    assert_eq!(c.result, Ok(4096));
                    free.push(c.slot);
                }
                n += out.len() as u64;
            }
            n as f64 / start.elapsed().as_secs_f64()
        };
        run(2, &mut free);
        let iops = run(10, &mut free);
        println!(
            "iscsi 4k randread QD{depth}: {iops:.0} IOPS ({:.1} MiB/s)",
            iops * 4096.0 / (1 << 20) as f64
        );
    }
}
