//! The NBD backend: exports of NBD servers through libnbd's asynchronous API.
//!
//! One libnbd handle (one connection) per target; disk `i` of the requests is
//! `targets[i]`. `queue` only records a request; `commit` hands every recorded
//! request to libnbd (`nbd_aio_pread` / `nbd_aio_pwrite`), which sends it
//! without blocking; `reap` polls the sockets with `ppoll`, tells libnbd which
//! are ready (`nbd_aio_notify_read` / `_write`), and collects what the
//! completion callbacks recorded. Every request holds one of `depth` tickets
//! allocated at open, so the hot path allocates nothing.
//!
//! **Durability.** With `sync` set to `dsync` or `sync`, writes carry the FUA
//! flag when the server supports it (`nbd_can_fua`); otherwise each write is
//! followed by a flush, and completes only when the flush has. A server with
//! neither is refused at open. **Direct I/O** has no meaning over NBD (the
//! client has no cache; the server decides how it reaches its storage), so
//! `OpenOptions::direct` is ignored.
//!
//! **Multi-conn.** With `?nconnect=N` a target gets N connections, and its
//! requests go round robin over them; it is refused at open, naming the URL,
//! unless the server advertises multi-conn (`nbd_can_multi_conn`), the NBD
//! protocol's promise that the connections see each other's writes and that a
//! flush on one covers all of them.
//!
//! A connection that dies makes `commit` or `reap` fail: the requests still in
//! flight are lost, as the [`Backend`] contract allows; dropping the backend
//! closes the handles, after which libnbd touches neither buffers nor callbacks.
//!
//! **Reconnect.** With [`OpenOptions::reconnect`] (`--reconnect-timeout`) a
//! dead connection is instead connected again, every 200 ms until the
//! timeout: what completed before it died stands, and every request that
//! was in flight on it (or was handed to it since) is sent again on the new
//! connection once the old handle is closed (so libnbd no longer owns its
//! buffer). NBD requests are idempotent, so a write the server had done
//! before it died is simply written again. Each outage is reported once it
//! ends ([`Backend::take_outages`]); one that outlasts the timeout breaks the
//! backend, naming the target and how long it waited.

mod sys;

use crate::io::Outage;
use crate::io::{
    Backend, BackendError, Completion, IoBuf, OpenOptions, Polled, QueueError, Request, Wait,
    reap_polled,
};
use crate::target::{NbdAddr, NbdReplies, Target};
use crate::workload::units::format_size;
use crate::workload::{Dir, SyncMode};
use std::time::{Duration, Instant};
use sys::{Handle, NbdError};

/// How often a lost connection is tried again.
const RECONNECT_EVERY: Duration = Duration::from_millis(200);

/// Where a ticket stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Unused.
    Free,
    /// Queued, not yet handed to libnbd.
    Queued,
    /// Read or write in flight.
    Running,
    /// Write done, its flush in flight (sync writes without FUA).
    Flushing,
    /// On a lost connection: sent again once it is back (reconnect).
    Waiting,
}

/// One request the backend holds.
#[derive(Debug)]
struct Ticket {
    req: Request,
    stage: Stage,
    /// The connection it was handed to.
    conn: u32,
}

/// The connections of one target: `conns[first..first + n]`.
#[derive(Clone, Copy, Debug)]
struct Disk {
    first: usize,
    n: usize,
    /// The connection (of `n`) the next request goes to.
    next: usize,
}

/// One connection.
struct Conn {
    h: Handle,
    /// The target's URL, for errors.
    url: String,
    /// Sync writes use FUA (else a flush after each write).
    fua: bool,
    /// Commands libnbd holds for us on this connection.
    running: usize,
    /// The export as the server names it: its name and size
    /// ([`Backend::identity`]).
    identity: String,
    /// The target it connects to (again, after a loss).
    target: Target,
    /// Lost and not yet back (reconnect).
    down: Option<Down>,
}

/// A lost connection being connected again.
#[derive(Clone, Debug)]
struct Down {
    why: String,
    lost: Instant,
    next_try: Instant,
}

/// NBD exports through libnbd: asynchronous, `depth` requests in flight.
pub struct NbdBackend {
    conns: Vec<Conn>,
    /// Per target, its connections (more than one with multi-conn).
    disks: Vec<Disk>,
    tickets: Vec<Ticket>,
    /// Free ticket numbers.
    free: Vec<u32>,
    /// Tickets queued since the last commit.
    queued: Vec<u32>,
    /// (ticket, errno) of requests libnbd refused at submission.
    refused: Vec<(u32, i32)>,
    /// (ticket, errno) being processed by `collect`.
    scratch: Vec<(u32, i32)>,
    pollfds: Vec<libc::pollfd>,
    /// The sockets were serviced by [`Polled::block`] since the last
    /// [`Polled::collect`], which then need not poll them again at once.
    serviced: bool,
    /// The connection of each entry of `pollfds`.
    poll_conn: Vec<usize>,
    /// Writes must be durable before they complete.
    sync: bool,
    features: String,
    /// How the connections were opened (to open them again).
    opts: OpenOptions,
    /// Outages ridden through and not yet reported.
    outages: Vec<Outage>,
    /// Completions a reconnect collected from the old connection, for the
    /// next `reap`.
    done_early: Vec<Completion>,
}

/// The message of a failed connection attempt.
fn connect_message(e: &NbdError, export: &str) -> String {
    const HINT: &str = "is the server running? (storlab lab up starts one)";
    let lower = e.message.to_lowercase();
    if e.errno == libc::ECONNREFUSED || lower.contains("connection refused") {
        format!("connection refused: {HINT}")
    } else if e.errno == libc::ENOENT && lower.contains("connect") && !lower.contains("export") {
        format!("no socket there: {HINT}")
    } else if lower.contains("no export named") {
        format!("the server has no export named {export:?}: check the export in the URL")
    } else if lower.contains("export") || lower.contains("opt_go") {
        format!("the server refused the export {export:?}: {}", e.message)
    } else {
        format!("cannot connect: {}", e.message)
    }
}

/// A libnbd call that failed on the connection to `url`.
fn lib_error(url: &str, e: NbdError) -> BackendError {
    BackendError::new(url, format!("libnbd: {}", e.message))
}

fn connect(
    target: &Target,
    opts: &OpenOptions,
    depth: u32,
    sync: bool,
) -> Result<Conn, BackendError> {
    let url = target.to_string();
    let Target::Nbd {
        addr,
        export,
        replies,
        ..
    } = target
    else {
        return Err(BackendError::new(url, "not an NBD target"));
    };
    let lib = |what: &str, e: NbdError| BackendError::new(&url, format!("{what}: {}", e.message));
    let mut h = Handle::new(depth).map_err(|e| lib("cannot create a libnbd handle", e))?;
    h.set_export_name(export)
        .map_err(|e| lib("invalid export name", e))?;
    // The engine never looks at a failed read's buffer: skip libnbd's memset.
    h.set_pread_initialize(false)
        .map_err(|e| lib("libnbd", e))?;
    h.set_request_structured_replies(*replies == NbdReplies::Structured)
        .map_err(|e| lib("libnbd", e))?;
    let r = match addr {
        NbdAddr::Tcp { host, port } => h.connect_tcp(host, *port),
        NbdAddr::Unix(path) => h.connect_unix(path),
    };
    r.map_err(|e| BackendError::new(&url, connect_message(&e, export)))?;
    let size = h
        .size()
        .map_err(|e| lib("cannot read the export's size", e))?;
    if size < opts.size_needed {
        return Err(BackendError::new(
            &url,
            format!(
                "export is {} ({size} bytes), the workload needs {} ({} bytes: offset + size, \
                 or offset + disks x size with disk_layout = slice); \
                 use a bigger export, or a smaller size or fewer VM disks",
                format_size(size),
                format_size(opts.size_needed),
                opts.size_needed
            ),
        ));
    }
    if opts.write && h.is_read_only().map_err(|e| lib("libnbd", e))? {
        return Err(BackendError::new(
            &url,
            "the export is read-only and the workload writes (serve it writable, e.g. nbdkit without -r)",
        ));
    }
    let fua = h.can_fua().map_err(|e| lib("libnbd", e))?;
    let flush = h.can_flush().map_err(|e| lib("libnbd", e))?;
    if sync && opts.write && !fua && !flush {
        return Err(BackendError::new(
            &url,
            "the server supports neither FUA nor flush, so sync writes cannot be made durable (drop sync)",
        ));
    }
    Ok(Conn {
        h,
        url,
        fua,
        running: 0,
        identity: format!("nbd export {export:?} size {size}"),
        target: target.clone(),
        down: None,
    })
}

impl NbdBackend {
    /// One connection per target; disk i of requests = targets\[i\].
    ///
    /// Connects and negotiates with every server (blocking), and refuses, in
    /// one line naming the URL: an unreachable server, an unknown export, an
    /// export smaller than `opts.size_needed`, a read-only export when
    /// `opts.write`, and sync writes on a server with neither FUA nor flush.
    /// `opts.direct` is ignored: NBD has no client cache to bypass.
    pub fn open(targets: &[Target], opts: &OpenOptions) -> Result<NbdBackend, BackendError> {
        if targets.is_empty() {
            return Err(BackendError::new("nbd", "no targets to open"));
        }
        let depth = opts.depth.max(1);
        let sync = matches!(opts.sync, Some(SyncMode::Dsync | SyncMode::Sync));
        let mut conns = Vec::with_capacity(targets.len());
        let mut disks = Vec::with_capacity(targets.len());
        let mut multi = 1;
        for t in targets {
            let n = match t {
                Target::Nbd { nconnect, .. } => *nconnect as usize,
                _ => 1,
            };
            let first = connect(t, opts, depth, sync)?;
            if n > 1
                && !first
                    .h
                    .can_multi_conn()
                    .map_err(|e| lib_error(&first.url, e))?
            {
                return Err(BackendError::new(
                    &first.url,
                    format!(
                        "nconnect={n} needs a server that advertises multi-conn \
                         (NBD_FLAG_CAN_MULTI_CONN), and this one does not: use nconnect=1, \
                         or serve the export with multi-conn (nbdkit's memory and file plugins, \
                         qemu-nbd --shared={n} on a read-only export)"
                    ),
                ));
            }
            disks.push(Disk {
                first: conns.len(),
                n,
                next: 0,
            });
            conns.push(first);
            for _ in 1..n {
                conns.push(connect(t, opts, depth, sync)?);
            }
            multi = multi.max(n);
        }
        let first = &conns[0].h;
        let mut features = format!("libnbd {}", first.version());
        features.push_str(if conns.iter().all(|c| c.h.structured_replies()) {
            ", structured replies"
        } else {
            ", simple replies"
        });
        if sync {
            features.push_str(
                match (conns.iter().all(|c| c.fua), conns.iter().any(|c| c.fua)) {
                    (true, _) => ", FUA",
                    (false, true) => ", FUA or flush after write",
                    (false, false) => ", flush after write",
                },
            );
        }
        if multi > 1 {
            features.push_str(&format!(", multi-conn {multi} connections per export"));
        }
        let n = depth as usize;
        let idle = || Ticket {
            req: Request {
                slot: 0,
                disk: 0,
                dir: Dir::Read,
                offset: 0,
                buf: IoBuf::empty(),
            },
            stage: Stage::Free,
            conn: 0,
        };
        Ok(NbdBackend {
            tickets: (0..n).map(|_| idle()).collect(),
            free: (0..depth).rev().collect(),
            queued: Vec::with_capacity(n),
            refused: Vec::with_capacity(n),
            scratch: Vec::with_capacity(n),
            pollfds: Vec::with_capacity(conns.len()),
            serviced: false,
            poll_conn: Vec::with_capacity(conns.len()),
            conns,
            disks,
            sync,
            features,
            opts: *opts,
            outages: Vec::new(),
            done_early: Vec::new(),
        })
    }

    /// Requests held (queued or running) that have not been reaped.
    pub fn in_flight(&self) -> usize {
        self.tickets.len() - self.free.len()
    }

    fn lost(&self, c: usize, e: &NbdError) -> BackendError {
        let conn = &self.conns[c];
        BackendError::new(
            &conn.url,
            format!(
                "connection lost: {} ({} requests in flight on it are lost)",
                e.message, conn.running
            ),
        )
    }

    /// Connection `c` died of `e`: without reconnect that breaks the
    /// backend; with it, the connection is marked lost (once) and tried
    /// again from `reap`.
    fn conn_lost(&mut self, c: usize, e: &NbdError) -> Result<(), BackendError> {
        if self.opts.reconnect.is_none() {
            return Err(self.lost(c, e));
        }
        let conn = &mut self.conns[c];
        if conn.down.is_none() {
            let now = Instant::now();
            conn.down = Some(Down {
                why: e.message.clone(),
                lost: now,
                next_try: now,
            });
        }
        Ok(())
    }

    /// Hand one queued ticket to libnbd.
    fn start(&mut self, t: u32) -> Result<(), BackendError> {
        let disk = self.tickets[t as usize].req.disk as usize;
        let d = &mut self.disks[disk];
        let c = d.first + d.next;
        d.next = (d.next + 1) % d.n;
        self.send_on(t, c)
    }

    /// Hand ticket `t` to connection `c` (a lost one keeps it waiting).
    fn send_on(&mut self, t: u32, c: usize) -> Result<(), BackendError> {
        self.tickets[t as usize].conn = c as u32;
        if self.conns[c].down.is_some() {
            self.tickets[t as usize].stage = Stage::Waiting;
            return Ok(());
        }
        let req = &self.tickets[t as usize].req;
        let conn = &mut self.conns[c];
        let fua = self.sync && conn.fua;
        // SAFETY: the lease lasts until the request's completion is reaped
        // (Lane); `finish` makes it only from this ticket's callback, once
        // libnbd retired the command, and drop closes every handle (retiring
        // every command) before the lane frees the pool.
        let r = unsafe {
            match req.dir {
                Dir::Read => conn.h.pread(t, &req.buf, req.offset),
                Dir::Write => conn.h.pwrite(t, &req.buf, req.offset, fua),
            }
        };
        match r {
            Ok(()) => {
                conn.running += 1;
                self.tickets[t as usize].stage = Stage::Running;
            }
            Err(e) if conn.h.is_broken() => {
                self.conn_lost(c, &e)?;
                self.tickets[t as usize].stage = Stage::Waiting;
            }
            // Refused by libnbd (bounds, alignment): this request fails, the
            // connection goes on.
            Err(e) => self
                .refused
                .push((t, if e.errno > 0 { e.errno } else { libc::EIO })),
        }
        Ok(())
    }

    fn submit(&mut self) -> Result<(), BackendError> {
        let mut queued = std::mem::take(&mut self.queued);
        let r = queued.iter().try_for_each(|&t| self.start(t));
        queued.clear();
        self.queued = queued;
        r
    }

    /// A command of ticket `t` ended with `err`: complete the request into
    /// `out`, or start its flush. Returns whether a completion was appended.
    fn finish(
        &mut self,
        t: u32,
        mut err: i32,
        out: &mut Vec<Completion>,
    ) -> Result<bool, BackendError> {
        let tk = &self.tickets[t as usize];
        let (slot, len, dir, stage) = (tk.req.slot, tk.req.len(), tk.req.dir, tk.stage);
        let c = tk.conn as usize;
        if err != 0 && self.conns[c].h.is_broken() {
            // libnbd fails what was in flight when the connection dies (a
            // reset, a reply it cannot parse): the connection is the news.
            let e = NbdError {
                message: std::io::Error::from_raw_os_error(err).to_string(),
                errno: err,
            };
            self.conn_lost(c, &e)?;
            self.tickets[t as usize].stage = Stage::Waiting;
            return Ok(false);
        }
        if stage == Stage::Waiting {
            // Failed on a connection already given up and closed: it is
            // sent again with the others.
            return Ok(false);
        }
        let conn = &mut self.conns[c];
        if matches!(stage, Stage::Running | Stage::Flushing) {
            conn.running -= 1;
        }
        if err == 0 && stage == Stage::Running && dir == Dir::Write && self.sync && !conn.fua {
            match conn.h.flush(t) {
                Ok(()) => {
                    conn.running += 1;
                    self.tickets[t as usize].stage = Stage::Flushing;
                    return Ok(false);
                }
                Err(e) if conn.h.is_broken() => {
                    self.conn_lost(c, &e)?;
                    // The write is sent again, then flushed.
                    self.tickets[t as usize].stage = Stage::Waiting;
                    return Ok(false);
                }
                Err(e) => err = if e.errno > 0 { e.errno } else { libc::EIO },
            }
        }
        out.push(Completion {
            slot,
            result: if err == 0 { Ok(len) } else { Err(err) },
        });
        self.tickets[t as usize].stage = Stage::Free;
        self.free.push(t);
        Ok(true)
    }

    /// Collect everything the callbacks (and refused submissions) recorded.
    fn take_done(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        let mut got = self.done_early.len();
        out.append(&mut self.done_early);
        let mut scratch = std::mem::take(&mut self.scratch);
        // A flush started by `finish` may complete inside libnbd at once: loop
        // until nothing new is recorded, so that nothing waits while we poll.
        loop {
            scratch.append(&mut self.refused);
            for conn in &mut self.conns {
                conn.h.take_done(&mut scratch);
            }
            if scratch.is_empty() {
                break;
            }
            for &(t, err) in &scratch {
                if self.finish(t, err, out)? {
                    got += 1;
                }
            }
            scratch.clear();
        }
        self.scratch = scratch;
        Ok(got)
    }

    /// Wait up to `timeout` for a socket to be ready and let libnbd act on it.
    /// Returns false when no connection has a command to wait for.
    fn poll_once(&mut self, timeout: Option<Duration>) -> Result<bool, BackendError> {
        let mut timeout = timeout;
        if let Some(next) = self.reconnect_due()? {
            // Wake for the next attempt (and never spin while one is lost).
            let wait = next.saturating_duration_since(Instant::now());
            timeout = Some(timeout.map_or(wait, |t| t.min(wait)));
        }
        self.pollfds.clear();
        self.poll_conn.clear();
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            if conn.running == 0 || conn.down.is_some() {
                continue;
            }
            if conn.h.is_broken() {
                let e = NbdError {
                    message: "the connection is dead".into(),
                    errno: libc::ENOTCONN,
                };
                self.conn_lost(i, &e)?;
                continue;
            }
            let conn = &self.conns[i];
            self.pollfds.push(libc::pollfd {
                fd: conn.h.fd(),
                events: conn.h.poll_events(),
                revents: 0,
            });
            self.poll_conn.push(i);
        }
        if self.pollfds.is_empty() {
            if self.conns.iter().any(|c| c.down.is_some()) {
                // Only lost connections hold requests: wait for the next try.
                std::thread::sleep(timeout.unwrap_or(RECONNECT_EVERY));
                return Ok(true);
            }
            return Ok(false);
        }
        sys::poll(&mut self.pollfds, timeout).map_err(|e| {
            BackendError::new(
                &self.conns[self.poll_conn[0]].url,
                format!("poll failed: {e}"),
            )
        })?;
        for k in 0..self.pollfds.len() {
            let rev = self.pollfds[k].revents;
            if rev == 0 {
                continue;
            }
            let c = self.poll_conn[k];
            let conn = &mut self.conns[c];
            // Direction may have changed since the poll was set up: ask again.
            let want = conn.h.poll_events();
            let bad = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
            let mut r = Ok(());
            if want & libc::POLLIN != 0 && rev & (libc::POLLIN | bad) != 0 {
                r = conn.h.notify_read();
            }
            let want = conn.h.poll_events();
            if r.is_ok() && want & libc::POLLOUT != 0 && rev & (libc::POLLOUT | bad) != 0 {
                r = conn.h.notify_write();
            }
            let r = match r {
                Ok(()) if conn.h.is_broken() || rev & libc::POLLNVAL != 0 => Err(NbdError {
                    message: "the server closed the connection".into(),
                    errno: libc::ENOTCONN,
                }),
                r => r,
            };
            if let Err(e) = r {
                self.conn_lost(c, &e)?;
            }
        }
        Ok(true)
    }

    /// Try again every lost connection whose time has come: one back has
    /// what it completed before the loss collected, its old handle closed
    /// and every request it held sent again. Returns when the next attempt
    /// is due (`None`: nothing is lost); a connection lost for longer than
    /// the reconnect timeout breaks the backend.
    fn reconnect_due(&mut self) -> Result<Option<Instant>, BackendError> {
        let Some(limit) = self.opts.reconnect else {
            return Ok(None);
        };
        let mut next: Option<Instant> = None;
        for c in 0..self.conns.len() {
            let Some(down) = self.conns[c].down.clone() else {
                continue;
            };
            let now = Instant::now();
            if now < down.next_try {
                next = Some(next.map_or(down.next_try, |n| n.min(down.next_try)));
                continue;
            }
            if now.duration_since(down.lost) > limit {
                let held = self.held_on(c).len();
                return Err(BackendError::new(
                    &self.conns[c].url,
                    format!(
                        "connection lost: {}; not back within the reconnect timeout of {} s \
                         ({held} requests in flight on it are lost)",
                        down.why,
                        limit.as_secs_f64()
                    ),
                ));
            }
            let depth = self.tickets.len() as u32;
            let target = self.conns[c].target.clone();
            match connect(&target, &self.opts, depth, self.sync) {
                Ok(fresh) => self.back(c, fresh, &down)?,
                Err(_) => {
                    let at = now + RECONNECT_EVERY;
                    if let Some(d) = self.conns[c].down.as_mut() {
                        d.next_try = at;
                    }
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
            }
        }
        Ok(next)
    }

    /// Tickets connection `c` holds (in flight on it, or waiting for it).
    fn held_on(&self, c: usize) -> Vec<u32> {
        (0..self.tickets.len() as u32)
            .filter(|&t| {
                let tk = &self.tickets[t as usize];
                tk.conn as usize == c && tk.is_held()
            })
            .collect()
    }

    /// Connection `c` is back as `fresh`: keep what the old one completed,
    /// close it, send everything it held again, and record the outage.
    fn back(&mut self, c: usize, fresh: Conn, down: &Down) -> Result<(), BackendError> {
        let mut done = Vec::new();
        self.conns[c].h.take_done(&mut done);
        let mut out = Vec::new();
        for (t, err) in done {
            if err == 0 && self.tickets[t as usize].stage != Stage::Waiting {
                // Completed before the loss: it stands.
                if self.finish(t, 0, &mut out)? {
                    continue;
                }
            }
            self.tickets[t as usize].stage = Stage::Waiting;
        }
        self.done_early.append(&mut out);
        // Closing the old handle retires every command it still had, so no
        // buffer is touched by it again.
        self.conns[c] = fresh;
        let again = self.held_on(c);
        for &t in &again {
            self.send_on(t, c)?;
        }
        self.outages.push(Outage {
            target: self.conns[c].url.clone(),
            why: down.why.clone(),
            lost: down.lost,
            back: Instant::now(),
            retried: again.len() as u32,
        });
        Ok(())
    }
}

impl Ticket {
    /// Whether its request is in flight or waiting to be sent again.
    fn is_held(&self) -> bool {
        matches!(
            self.stage,
            Stage::Running | Stage::Flushing | Stage::Waiting
        )
    }
}

impl Polled for NbdBackend {
    fn collect(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        if !std::mem::take(&mut self.serviced) {
            self.poll_once(Some(Duration::ZERO))?;
        }
        self.take_done(out)
    }

    fn in_flight(&self) -> usize {
        NbdBackend::in_flight(self)
    }

    fn block(&mut self, limit: Option<Duration>) -> Result<bool, BackendError> {
        let waited = self.poll_once(limit)?;
        self.serviced = waited;
        Ok(waited)
    }
}
// SAFETY: a request's buffer goes to libnbd at `commit` (aio_pread lands in
// it, aio_pwrite sends from it) and its completion is made only from its
// command's callback, once libnbd retired the command (a refused command is
// failed at once and never reaches libnbd); dropping the backend closes the
// handles, which retires every command, and libnbd touches buffers only inside
// calls on a handle.
unsafe impl Backend for NbdBackend {
    fn name(&self) -> &'static str {
        "nbd"
    }

    fn identity(&self, disk: usize) -> Option<String> {
        Some(
            self.conns
                .get(self.disks.get(disk)?.first)?
                .identity
                .clone(),
        )
    }

    fn depth(&self) -> usize {
        self.tickets.len()
    }

    fn features(&self) -> String {
        self.features.clone()
    }

    fn take_outages(&mut self, out: &mut Vec<Outage>) {
        out.append(&mut self.outages);
    }

    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if req.disk as usize >= self.disks.len() {
            return Err(QueueError::Fatal(BackendError::new(
                "nbd",
                format!(
                    "request for disk {}, but {} targets are open",
                    req.disk,
                    self.disks.len()
                ),
            )));
        }
        let Some(t) = self.free.pop() else {
            return Err(QueueError::Busy);
        };
        self.tickets[t as usize] = Ticket {
            req,
            stage: Stage::Queued,
            conn: 0,
        };
        self.queued.push(t);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        self.submit()
    }

    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        // Requests queued without a commit must still make progress.
        self.submit()?;
        self.serviced = false;
        reap_polled(self, wait, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BufferPool, Io, Lane};
    use std::net::TcpListener;
    use std::os::unix::net::UnixStream;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    const MIB: u64 = 1 << 20;

    /// An nbdkit child in a temp dir, killed by its PID on drop.
    struct Nbdkit {
        child: Child,
        dir: PathBuf,
        target: Target,
    }

    fn temp_dir() -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "storlab-nbd-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn spawn_nbdkit(args: &[String], dir: &Path) -> Child {
        Command::new("nbdkit")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("nbdkit.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start nbdkit ({e}): run ./setup.sh, which installs nbdkit and libnbd-dev")
            })
    }

    impl Nbdkit {
        /// `nbdkit -f [--unix SOCK | -i 127.0.0.1 -p PORT] -e store ARGS…`,
        /// ready once its socket accepts a connection.
        fn start(tcp: bool, args: &[&str]) -> Nbdkit {
            let dir = temp_dir();
            let mut argv: Vec<String> = vec!["-f".into(), "-e".into(), "store".into()];
            let (target, port) = if tcp {
                let port = free_port();
                argv.extend([
                    "-i".into(),
                    "127.0.0.1".into(),
                    "-p".into(),
                    port.to_string(),
                ]);
                (
                    Target::parse(&format!("nbd://127.0.0.1:{port}/store")).unwrap(),
                    Some(port),
                )
            } else {
                let sock = dir.join("nbd.sock");
                argv.extend(["--unix".into(), sock.display().to_string()]);
                let t = Target::Nbd {
                    addr: NbdAddr::Unix(sock),
                    export: "store".into(),
                    replies: NbdReplies::Simple,
                    nconnect: 1,
                };
                (t, None)
            };
            argv.extend(args.iter().map(|s| s.to_string()));
            let child = spawn_nbdkit(&argv, &dir);
            let mut s = Nbdkit { child, dir, target };
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let up = match (&s.target, port) {
                    (_, Some(p)) => std::net::TcpStream::connect(("127.0.0.1", p)).is_ok(),
                    (
                        Target::Nbd {
                            addr: NbdAddr::Unix(p),
                            ..
                        },
                        None,
                    ) => UnixStream::connect(p).is_ok(),
                    _ => unreachable!(),
                };
                if up {
                    return s;
                }
                if let Some(st) = s.child.try_wait().unwrap() {
                    let log = std::fs::read_to_string(s.dir.join("nbdkit.log")).unwrap_or_default();
                    panic!("nbdkit exited ({st}) before it was ready: {log}");
                }
                assert!(Instant::now() < deadline, "nbdkit not ready after 20 s");
                std::thread::sleep(Duration::from_millis(5));
            }
        }

        fn kill(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Drop for Nbdkit {
        fn drop(&mut self) {
            self.kill();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    fn opts(write: bool, depth: u32, size_needed: u64) -> OpenOptions {
        OpenOptions {
            direct: true,
            sync: None,
            write,
            depth,
            size_needed,
            ..OpenOptions::default()
        }
    }

    /// A backend of `t` alone, which must open.
    #[track_caller]
    fn open_one(t: &Target, o: &OpenOptions) -> NbdBackend {
        NbdBackend::open(std::slice::from_ref(t), o).unwrap()
    }

    /// Why a backend of `t` alone does not open.
    #[track_caller]
    fn open_err(t: &Target, o: &OpenOptions) -> String {
        NbdBackend::open(std::slice::from_ref(t), o)
            .err()
            .unwrap()
            .to_string()
    }

    /// The byte at `i` of the block at `offset`.
    fn pattern(offset: u64, i: usize) -> u8 {
        (offset / 4096).wrapping_mul(31).wrapping_add(i as u64) as u8
    }

    /// `b` with one `size`-byte buffer per slot of its depth, and one more.
    fn lane(b: NbdBackend, size: usize) -> Lane<NbdBackend> {
        let depth = b.depth();
        Lane::new(Box::new(b), BufferPool::new(depth + 1, size)).unwrap()
    }

    /// Run `ios` (dir, offset) of `bs` bytes at the backend's depth; buffers of
    /// writes hold the pattern, reads are checked against it.
    fn run(b: &mut Lane<NbdBackend>, ios: &[(Dir, u64)], bs: usize) {
        let depth = b.backend().depth();
        let ios: Vec<Io> = ios
            .iter()
            .map(|&(dir, offset)| Io::new(dir, offset, bs as u32))
            .collect();
        let fill = |i: usize, buf: &mut [u8]| {
            let Io { dir, offset, .. } = ios[i];
            for (j, x) in buf.iter_mut().enumerate() {
                *x = if dir == Dir::Write {
                    pattern(offset, j)
                } else {
                    0
                };
            }
        };
        let done = |i: usize, r: Result<u32, i32>, buf: &[u8]| {
            let Io { dir, offset, .. } = ios[i];
            assert_eq!(r, Ok(bs as u32), "{dir:?} at {offset}");
            if dir == Dir::Read {
                for (j, &x) in buf.iter().enumerate() {
                    assert_eq!(x, pattern(offset, j), "byte {j} of block at {offset}");
                }
            }
            Ok(())
        };
        b.run(&ios, depth, Duration::from_secs(10), fill, done)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.backend().in_flight(), 0);
    }

    /// 512 distinct 4 KiB blocks of a 64 MiB export, in scattered order.
    fn offsets() -> Vec<u64> {
        (0..512u64).map(|i| (i * 7919 % 16384) * 4096).collect()
    }

    fn write_read_back(server_args: &[&str], sync: Option<SyncMode>, want_feature: &str) {
        let srv = Nbdkit::start(false, server_args);
        write_read_back_on(&srv.target, sync, want_feature);
    }

    fn write_read_back_on(target: &Target, sync: Option<SyncMode>, want_feature: &str) {
        let mut o = opts(true, 16, 64 * MIB);
        o.sync = sync;
        let b = open_one(target, &o);
        assert_eq!(b.name(), "nbd");
        assert_eq!(b.depth(), 16);
        assert!(b.features().starts_with("libnbd 1."), "{}", b.features());
        assert!(b.features().contains(want_feature), "{}", b.features());
        let offs = offsets();
        let writes: Vec<_> = offs.iter().map(|&o| (Dir::Write, o)).collect();
        run(&mut lane(b, 4096), &writes, 4096);
        // A new connection sees the data: it reached the server.
        let b = open_one(target, &opts(false, 16, 0));
        let reads: Vec<_> = offs.iter().rev().map(|&o| (Dir::Read, o)).collect();
        run(&mut lane(b, 4096), &reads, 4096);
    }

    #[test]
    fn writes_a_pattern_at_qd16_and_reads_it_back() {
        write_read_back(&["memory", "64M"], None, ", simple replies");
    }

    #[test]
    fn structured_replies_when_the_url_asks_for_them() {
        let srv = Nbdkit::start(false, &["memory", "64M"]);
        let Target::Nbd { addr, export, .. } = srv.target.clone() else {
            unreachable!()
        };
        let t = Target::Nbd {
            addr,
            export,
            replies: NbdReplies::Structured,
            nconnect: 1,
        };
        write_read_back_on(&t, None, ", structured replies");
    }

    /// The srv's target with `nconnect` connections.
    fn with_nconnect(srv: &Nbdkit, n: u8) -> Target {
        let mut t = srv.target.clone();
        if let Target::Nbd { nconnect, .. } = &mut t {
            *nconnect = n;
        }
        t
    }

    #[test]
    fn multi_conn_spreads_requests_over_the_connections() {
        let srv = Nbdkit::start(true, &["memory", "64M"]);
        let t = with_nconnect(&srv, 4);
        assert!(t.to_string().ends_with("/store?nconnect=4"), "{t}");
        write_read_back_on(&t, Some(SyncMode::Dsync), ", multi-conn 4 connections");
        // Round robin: 8 reads went 2 to each of the 4 connections.
        let b = open_one(&t, &opts(false, 8, 0));
        assert_eq!(b.conns.len(), 4);
        let mut b = lane(b, 4096);
        let reads: Vec<_> = offsets()[..8].iter().map(|&o| (Dir::Read, o)).collect();
        run(&mut b, &reads, 4096);
        let b = b.backend();
        assert!(b.conns.iter().all(|c| c.running == 0));
        assert_eq!(
            b.disks[0].next, 0,
            "8 requests over 4 connections end where they began"
        );
    }

    #[test]
    fn nconnect_without_multi_conn_is_refused_naming_the_option() {
        let args = [
            "--filter=multi-conn",
            "memory",
            "64M",
            "multi-conn-mode=disable",
        ];
        let srv = Nbdkit::start(true, &args);
        open_one(&srv.target, &opts(true, 4, 0));
        let t = with_nconnect(&srv, 2);
        let e = open_err(&t, &opts(true, 4, 0));
        assert!(
            e.starts_with(&format!("{t}: nconnect=2 needs a server")),
            "{e}"
        );
        assert!(e.contains("NBD_FLAG_CAN_MULTI_CONN"), "{e}");
    }

    #[test]
    fn sync_writes_use_fua() {
        write_read_back(&["memory", "64M"], Some(SyncMode::Dsync), ", FUA");
    }

    #[test]
    fn sync_writes_flush_when_the_server_has_no_fua() {
        // The fua filter's default mode (none) hides FUA from clients.
        let args = ["--filter=fua", "memory", "64M"];
        write_read_back(&args, Some(SyncMode::Sync), "flush after write");
    }

    #[test]
    fn busy_past_depth_and_reap_polls() {
        let srv = Nbdkit::start(false, &["memory", "64M"]);
        let b = open_one(&srv.target, &opts(false, 4, 0));
        let mut b = lane(b, 512);
        for s in 0..4 {
            b.queue(s, 0, Dir::Read, s as u64 * 512, 512).unwrap();
        }
        assert!(matches!(
            b.queue(4, 0, Dir::Read, 4 * 512, 512),
            Err(QueueError::Busy)
        ));
        let mut out = Vec::new();
        // Nothing committed: reap still starts the queued requests.
        let t = Instant::now();
        let mut n = 0;
        while n < 4 {
            n += b.reap(Wait::POLL, &mut out).unwrap();
            assert!(t.elapsed() < Duration::from_secs(10));
        }
        assert_eq!(out.len(), 4);
        assert!(out.iter().all(|c| c.result == Ok(512)));
        // Nothing in flight: min is bounded by 0, no hang without a timeout.
        assert_eq!(b.reap(Wait::at_least(4), &mut out).unwrap(), 0);
        // A read past the end fails alone; the backend goes on.
        b.queue(4, 0, Dir::Read, 64 * MIB, 512).unwrap();
        b.commit().unwrap();
        out.clear();
        let one = Wait::at_least(1).or_after(Duration::from_secs(10));
        assert_eq!(b.reap(one, &mut out).unwrap(), 1);
        assert!(matches!(out[0].result, Err(e) if e > 0), "{out:?}");
        b.queue(4, 0, Dir::Read, 4 * 512, 512).unwrap();
        b.commit().unwrap();
        out.clear();
        assert_eq!(b.reap(Wait::at_least(1), &mut out).unwrap(), 1);
        assert_eq!(
            out[0],
            Completion {
                slot: 4,
                result: Ok(512)
            }
        );
    }

    #[test]
    fn export_smaller_than_needed_fails_at_open() {
        let srv = Nbdkit::start(false, &["memory", "64M"]);
        let e = open_err(&srv.target, &opts(false, 1, 1 << 30));
        assert!(e.starts_with(&srv.target.to_string()), "{e}");
        assert!(
            e.contains(
                "export is 64 MiB (67108864 bytes), the workload needs 1 GiB (1073741824 bytes"
            ),
            "{e}"
        );
    }

    #[test]
    fn export_smaller_than_the_sliced_working_set_fails_at_open() {
        use crate::plan::{self, TargetKind};
        let srv = Nbdkit::start(false, &["memory", "64M"]);
        // 8 VMs x 1 disk x 16 MiB, each its own slice: 128 MiB on a 64 MiB export.
        let mut spec = crate::workload::test_spec(8, 1, 1);
        spec.size = 16 * MIB;
        let t = vec![(srv.target.clone(), TargetKind::Single)];
        let need = plan::build(&spec, &t, 1).size_needed();
        assert_eq!(need, 128 * MIB);
        let e = open_err(&srv.target, &opts(false, 1, need));
        assert!(e.starts_with(&srv.target.to_string()), "{e}");
        assert!(e.contains("64 MiB (67108864 bytes)"), "{e}");
        assert!(e.contains("128 MiB (134217728 bytes"), "{e}");
        // Sharing one region, the same VMs fit.
        spec.disk_layout = crate::workload::DiskLayout::Shared;
        let need = plan::build(&spec, &t, 1).size_needed();
        open_one(&srv.target, &opts(false, 1, need));
    }

    #[test]
    fn read_only_export_refuses_writes() {
        let srv = Nbdkit::start(false, &["-r", "memory", "64M"]);
        let e = open_err(&srv.target, &opts(true, 1, 0));
        assert!(e.contains("read-only"), "{e}");
        open_one(&srv.target, &opts(false, 1, 0));
    }

    #[test]
    fn unknown_export_is_named() {
        let args = [
            "--filter=exportname",
            "memory",
            "64M",
            "exportname=store",
            "exportname-strict=true",
        ];
        let srv = Nbdkit::start(false, &args);
        open_one(&srv.target, &opts(false, 1, 0));
        let Target::Nbd { addr, .. } = &srv.target else {
            unreachable!()
        };
        let other = Target::Nbd {
            addr: addr.clone(),
            export: "nope".into(),
            replies: NbdReplies::Simple,
            nconnect: 1,
        };
        let e = open_err(&other, &opts(false, 1, 0));
        assert!(
            e.ends_with(
                "/nbd.sock: the server has no export named \"nope\": check the export in the URL"
            ),
            "{e}"
        );
    }

    #[test]
    fn connection_refused_names_the_url() {
        let port = free_port();
        let t = Target::parse(&format!("nbd://127.0.0.1:{port}/store")).unwrap();
        let e = open_err(&t, &opts(false, 1, 0));
        assert_eq!(
            e,
            format!(
                "nbd://127.0.0.1:{port}/store: connection refused: is the server running? (storlab lab up starts one)"
            )
        );
        let dir = temp_dir();
        let t = Target::Nbd {
            addr: NbdAddr::Unix(dir.join("none.sock")),
            export: "store".into(),
            replies: NbdReplies::Simple,
            nconnect: 1,
        };
        let e = open_err(&t, &opts(false, 1, 0));
        assert!(e.starts_with(&format!("{t}: ")), "{e}");
        assert!(e.contains("is the server running?"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn server_death_mid_flight_fails_reap() {
        // Every read waits 2 s in the server, so all 16 are in flight at the kill.
        let mut srv = Nbdkit::start(true, &["--filter=delay", "memory", "64M", "rdelay=2"]);
        let b = open_one(&srv.target, &opts(false, 16, 0));
        let mut b = lane(b, 4096);
        for s in 0..16u32 {
            b.queue(s, 0, Dir::Read, s as u64 * 4096, 4096).unwrap();
        }
        b.commit().unwrap();
        let mut out = Vec::new();
        let none = Wait::at_least(0).or_after(Duration::from_millis(50));
        assert_eq!(b.reap(none, &mut out).unwrap(), 0);
        srv.kill();
        let t = Instant::now();
        let all = Wait::at_least(16).or_after(Duration::from_secs(30));
        let e = b.reap(all, &mut out).unwrap_err().to_string();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(e.starts_with(&srv.target.to_string()), "{e}");
        assert!(e.contains("connection lost"), "{e}");
        // Dropping closes the handle (retiring its commands) before the
        // lane frees the buffers.
        drop(b);
    }

    /// 4 KiB random reads at QD32 for 3 s against nbdkit's memory plugin, over
    /// a Unix socket and over TCP 127.0.0.1. Run with
    /// `cargo test --release --lib backends::nbd::tests::iops -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn iops_4k_random_read_qd32() {
        for tcp in [false, true] {
            let srv = Nbdkit::start(tcp, &["memory", "1G"]);
            let b = open_one(&srv.target, &opts(false, 32, 0));
            let mut b = lane(b, 4096);
            let mut rng = 0x9e37_79b9_7f4a_7c15u64;
            let mut out = Vec::with_capacity(32);
            let mut free: Vec<u32> = (0..32).collect();
            let mut n = 0u64;
            let t = Instant::now();
            let run_for = Duration::from_secs(3);
            while t.elapsed() < run_for {
                while let Some(s) = free.pop() {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    b.queue(s, 0, Dir::Read, (rng % (262_144)) * 4096, 4096)
                        .unwrap();
                }
                b.commit().unwrap();
                b.reap(Wait::at_least(1).or_after(Duration::from_secs(1)), &mut out)
                    .unwrap();
                for c in out.drain(..) {
                    assert_eq!(c.result, Ok(4096));
                    free.push(c.slot);
                    n += 1;
                }
            }
            let secs = t.elapsed().as_secs_f64();
            println!(
                "nbd {} QD32 4k randread: {:.0} IOPS ({n} I/Os in {secs:.2} s)",
                if tcp { "tcp 127.0.0.1" } else { "unix socket" },
                n as f64 / secs
            );
        }
    }
}
