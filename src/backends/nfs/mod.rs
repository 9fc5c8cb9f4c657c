//! The NFS backend: storlab's own NFSv3, NFSv4.0 and NFSv4.1 client over ONC RPC.
//!
//! # Why our own client
//!
//! Debian 12's libnfs 4.0.0 fails every NFSv4 write ("Failed to encode
//! COMPOUND4args") and most NFSv3 reads at MTU 9000, and libnfs 5 needs a newer
//! glibc than Debian 12 has. A benchmark needs only a handful of procedures —
//! find the file (MOUNT / LOOKUP, or PUTROOTFH + LOOKUP), GETATTR, CREATE,
//! READ, WRITE, COMMIT — so a small client in pure Rust is simpler to trust
//! and faster: one TCP connection per disk with every request in flight at
//! once, matched to its reply by XID, no library thread and no callback layer.
//!
//! # How it works
//!
//! * [`xdr`] encodes and decodes XDR; [`rpc`] frames calls (record marking),
//!   adds AUTH_SYS credentials (uid 0, gid 0), matches replies by XID and does
//!   the non-blocking socket I/O; [`v3`] and [`v4`] know the procedures,
//!   [`compound`] NFSv4's COMPOUND framing and the 4.1 slot table, [`v41`]
//!   the 4.1 client and session.
//! * Each queued request becomes one READ or WRITE RPC (or several, see
//!   below) encoded into the connection's send buffer; `commit` sends what the
//!   socket takes, `reap` sends the rest, reads replies without blocking and
//!   waits in poll(2) on every connection with the caller's timeout.
//! * WRITE data is not copied: the call header and the request's buffer go
//!   to the kernel in one gather write (`sendmsg`). READ data is placed
//!   straight into the request's buffer: the reply's header is parsed first,
//!   then the data is read from the socket into the buffer (what arrived in
//!   the same socket read as other replies is copied once from the receive
//!   buffer).
//! * **Transfer size.** Requests larger than the server's limit are split into
//!   several RPCs and completed when all parts are: the limit is FSINFO's
//!   rtmax / wtmax for v3, the maxread / maxwrite attributes for v4 (1 MiB when
//!   the server states none), in both cases capped at 1 MiB. A short READ (end
//!   of file) completes with the bytes it got.
//! * **Durability.** With `OpenOptions::sync` (dsync or sync) every WRITE asks
//!   for FILE_SYNC, so a completion means the server made data and metadata
//!   stable. Otherwise WRITEs are UNSTABLE, and the data written is committed
//!   (COMMIT of the whole file) when the backend is dropped; a change of the
//!   server's write verifier between the WRITEs and the COMMIT (a server
//!   restart that lost unstable data) is reported on stderr.
//! * **NFSv3** finds the MOUNT port through the server's portmapper (port 111,
//!   PMAPPROC_GETPORT for MOUNT v3 over TCP) unless the URL gives
//!   `?mountport=N`, mounts the export (MNT) and LOOKUPs the file's path;
//!   a missing file is created (CREATE UNCHECKED, mode 0644) on a run that
//!   writes.
//! * **NFSv4.0** needs no MOUNT: SETCLIENTID + SETCLIENTID_CONFIRM, PUTROOTFH
//!   and LOOKUP of each export component, then OPEN (with create on a run that
//!   writes; OPEN_CONFIRM when the server asks). READ and WRITE carry the open
//!   stateid, which renews the lease, so a busy run needs no RENEW. The file is
//!   CLOSEd on drop.
//! * **NFSv4.1** (`version=4.1`): EXCHANGE_ID (an owner unique per open,
//!   SP4_NONE), CREATE_SESSION whose fore channel asks for as many slots as
//!   the queue depth and requests and replies of [`MAX_TRANSFER`] plus
//!   headers (the server's grant is used: never more slots, rsize / wsize
//!   cut to its sizes), RECLAIM_COMPLETE, then the 4.0 steps with SEQUENCE
//!   first in every COMPOUND and no OPEN_CONFIRM. Each READ / WRITE RPC takes
//!   a free slot (its id + 1 for a new request; a failure at SEQUENCE leaves
//!   it) and carries the open stateid with seqid 0; RPCs beyond the free
//!   slots wait in the disk's queue. NFS4ERR_DELAY sends an RPC again after a
//!   growing wait, at most [`compound::DELAY_RETRIES`] times; a set-up call
//!   answered NFS4ERR_GRACE (a server that just started) is sent again every
//!   half second for up to [`compound::GRACE_WAIT`]. On drop: COMMIT,
//!   CLOSE, DESTROY_SESSION, DESTROY_CLIENTID.
//! * **Errors.** Set-up errors are one line naming the URL and what to do
//!   (connection refused, export not found, file missing on a read-only run,
//!   permission denied, file smaller than the run needs). An NFS error status
//!   on a READ or WRITE becomes `Err(errno)` in its completion (NFS3ERR_IO →
//!   EIO, NOSPC → ENOSPC, STALE → ESTALE, ...). A lost connection (the server
//!   died) makes `reap` / `commit` fail: the backend is broken.
//! * **nconnect.** With `?nconnect=N` a disk has N TCP connections to the
//!   server (set-up, COMMIT and CLOSE use the first); its READ and WRITE RPCs
//!   go round robin over them, one RPC per connection in turn, as the Linux
//!   client's mount option of that name. NFSv3 is stateless and an NFSv4.0
//!   stateid belongs to the client, not to a connection, so every connection
//!   may carry any request. In NFSv4.1 each further connection is bound to
//!   the session (BIND_CONN_TO_SESSION, fore channel) before it carries any.
//! * The client binds no privileged source port: servers that insist on one
//!   (the Linux kernel server's `secure` default) need `insecure` on the export.

pub mod compound;
pub mod meta;
pub mod rpc;
pub mod v3;
pub mod v4;
pub mod v41;
pub mod xdr;

#[cfg(test)]
mod tests41;

use crate::io::{
    Backend, BackendError, Completion, OpenOptions, Polled, QueueError, Request, Wait, reap_polled,
};
use crate::target::{NfsTarget, Target};
use crate::workload::{Dir, SyncMode};
use compound::{Seq, Session};
use rpc::{Conn, NFS_PROG, RpcError, SYNC_TAG};
use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

/// How long a set-up call (and a connection attempt) may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long drop waits for requests in flight, and for COMMIT and CLOSE.
const DROP_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest READ or WRITE RPC storlab sends.
pub const MAX_TRANSFER: u32 = 1 << 20;
/// WRITE stable_how: UNSTABLE (both versions).
const UNSTABLE: u32 = 0;
/// WRITE stable_how: FILE_SYNC (both versions).
const FILE_SYNC: u32 = 2;
/// The errno of a request whose reply could not be decoded.
const MALFORMED: i32 = libc::EPROTO;

/// The name of an NFS status ("NFS3ERR_NOENT", "NFS4ERR_STALE").
fn status_name(version: u8, status: u32) -> String {
    let name = match status {
        u32::MAX => return "malformed reply".into(),
        1 => "PERM",
        2 => "NOENT",
        5 => "IO",
        6 => "NXIO",
        13 => "ACCES",
        17 => "EXIST",
        18 => "XDEV",
        19 => "NODEV",
        20 => "NOTDIR",
        21 => "ISDIR",
        22 => "INVAL",
        27 => "FBIG",
        28 => "NOSPC",
        30 => "ROFS",
        31 => "MLINK",
        63 => "NAMETOOLONG",
        66 => "NOTEMPTY",
        69 => "DQUOT",
        70 => "STALE",
        71 => "REMOTE",
        10001 => "BADHANDLE",
        10002 => "NOT_SYNC",
        10004 => "NOTSUPP",
        10005 => "TOOSMALL",
        10006 => "SERVERFAULT",
        10007 => "BADTYPE",
        10008 if version == 3 => "JUKEBOX",
        10008 => "DELAY",
        10011 => "EXPIRED",
        10013 => "GRACE",
        10018 => "RESOURCE",
        10022 => "STALE_CLIENTID",
        10023 => "STALE_STATEID",
        10024 => "OLD_STATEID",
        10025 => "BAD_STATEID",
        10026 => "BAD_SEQID",
        10036 => "BADXDR",
        10038 => "OPENMODE",
        10021 => "MINOR_VERS_MISMATCH",
        10052 => "BADSESSION",
        10053 => "BADSLOT",
        10054 => "COMPLETE_ALREADY",
        10055 => "CONN_NOT_BOUND_TO_SESSION",
        10063 => "SEQ_MISORDERED",
        10068 => "TOO_MANY_OPS",
        10071 => "OP_NOT_IN_SESSION",
        10076 => "SEQ_FALSE_RETRY",
        10077 => "BAD_HIGH_SLOT",
        10078 => "DEADSESSION",
        n => return format!("NFS{version} status {n}"),
    };
    format!("NFS{version}ERR_{name}")
}

/// The errno a completion reports for an NFS status.
fn errno(status: u32) -> i32 {
    match status {
        1 => libc::EPERM,
        2 => libc::ENOENT,
        5 => libc::EIO,
        6 => libc::ENXIO,
        13 => libc::EACCES,
        17 => libc::EEXIST,
        18 => libc::EXDEV,
        19 => libc::ENODEV,
        20 => libc::ENOTDIR,
        21 => libc::EISDIR,
        22 => libc::EINVAL,
        27 => libc::EFBIG,
        28 => libc::ENOSPC,
        30 => libc::EROFS,
        31 => libc::EMLINK,
        63 => libc::ENAMETOOLONG,
        66 => libc::ENOTEMPTY,
        69 => libc::EDQUOT,
        70 | 10001 | 10023 => libc::ESTALE,
        71 => libc::EREMOTE,
        10004 => libc::EOPNOTSUPP,
        10006 => libc::EREMOTEIO,
        10008 | 10013 => libc::EAGAIN,
        10038 => libc::EBADF,
        u32::MAX => MALFORMED,
        _ => libc::EIO,
    }
}

/// The version-specific part of an open file.
enum Proto {
    V3(v3::File),
    V4(v4::File),
}

impl Disk {
    /// How this target's WRITEs ask to be stored, given the workload's
    /// `stable`: FILE_SYNC when the target says `?stable=file`.
    fn stable(&self, workload: u32) -> u32 {
        if self.file_sync { FILE_SYNC } else { workload }
    }
}

/// One target: its connections and open file.
struct Disk {
    url: String,
    /// The first does set-up and tear-down; RPCs go round robin over all.
    conns: Vec<Conn>,
    /// The connection the next RPC goes to.
    next: usize,
    proto: Proto,
    size: u64,
    rsize: u32,
    wsize: u32,
    /// UNSTABLE data written since open (COMMIT it on drop).
    unstable: bool,
    /// The write verifier of the first UNSTABLE write.
    verf: Option<[u8; 8]>,
    /// A later WRITE returned another verifier.
    verf_changed: bool,
    /// The NFSv4.1 session (None for v3 and v4.0).
    session: Option<Session>,
    /// The target asks for FILE_SYNC on every WRITE (`?stable=file`).
    file_sync: bool,
    /// NFSv4.1: the RPC parts waiting for a free session slot (or, after
    /// NFS4ERR_DELAY, for their time to be sent again).
    waiting: VecDeque<Part>,
    /// NFSv4.1: the part in flight on each session slot.
    sent: Vec<Option<Part>>,
    /// What the server says the file is ([`Backend::identity`]).
    identity: Option<String>,
}

/// One READ or WRITE RPC of a request (a request larger than the transfer
/// size is several).
#[derive(Clone, Copy, Debug)]
struct Part {
    /// The engine slot of its request.
    slot: u32,
    write: bool,
    offset: u64,
    len: u32,
    /// Its part of the request's buffer.
    buf: *mut u8,
    /// Times it was sent again after NFS4ERR_DELAY.
    tries: u32,
    /// Not to be sent before this (after NFS4ERR_DELAY).
    due: Option<Instant>,
}

// SAFETY: `buf` is a part of an engine request's buffer, valid until the
// request's completion is reaped; the backend is used by one thread at a time.
unsafe impl Send for Part {}

/// The RPC tag of a part: the engine slot in the low 32 bits, the session
/// slot + 1 (0 for none) in the high ones.
fn tag_of(slot: u32, seq: Option<&Seq>) -> u64 {
    slot as u64 | seq.map_or(0, |q| q.slot as u64 + 1) << 32
}

/// The (engine slot, session slot) of an RPC tag.
fn untag(tag: u64) -> (usize, Option<u32>) {
    let s = (tag >> 32) as u32;
    (tag as u32 as usize, s.checked_sub(1))
}

/// Per engine slot: the parts of a request still in flight.
#[derive(Clone, Copy, Default)]
struct Slot {
    active: bool,
    write: bool,
    parts: u32,
    bytes: u32,
    err: i32,
}

/// The NFS backend: `nconnect` connections per target, many RPCs in flight on each.
pub struct NfsBackend {
    disks: Vec<Disk>,
    slots: Vec<Slot>,
    /// Finished requests not yet returned by `reap`.
    done: Vec<Completion>,
    depth: usize,
    /// Requests queued and not yet returned by `reap` (including `done`).
    inflight: usize,
    stable: u32,
    broken: bool,
    pollfds: Vec<libc::pollfd>,
    /// What was wrong with the last reply that failed a request (a
    /// malformed READ or WRITE result, a call the server rejected).
    last_error: Option<String>,
}

fn connect_error(host: &str, port: u16, e: &io::Error) -> String {
    let text = crate::backends::file::errno_text(e);
    match e.kind() {
        io::ErrorKind::ConnectionRefused => format!(
            "cannot connect to {host}:{port}: connection refused (is the NFS server running \
             and listening on port {port}?)"
        ),
        io::ErrorKind::TimedOut => format!(
            "cannot connect to {host}:{port}: timed out after {} s (is the host reachable?)",
            SETUP_TIMEOUT.as_secs()
        ),
        _ => format!("cannot connect to {host}:{port}: {text}"),
    }
}

/// An `nfs://` target's parts, borrowed, with its URL for errors: what
/// opening it starts from, a file for [`NfsBackend`] or a directory for
/// [`meta::NfsOps`].
struct NfsUrl<'a> {
    url: String,
    nfs: &'a NfsTarget,
}

impl<'a> NfsUrl<'a> {
    /// `t`'s parts, if it is an `nfs://` target.
    fn of(t: &'a Target) -> Option<Self> {
        match t {
            Target::Nfs(nfs) => Some(NfsUrl {
                url: t.to_string(),
                nfs,
            }),
            _ => None,
        }
    }

    /// A new connection to the server; the error says what to check.
    fn connect(&self) -> Result<Conn, String> {
        let NfsTarget { host, port, .. } = self.nfs;
        Conn::connect(host, *port, SETUP_TIMEOUT).map_err(|e| connect_error(host, *port, &e))
    }

    /// NFSv3: the export's root file handle from MOUNT, at the URL's mount
    /// port or else the one the server's portmapper names.
    fn mount3(&self) -> Result<Vec<u8>, String> {
        let NfsTarget {
            host,
            mount_port,
            export,
            ..
        } = self.nfs;
        let mport = match mount_port {
            Some(p) => *p,
            None => v3::mount_port(host)?,
        };
        v3::mount(host, mport, export)
    }
}

fn open_disk(t: &Target, opts: &OpenOptions) -> Result<Disk, BackendError> {
    let Some(u) = NfsUrl::of(t) else {
        return Err(BackendError::new(t.to_string(), "not an nfs:// target"));
    };
    let err = |m: String| BackendError::new(&u.url, m);
    let n = u.nfs;
    let (host, port, export, path) = (&n.host, n.port, &n.export, &n.path);
    let mut conn = u.connect().map_err(err)?;
    let mut session = None;
    let (proto, size, rsize, wsize) = match (n.version, n.minor) {
        (3, _) => {
            let root = u.mount3().map_err(err)?;
            let f = v3::open(&mut conn, &root, export, path, opts.write).map_err(err)?;
            {
                let (size, r, w) = (f.size, f.rsize, f.wsize);
                (Proto::V3(f), size, r, w)
            }
        }
        (4, 0) => {
            let f = v4::open(&mut conn, export, path, opts.write, opts.write).map_err(err)?;
            {
                let (size, r, w) = (f.size, f.rsize, f.wsize);
                (Proto::V4(f), size, r, w)
            }
        }
        (4, 1) => {
            let (f, s) = open41(&mut conn, host, port, export, path, opts).map_err(err)?;
            let (size, r, w) = (f.size, f.rsize, f.wsize);
            session = Some(s);
            (Proto::V4(f), size, r, w)
        }
        (v, m) => {
            return Err(err(format!(
                "NFS version {v}.{m} is not supported (allowed: 3, 4, 4.0, 4.1)"
            )));
        }
    };
    if size < opts.size_needed {
        return Err(err(format!(
            "the file is {size} bytes but the run needs {} bytes (region offset + size): \
             make the file larger (prepare it) or run on a smaller region",
            opts.size_needed
        )));
    }
    let head = match (&proto, &session) {
        (Proto::V3(_), _) => v3::read_head,
        (Proto::V4(_), None) => v4::read_head,
        (Proto::V4(_), Some(_)) => v4::read_head41,
    };
    let identity = identity(&proto);
    let mut conns = vec![conn];
    for _ in 1..n.nconnect {
        let mut c = u.connect().map_err(err)?;
        c.set_read_head(head);
        if let Some(s) = &session {
            v41::bind(&mut c, s, SETUP_TIMEOUT).map_err(err)?;
        }
        conns.push(c);
    }
    Ok(Disk {
        url: u.url.clone(),
        conns,
        next: 0,
        proto,
        size,
        rsize: rsize.clamp(4096, MAX_TRANSFER),
        wsize: wsize.clamp(4096, MAX_TRANSFER),
        unstable: false,
        verf: None,
        verf_changed: false,
        sent: vec![None; session.as_ref().map_or(0, Session::slots)],
        session,
        file_sync: n.file_sync,
        waiting: VecDeque::new(),
        identity,
    })
}

/// The identity of an open file ([`Backend::identity`]): its fileid and its
/// file handle, which a server keeps for the file whatever the protocol
/// version: the same file over NFSv3, 4.0 and 4.1 is one store (RFC 1813
/// §2.3.3, RFC 8881 §4.2.1). Trailing zero bytes of the handle are dropped,
/// since a server may pad a handle to the version's alignment (nfs-ganesha
/// pads its NFSv3 handles to a multiple of 4 bytes).
fn identity(proto: &Proto) -> Option<String> {
    let (fh, fileid) = match proto {
        Proto::V3(f) => (&f.fh, f.fileid),
        Proto::V4(f) => (&f.fh, f.fileid?),
    };
    let end = fh.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let hex: String = fh[..end].iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("nfs fileid {fileid} handle {hex}"))
}

/// NFSv4.1: a client and a session whose slot table is the queue depth (or
/// fewer slots, if the server grants fewer), then the OPEN. The transfer
/// sizes are capped to what the session's largest request and reply allow.
/// When the OPEN fails, the session and client are destroyed.
fn open41(
    conn: &mut Conn,
    host: &str,
    port: u16,
    export: &str,
    path: &str,
    opts: &OpenOptions,
) -> Result<(v4::File, Session), String> {
    let server = format!("{host}:{port}");
    let want = v41::Channel::for_depth(opts.depth.max(1), MAX_TRANSFER);
    let (clientid, mut s) = v41::establish(conn, &server, &want, SETUP_TIMEOUT)?;
    conn.set_read_head(v4::read_head41);
    let opened = v4::open_in(
        conn,
        Some(&mut s),
        clientid,
        export,
        path,
        opts.write,
        opts.write,
    );
    let mut f = match opened {
        Ok(f) => f,
        Err(e) => {
            let _ = v41::destroy(conn, clientid, &s, SETUP_TIMEOUT);
            return Err(e);
        }
    };
    let fit = |max: u32| max.saturating_sub(v41::OVERHEAD) & !4095;
    let (r, w) = (fit(s.max_response), fit(s.max_request));
    if r < 4096 || w < 4096 {
        let _ = v4::close(conn, &f, Some(&mut s), SETUP_TIMEOUT);
        let _ = v41::destroy(conn, clientid, &s, SETUP_TIMEOUT);
        return Err(format!(
            "server {server} allows NFSv4.1 requests of {} bytes and replies of {} bytes; \
             storlab needs at least {} for 4 KiB transfers",
            s.max_request,
            s.max_response,
            4096 + v41::OVERHEAD
        ));
    }
    f.rsize = f.rsize.min(r);
    f.wsize = f.wsize.min(w);
    Ok((f, s))
}

/// Send `part` on the next connection of `disk` (after SEQUENCE on a free
/// session slot in NFSv4.1; with no slot free, it waits in `disk.waiting`).
///
/// # Safety
/// `p.buf` must be valid for `p.len` bytes (read for a WRITE, written for a
/// READ, used by no one else) until the part's reply has been delivered or
/// `disk`'s connections dropped, as `Conn::start` requires; a part
/// waiting in `disk.waiting` keeps that promise while it waits.
unsafe fn send(disk: &mut Disk, stable: u32, p: Part) {
    let Disk {
        conns,
        next,
        proto,
        session,
        waiting,
        sent,
        ..
    } = disk;
    let seq = match session {
        None => None,
        Some(s) => match s.take() {
            Some(q) => {
                sent[q.slot as usize] = Some(p);
                Some(q)
            }
            None => {
                waiting.push_back(p);
                return;
            }
        },
    };
    let seq = seq.as_ref();
    let (vers, read_proc, write_proc) = match proto {
        Proto::V3(_) => (v3::VERS, v3::READ, v3::WRITE),
        Proto::V4(_) => (v4::VERS, v4::COMPOUND, v4::COMPOUND),
    };
    let c = *next;
    *next = (c + 1) % conns.len();
    let conn = &mut conns[c];
    let tag = tag_of(p.slot, seq);
    let (off, n) = (p.offset, p.len);
    // SAFETY: the caller promises `p.buf` for `p.len` bytes until the reply.
    unsafe {
        if p.write {
            conn.start(
                NFS_PROG,
                vers,
                write_proc,
                tag,
                None,
                Some((p.buf as *const u8, n as usize)),
                |e| match proto {
                    Proto::V3(f) => v3::encode_write(e, f, off, n, stable),
                    Proto::V4(f) => v4::encode_write(e, f, seq, off, n, stable),
                },
            );
        } else {
            conn.start(
                NFS_PROG,
                vers,
                read_proc,
                tag,
                Some((p.buf, n)),
                None,
                |e| match proto {
                    Proto::V3(f) => v3::encode_read(e, f, off, n),
                    Proto::V4(f) => v4::encode_read(e, f, seq, off, n),
                },
            );
        }
    }
}

/// Send the parts waiting for a session slot (those due) while slots are free.
///
/// # Safety
/// Every waiting part's buffer must still be valid as [`send`] requires
/// (parts wait only while their request is in flight).
unsafe fn send_waiting(disk: &mut Disk, stable: u32) {
    let now = Instant::now();
    let mut i = 0;
    while i < disk.waiting.len() && disk.session.as_ref().is_some_and(|s| s.free_slots() > 0) {
        if disk.waiting[i].due.is_some_and(|d| d > now) {
            i += 1;
            continue;
        }
        if let Some(p) = disk.waiting.remove(i) {
            // SAFETY: as this function's caller promises for every waiting part.
            unsafe { send(disk, stable, Part { due: None, ..p }) };
        }
    }
}

fn fmt_bytes(n: u32) -> String {
    if n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n % 1024 == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

impl NfsBackend {
    /// Whether any disk holds UNSTABLE writes not yet committed (they are
    /// committed when the backend is dropped).
    pub fn has_uncommitted_writes(&self) -> bool {
        self.disks.iter().any(|d| d.unstable)
    }

    /// One connection per target; disk i of requests = targets[i]. Creates the
    /// file if `opts.write` and it is missing.
    pub fn open(targets: &[Target], opts: &OpenOptions) -> Result<NfsBackend, BackendError> {
        if targets.is_empty() {
            return Err(BackendError::new("nfs", "no targets to open"));
        }
        let disks = targets
            .iter()
            .map(|t| open_disk(t, opts))
            .collect::<Result<Vec<_>, _>>()?;
        let depth = opts.depth.max(1) as usize;
        let stable = match opts.sync {
            Some(SyncMode::Dsync) | Some(SyncMode::Sync) => FILE_SYNC,
            Some(SyncMode::None) | None => UNSTABLE,
        };
        Ok(NfsBackend {
            pollfds: Vec::with_capacity(disks.len()),
            disks,
            slots: vec![Slot::default(); depth],
            done: Vec::with_capacity(depth),
            depth,
            inflight: 0,
            stable,
            broken: false,
            last_error: None,
        })
    }

    /// The file's size (for prepare/verification later).
    pub fn size(&self, disk: usize) -> u64 {
        self.disks[disk].size
    }

    /// Mark broken and build the error for `disk`.
    fn fail(&mut self, disk: usize, what: &str, e: RpcError) -> BackendError {
        self.broken = true;
        let lost = self.inflight - self.done.len();
        let (what, hint) = match e {
            RpcError::Closed | RpcError::Io(_) => (what, " (did the server stop?)"),
            RpcError::Protocol(_) => ("the server broke the RPC protocol", ""),
            _ => (what, ""),
        };
        BackendError::new(
            &self.disks[disk].url,
            format!("{what}: {e}{hint}; {lost} requests in flight are lost"),
        )
    }

    /// Send and receive on every connection without blocking.
    fn pump(&mut self) -> Result<(), BackendError> {
        for i in 0..self.disks.len() {
            for j in 0..self.disks[i].conns.len() {
                if let Err((what, e)) = self.pump_conn(i, j) {
                    return Err(self.fail(i, what, e));
                }
            }
            if !self.disks[i].waiting.is_empty() {
                let stable = self.disks[i].stable(self.stable);
                // SAFETY: a part waits only while its request is in flight,
                // and its request's lease lasts until the completion is
                // reaped (see `queue`).
                unsafe { send_waiting(&mut self.disks[i], stable) };
                for j in 0..self.disks[i].conns.len() {
                    if let Err(e) = self.disks[i].conns[j].flush() {
                        return Err(self.fail(i, "sending to the server failed", e));
                    }
                }
            }
        }
        Ok(())
    }

    /// Send and receive on connection `j` of disk `i` without blocking.
    fn pump_conn(&mut self, i: usize, j: usize) -> Result<(), (&'static str, RpcError)> {
        let NfsBackend {
            disks,
            slots,
            done,
            last_error,
            ..
        } = self;
        let Disk {
            conns,
            proto,
            verf,
            verf_changed,
            session,
            sent,
            waiting,
            ..
        } = &mut disks[i];
        let conn = &mut conns[j];
        match conn.flush() {
            Err(e) => Err(("sending to the server failed", e)),
            Ok(_) => conn
                .receive(&mut |tag, r| {
                    if tag == SYNC_TAG {
                        return;
                    }
                    let (engine_slot, session_slot) = untag(tag);
                    let in_session = session_slot.is_some();
                    if let (Some(s), Some(q)) = (session.as_mut(), session_slot) {
                        let limits = r
                            .as_ref()
                            .ok()
                            .and_then(|b| compound::sequence_limits(b.body));
                        s.release(q, limits.is_some());
                        if let Some(l) = limits {
                            s.follow(l);
                        }
                    }
                    let part = session_slot
                        .and_then(|q| sent.get_mut(q as usize))
                        .and_then(Option::take);
                    let delayed = r.as_ref().is_ok_and(|b| {
                        compound::results(b.body).is_ok_and(|x| x.0 == compound::NFS4ERR_DELAY)
                    });
                    let slot = &mut slots[engine_slot];
                    let op = if slot.write { "WRITE" } else { "READ" };
                    // NFSv4.1: NFS4ERR_DELAY (at SEQUENCE or at the op) sends
                    // the part again later, a bounded number of times.
                    if let Some(p) = part
                        && delayed
                    {
                        if p.tries < compound::DELAY_RETRIES {
                            waiting.push_back(Part {
                                tries: p.tries + 1,
                                due: Some(Instant::now() + compound::delay_wait(p.tries)),
                                ..p
                            });
                            return;
                        }
                        *last_error = Some(format!(
                            "{op}: the server answered NFS4ERR_DELAY {} times in a row \
                             (it stayed busy)",
                            p.tries + 1
                        ));
                    }
                    // A reply that failed at SEQUENCE: its status.
                    let seq_failed = match &r {
                        Ok(b) if in_session && !compound::sequenced(b.body) => {
                            compound::results(b.body).ok().map(|x| x.0)
                        }
                        _ => None,
                    };
                    let res = match r {
                        Err(e) => {
                            *last_error = Some(format!("{op}: {e}"));
                            Err(libc::EIO)
                        }
                        Ok(b) if slot.write => {
                            let w = match proto {
                                Proto::V3(_) => v3::write_result(b.body),
                                Proto::V4(_) => v4::write_result(b.body, in_session),
                            };
                            w.map(|(n, v)| {
                                match verf {
                                    None => *verf = Some(v),
                                    Some(old) if *old != v => *verf_changed = true,
                                    _ => {}
                                }
                                n
                            })
                            .map_err(errno)
                        }
                        Ok(b) => match proto {
                            Proto::V3(_) => v3::read_result(b.body, b.data),
                            Proto::V4(_) => v4::read_result(b.body, b.data),
                        }
                        .map_err(errno),
                    };
                    if res == Err(MALFORMED) {
                        *last_error = Some(format!(
                            "malformed {op} reply from the server (its XDR ends early or \
                             holds an impossible value)"
                        ));
                    }
                    if let Some(st) = seq_failed
                        && !delayed
                    {
                        *last_error = Some(format!("{op}: {}", compound::sequence_error(st)));
                    }
                    match res {
                        Ok(n) => slot.bytes += n,
                        Err(e) if slot.err == 0 => slot.err = e,
                        Err(_) => {}
                    }
                    slot.parts -= 1;
                    if slot.parts == 0 {
                        slot.active = false;
                        done.push(Completion {
                            slot: engine_slot as u32,
                            result: if slot.err != 0 {
                                Err(slot.err)
                            } else {
                                Ok(slot.bytes)
                            },
                        });
                    }
                })
                .map_err(|e| ("connection lost", e)),
        }
    }

    /// Wait until a connection is readable (or writable when it has calls to send).
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), BackendError> {
        self.pollfds.clear();
        for c in self.disks.iter().flat_map(|d| &d.conns) {
            self.pollfds.push(libc::pollfd {
                fd: c.fd(),
                events: rpc::poll_events(c.wants_write()),
                revents: 0,
            });
        }
        rpc::poll(&mut self.pollfds, timeout).map_err(|e| {
            self.broken = true;
            BackendError::new(&self.disks[0].url, format!("poll failed: {e}"))
        })?;
        Ok(())
    }

    /// At drop: finish what is in flight, COMMIT unstable data, CLOSE (v4).
    fn shut_down(&mut self) {
        let deadline = Instant::now() + DROP_TIMEOUT;
        let mut scratch = Vec::new();
        while !self.broken && self.inflight > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                eprintln!(
                    "storlab: nfs: {} requests still in flight after {} s; not committing",
                    self.inflight,
                    DROP_TIMEOUT.as_secs()
                );
                return;
            }
            scratch.clear();
            let wait = Wait::at_least(self.inflight).or_after(left);
            if self.reap(wait, &mut scratch).is_err() {
                return;
            }
        }
        if self.broken {
            return;
        }
        for d in &mut self.disks {
            if d.unstable {
                let r = match &d.proto {
                    Proto::V3(f) => v3::commit(&mut d.conns[0], f, DROP_TIMEOUT),
                    Proto::V4(f) => {
                        v4::commit(&mut d.conns[0], f, d.session.as_mut(), DROP_TIMEOUT)
                    }
                };
                match r {
                    Err(e) => {
                        eprintln!("storlab: {}: COMMIT of unstable writes failed: {e}", d.url)
                    }
                    Ok(v) if d.verf_changed || d.verf.is_some_and(|w| w != v) => eprintln!(
                        "storlab: {}: the server's write verifier changed during the run \
                         (it restarted): unstable writes may have been lost",
                        d.url
                    ),
                    Ok(_) => {}
                }
            }
            if let Proto::V4(f) = &d.proto
                && let Err(e) = v4::close(&mut d.conns[0], f, d.session.as_mut(), DROP_TIMEOUT)
            {
                eprintln!("storlab: {}: CLOSE failed: {e}", d.url);
            }
            if let (Proto::V4(f), Some(s)) = (&d.proto, &d.session)
                && let Err(e) = v41::destroy(&mut d.conns[0], f.clientid, s, DROP_TIMEOUT)
            {
                eprintln!("storlab: {}: ending the NFSv4.1 session failed: {e}", d.url);
            }
        }
    }
}

impl Drop for NfsBackend {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl Polled for NfsBackend {
    fn collect(&mut self, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        self.pump()?;
        let n = self.done.len();
        out.append(&mut self.done);
        self.inflight -= n;
        Ok(n)
    }

    fn in_flight(&self) -> usize {
        self.inflight
    }

    /// poll(2) on every connection, waking early when a part sent again
    /// after NFS4ERR_DELAY is due.
    fn block(&mut self, limit: Option<Duration>) -> Result<bool, BackendError> {
        let due = self
            .disks
            .iter()
            .filter(|d| d.session.as_ref().is_some_and(|s| s.free_slots() > 0))
            .flat_map(|d| &d.waiting)
            .filter_map(|p| p.due)
            .min()
            .map(|d| d.saturating_duration_since(Instant::now()));
        let limit = match (limit, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.wait(limit)?;
        Ok(true)
    }
}

// SAFETY: a request's buffer is handed to the RPC connections in `queue` (a
// READ reply's data lands in it, a WRITE is sent from it) and its completion is
// made only once every part's reply has been delivered; a refused request
// never reaches a connection; dropping the backend drops the connections (our
// own code, which touches buffers only inside calls on them).
unsafe impl Backend for NfsBackend {
    fn name(&self) -> &'static str {
        "nfs"
    }

    fn identity(&self, disk: usize) -> Option<String> {
        self.disks.get(disk)?.identity.clone()
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn features(&self) -> String {
        let d = &self.disks[0];
        let v = match (&d.proto, &d.session) {
            (Proto::V3(_), _) => "3".to_string(),
            (Proto::V4(_), None) => "4".to_string(),
            (Proto::V4(_), Some(s)) => format!("4.1 (session of {} slots)", s.slots()),
        };
        let writes = if d.file_sync {
            "FILE_SYNC writes (the target's stable=file)"
        } else if self.stable == FILE_SYNC {
            "FILE_SYNC writes"
        } else {
            "UNSTABLE writes, COMMIT at close"
        };
        let conns = match d.conns.len() {
            1 => String::new(),
            n => format!(", nconnect {n}"),
        };
        format!(
            "storlab NFSv{v} client over TCP{conns}, rsize {}, wsize {}, {writes}",
            fmt_bytes(d.rsize),
            fmt_bytes(d.wsize)
        )
    }

    fn queue(&mut self, req: Request) -> Result<(), QueueError> {
        if self.broken {
            return Err(QueueError::Fatal(BackendError::new(
                &self.disks[0].url,
                "the connection was lost earlier",
            )));
        }
        if self.inflight >= self.depth {
            return Err(QueueError::Busy);
        }
        let ndisks = self.disks.len();
        let Some(disk) = self.disks.get_mut(req.disk as usize) else {
            return Err(QueueError::Fatal(BackendError::new(
                "nfs",
                format!("request for disk {} of {ndisks}", req.disk),
            )));
        };
        let s = req.slot as usize;
        if s >= self.slots.len() {
            self.slots.resize(s + 1, Slot::default());
        }
        debug_assert!(!self.slots[s].active, "slot {s} queued twice");
        self.inflight += 1;
        if req.is_empty() {
            self.done.push(Completion {
                slot: req.slot,
                result: Ok(0),
            });
            return Ok(());
        }
        let write = req.dir == Dir::Write;
        let max = if write { disk.wsize } else { disk.rsize };
        let parts = req.len().div_ceil(max);
        self.slots[s] = Slot {
            active: true,
            write,
            parts,
            bytes: 0,
            err: 0,
        };
        let stable = disk.stable(self.stable);
        disk.unstable |= write && stable == UNSTABLE;
        let len = req.len();
        for p in 0..parts {
            let at = p * max;
            let part = Part {
                slot: req.slot,
                write,
                offset: req.offset + at as u64,
                len: max.min(len - at),
                buf: req.buf.as_mut_ptr().wrapping_add(at as usize),
                tries: 0,
                due: None,
            };
            // SAFETY: the part is bytes at..at + len of the request's lease,
            // which lasts until the request's completion is reaped (Lane); the
            // completion is made only once every part's reply was delivered
            // (`pump`), and dropping the backend closes the connections
            // before the lane frees the pool.
            unsafe { send(disk, stable, part) };
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        for i in 0..self.disks.len() {
            for j in 0..self.disks[i].conns.len() {
                if let Err(e) = self.disks[i].conns[j].flush() {
                    return Err(self.fail(i, "sending to the server failed", e));
                }
            }
        }
        Ok(())
    }

    /// What was wrong with the last failed reply, and the replies that matched
    /// no call (a server answering with wrong XIDs leaves its calls to time out).
    fn error_detail(&self) -> Option<String> {
        let (stray, first) = self
            .disks
            .iter()
            .flat_map(|d| &d.conns)
            .map(|c| c.stray())
            .fold((0, 0), |(n, x), (m, y)| (n + m, if n == 0 { y } else { x }));
        let stray = (stray > 0).then(|| {
            format!(
                "{stray} replies from the server matched no call in flight (wrong XID; \
                 the first was XID {first:#010x})"
            )
        });
        match (self.last_error.clone(), stray) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    /// Drop then closes the sockets at once: no waiting for replies, COMMIT or CLOSE.
    fn abandon(&mut self) {
        self.broken = true;
    }

    /// Replies are read without blocking; between reads, poll(2) waits on every
    /// connection for at most what is left of `wait.timeout` ([`reap_polled`]).
    fn reap(&mut self, wait: Wait, out: &mut Vec<Completion>) -> Result<usize, BackendError> {
        if self.broken {
            return Err(BackendError::new(
                &self.disks[0].url,
                "the connection was lost earlier",
            ));
        }
        reap_polled(self, wait, out)
    }
}
