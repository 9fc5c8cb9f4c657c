//! The NFS backend: storlab's own NFSv3 and NFSv4.0 client over ONC RPC.
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
//!   the non-blocking socket I/O; [`v3`] and [`v4`] know the procedures.
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
//! * **Errors.** Set-up errors are one line naming the URL and what to do
//!   (connection refused, export not found, file missing on a read-only run,
//!   permission denied, file smaller than the run needs). An NFS error status
//!   on a READ or WRITE becomes `Err(errno)` in its completion (NFS3ERR_IO →
//!   EIO, NOSPC → ENOSPC, STALE → ESTALE, ...). A lost connection (the server
//!   died) makes `reap` / `commit` fail: the backend is broken.
//! * The client binds no privileged source port: servers that insist on one
//!   (the Linux kernel server's `secure` default) need `insecure` on the export.

pub mod rpc;
pub mod v3;
pub mod v4;
pub mod xdr;

use crate::backends::target::Target;
use crate::engine::{Backend, BackendError, Completion, OpenOptions, QueueError, Request};
use crate::workload::{Dir, SyncMode};
use rpc::{Conn, NFS_PROG, RpcError, SYNC_TAG};
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
        10038 => "OPENMODE",
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
        _ => libc::EIO,
    }
}

/// The version-specific part of an open file.
enum Proto {
    V3(v3::File),
    V4(v4::File),
}

/// One target: its connection and open file.
struct Disk {
    url: String,
    conn: Conn,
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

/// The NFS backend: one connection per target, many RPCs in flight on each.
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

fn open_disk(t: &Target, opts: &OpenOptions) -> Result<Disk, BackendError> {
    let url = t.to_string();
    let Target::Nfs {
        host,
        port,
        mount_port,
        export,
        path,
        version,
    } = t
    else {
        return Err(BackendError::new(url, "not an nfs:// target"));
    };
    let err = |m: String| BackendError::new(&url, m);
    let mut conn = Conn::connect(host, *port, SETUP_TIMEOUT)
        .map_err(|e| err(connect_error(host, *port, &e)))?;
    let (proto, size, rsize, wsize) = match version {
        3 => {
            let mport = match mount_port {
                Some(p) => *p,
                None => v3::mount_port(host).map_err(err)?,
            };
            let root = v3::mount(host, mport, export).map_err(err)?;
            let f = v3::open(&mut conn, &root, export, path, opts.write).map_err(err)?;
            {
                let (size, r, w) = (f.size, f.rsize, f.wsize);
                (Proto::V3(f), size, r, w)
            }
        }
        4 => {
            let f = v4::open(&mut conn, export, path, opts.write, opts.write).map_err(err)?;
            {
                let (size, r, w) = (f.size, f.rsize, f.wsize);
                (Proto::V4(f), size, r, w)
            }
        }
        v => {
            return Err(err(format!(
                "NFS version {v} is not supported (allowed: 3, 4)"
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
    Ok(Disk {
        url,
        conn,
        proto,
        size,
        rsize: rsize.clamp(4096, MAX_TRANSFER),
        wsize: wsize.clamp(4096, MAX_TRANSFER),
        unstable: false,
        verf: None,
        verf_changed: false,
    })
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
        let hint = match e {
            RpcError::Closed | RpcError::Io(_) => " (did the server stop?)",
            _ => "",
        };
        BackendError::new(
            &self.disks[disk].url,
            format!("{what}: {e}{hint}; {lost} requests in flight are lost"),
        )
    }

    /// Send and receive on every connection without blocking.
    fn pump(&mut self) -> Result<(), BackendError> {
        for i in 0..self.disks.len() {
            let r = {
                let NfsBackend {
                    disks, slots, done, ..
                } = self;
                let disk = &mut disks[i];
                match disk.conn.flush() {
                    Err(e) => Err(("sending to the server failed", e)),
                    Ok(_) => {
                        let Disk {
                            conn,
                            proto,
                            verf,
                            verf_changed,
                            ..
                        } = disk;
                        conn.receive(&mut |tag, r| {
                            if tag == SYNC_TAG {
                                return;
                            }
                            let slot = &mut slots[tag as usize];
                            let res = match r {
                                Err(_) => Err(libc::EIO),
                                Ok(b) if slot.write => {
                                    let w = match proto {
                                        Proto::V3(_) => v3::write_result(b.body),
                                        Proto::V4(_) => v4::write_result(b.body),
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
                            match res {
                                Ok(n) => slot.bytes += n,
                                Err(e) if slot.err == 0 => slot.err = e,
                                Err(_) => {}
                            }
                            slot.parts -= 1;
                            if slot.parts == 0 {
                                slot.active = false;
                                done.push(Completion {
                                    slot: tag as u32,
                                    result: if slot.err != 0 {
                                        Err(slot.err)
                                    } else {
                                        Ok(slot.bytes)
                                    },
                                });
                            }
                        })
                        .map_err(|e| ("connection lost", e))
                    }
                }
            };
            if let Err((what, e)) = r {
                return Err(self.fail(i, what, e));
            }
        }
        Ok(())
    }

    /// Wait until a connection is readable (or writable when it has calls to send).
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), BackendError> {
        self.pollfds.clear();
        for d in &self.disks {
            self.pollfds.push(libc::pollfd {
                fd: d.conn.fd(),
                events: rpc::poll_events(d.conn.wants_write()),
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
            if self.reap(self.inflight, Some(left), &mut scratch).is_err() {
                return;
            }
        }
        if self.broken {
            return;
        }
        for d in &mut self.disks {
            if d.unstable {
                let r = match &d.proto {
                    Proto::V3(f) => v3::commit(&mut d.conn, f, DROP_TIMEOUT),
                    Proto::V4(f) => v4::commit(&mut d.conn, f, DROP_TIMEOUT),
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
                && let Err(e) = v4::close(&mut d.conn, f, DROP_TIMEOUT)
            {
                eprintln!("storlab: {}: CLOSE failed: {e}", d.url);
            }
        }
    }
}

impl Drop for NfsBackend {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl Backend for NfsBackend {
    fn name(&self) -> &'static str {
        "nfs"
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn features(&self) -> String {
        let d = &self.disks[0];
        let v = match d.proto {
            Proto::V3(_) => 3,
            Proto::V4(_) => 4,
        };
        let writes = if self.stable == FILE_SYNC {
            "FILE_SYNC writes"
        } else {
            "UNSTABLE writes, COMMIT at close"
        };
        format!(
            "storlab NFSv{v} client over TCP, rsize {}, wsize {}, {writes}",
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
        if req.len == 0 {
            self.done.push(Completion {
                slot: req.slot,
                result: Ok(0),
            });
            return Ok(());
        }
        let write = req.dir == Dir::Write;
        let max = if write { disk.wsize } else { disk.rsize };
        let parts = req.len.div_ceil(max);
        self.slots[s] = Slot {
            active: true,
            write,
            parts,
            bytes: 0,
            err: 0,
        };
        let Disk {
            conn,
            proto,
            unstable,
            ..
        } = disk;
        let (vers, read_proc, write_proc) = match proto {
            Proto::V3(_) => (v3::VERS, v3::READ, v3::WRITE),
            Proto::V4(_) => (v4::VERS, v4::COMPOUND, v4::COMPOUND),
        };
        let stable = self.stable;
        for p in 0..parts {
            let at = p * max;
            let n = max.min(req.len - at);
            let off = req.offset + at as u64;
            let ptr = req.buf.wrapping_add(at as usize);
            if write {
                *unstable |= stable == UNSTABLE;
                conn.start(
                    NFS_PROG,
                    vers,
                    write_proc,
                    req.slot as u64,
                    None,
                    Some((ptr as *const u8, n as usize)),
                    |e| match proto {
                        Proto::V3(f) => v3::encode_write(e, f, off, n, stable),
                        Proto::V4(f) => v4::encode_write(e, f, off, n, stable),
                    },
                );
            } else {
                conn.start(
                    NFS_PROG,
                    vers,
                    read_proc,
                    req.slot as u64,
                    Some((ptr, n)),
                    None,
                    |e| match proto {
                        Proto::V3(f) => v3::encode_read(e, f, off, n),
                        Proto::V4(f) => v4::encode_read(e, f, off, n),
                    },
                );
            }
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        for i in 0..self.disks.len() {
            if let Err(e) = self.disks[i].conn.flush() {
                return Err(self.fail(i, "sending to the server failed", e));
            }
        }
        Ok(())
    }

    /// Drop then closes the sockets at once: no waiting for replies, COMMIT or CLOSE.
    fn abandon(&mut self) {
        self.broken = true;
    }

    /// Replies are read without blocking; between reads, poll(2) waits on every
    /// connection for at most what is left of `timeout`.
    fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<usize, BackendError> {
        if self.broken {
            return Err(BackendError::new(
                &self.disks[0].url,
                "the connection was lost earlier",
            ));
        }
        let want = min.min(self.inflight);
        let deadline = match timeout {
            Some(t) if !t.is_zero() => Some(Instant::now() + t),
            _ => None,
        };
        let mut got = 0;
        loop {
            self.pump()?;
            let n = self.done.len();
            out.append(&mut self.done);
            self.inflight -= n;
            got += n;
            if got >= want || self.inflight == 0 {
                return Ok(got);
            }
            let left = match (timeout, deadline) {
                (None, _) => None,
                (Some(_), None) => return Ok(got),
                (Some(_), Some(d)) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(got);
                    }
                    Some(left)
                }
            };
            self.wait(left)?;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Against a real nfs-ganesha (VFS FSAL) that each test starts and stops by
    //! PID. NFSv4 runs on 127.0.0.1 in the root namespace (v4 needs no
    //! rpcbind). ganesha serves NFSv3 only when it can register with rpcbind,
    //! so the v3 test builds a storage host as `storlab lab up` does (a network
    //! namespace with its own rpcbind, [`crate::lab`]) and removes it after.
    use super::*;
    use crate::engine::BufferPool;
    use crate::lab::netns::{self, Netns};
    use crate::lab::process::{self, Proc};
    use crate::lab::tools::{self, Tools};
    use crate::lab::{ganesha, ready, rpcbind};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A running ganesha and what it exports.
    struct Server {
        host: String,
        port: u16,
        export: String,
        /// The exported directory (the backing files).
        dir: PathBuf,
        base: PathBuf,
        ganesha: Option<Proc>,
        rpcbind: Option<Proc>,
        netns: Option<(PathBuf, Netns)>,
    }

    impl Server {
        fn target(&self, file: &str, version: u8) -> Target {
            Target::Nfs {
                host: self.host.clone(),
                port: self.port,
                mount_port: None,
                export: self.export.clone(),
                path: file.into(),
                version,
            }
        }

        /// Kill ganesha (SIGKILL) now.
        fn kill(&mut self) {
            if let Some(g) = self.ganesha.take() {
                assert!(g.kill(), "ganesha pid {} did not die", g.pid);
            }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            if let Some(g) = self.ganesha.take() {
                g.stop(Duration::from_secs(10));
            }
            if let Some(r) = self.rpcbind.take() {
                r.stop(Duration::from_secs(5));
            }
            if let Some((ip, ns)) = self.netns.take()
                && let Err(e) = netns::destroy(&ip, &ns)
            {
                eprintln!("cannot remove namespace {}: {e}", ns.name);
            }
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    fn need_ganesha() -> PathBuf {
        let fsal = Path::new("/usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so");
        match tools::which("ganesha.nfsd") {
            Some(p) if fsal.exists() || !cfg!(target_arch = "x86_64") => p,
            _ => panic!(
                "nfs-ganesha (ganesha.nfsd) and nfs-ganesha-vfs are needed for the NFS tests: \
                 run ./setup.sh"
            ),
        }
    }

    fn temp_base(under: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = Path::new(under).join(format!("storlab-nfs-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("export")).unwrap();
        base
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    /// Ready when an RPC NULL call on NFS `vers` is answered.
    fn null_probe(host: &str, port: u16, vers: u32) -> Result<(), String> {
        let mut c = Conn::connect(host, port, Duration::from_secs(1)).map_err(|e| e.to_string())?;
        c.call(NFS_PROG, vers, 0, Duration::from_secs(2), |_| {})
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// ganesha serving NFSv4 only on 127.0.0.1 in the root namespace, exporting
    /// a fresh directory under `under` as /export.
    fn start_v4(under: &str) -> Server {
        let bin = need_ganesha();
        let base = temp_base(under);
        let (port, mport) = (free_port(), free_port());
        let conf = base.join("ganesha.conf");
        std::fs::write(
            &conf,
            format!(
                r#"NFS_CORE_PARAM {{
    NFS_Port = {port}; MNT_Port = {mport}; Protocols = 4; Bind_Addr = 127.0.0.1;
    Enable_NLM = false; Enable_RQUOTA = false;
}}
NFSV4 {{ Graceless = true; RecoveryBackend = fs; RecoveryRoot = "{b}/recovery"; }}
EXPORT {{
    Export_Id = 1; Path = "{b}/export"; Pseudo = "/export"; Access_Type = RW;
    Squash = No_Root_Squash; Protocols = 4; Transports = TCP; SecType = sys;
    FSAL {{ Name = VFS; }}
}}
"#,
                b = base.display()
            ),
        )
        .unwrap();
        let s = |p: &str| base.join(p).display().to_string();
        let args = [
            "-F".to_string(),
            "-f".into(),
            conf.display().to_string(),
            "-L".into(),
            s("ganesha.log"),
            "-p".into(),
            s("ganesha.pid"),
            "-N".into(),
            "NIV_EVENT".into(),
        ];
        let proc = process::spawn(&bin, &args, &base.join("ganesha.out")).unwrap();
        let server = Server {
            host: "127.0.0.1".into(),
            port,
            export: "/export".into(),
            dir: base.join("export"),
            base: base.clone(),
            ganesha: Some(proc.clone()),
            rpcbind: None,
            netns: None,
        };
        if let Err(e) = ready::wait("ganesha", &proc, || null_probe("127.0.0.1", port, 4)) {
            panic!("{e}\n{}", process::tail(&base.join("ganesha.log"), 20));
        }
        server
    }

    /// The lab's storage host: a namespace, rpcbind, ganesha serving v3 and v4
    /// of a fresh directory as [`ganesha::EXPORT`].
    fn start_lab(under: &str) -> Server {
        need_ganesha();
        let tools = Tools::find().unwrap_or_else(|e| panic!("{e}: run ./setup.sh"));
        let base = temp_base(under);
        let ns = netns::create(&tools.ip).unwrap();
        let mut server = Server {
            host: ns.ns_addr.to_string(),
            port: 2049,
            export: ganesha::EXPORT.into(),
            dir: base.join("export"),
            base: base.clone(),
            ganesha: None,
            rpcbind: None,
            netns: Some((tools.ip.clone(), ns.clone())),
        };
        let anchor = rpcbind::start(&tools, &ns, &base).unwrap();
        server.rpcbind = Some(anchor.clone());
        rpcbind::wait_ready(&tools, &ns, &anchor).unwrap();
        let g = ganesha::start(
            &tools,
            &anchor,
            crate::lab::NetMode::Netns,
            &server.dir,
            2049,
            20048,
            &base,
        )
        .unwrap();
        server.ganesha = Some(g.clone());
        let host = server.host.clone();
        if let Err(e) = ready::wait("ganesha", &g, || {
            null_probe(&host, 2049, 3)?;
            v3::mount_port(&host).map(|_| ())
        }) {
            panic!("{e}");
        }
        server
    }

    fn opts(write: bool, depth: u32) -> OpenOptions {
        OpenOptions {
            direct: false,
            sync: None,
            write,
            depth,
            size_needed: 0,
        }
    }

    /// The test pattern's byte at file offset `o`.
    fn pattern(o: u64) -> u8 {
        (o.wrapping_mul(2_654_435_761) >> 11) as u8 ^ (o >> 12) as u8
    }

    /// Run `reqs` (dir, offset, len) at queue depth `qd` with buffers from
    /// `pool` (slot i for in-flight request i), filling writes with the pattern
    /// and checking reads against it. Returns the completions in request order.
    fn run(b: &mut NfsBackend, pool: &mut BufferPool, reqs: &[(Dir, u64, u32)], qd: usize) {
        let mut next = 0;
        let mut free: Vec<u32> = (0..qd as u32).rev().collect();
        let mut owner = vec![usize::MAX; qd];
        let mut done = 0;
        let mut out = Vec::new();
        while done < reqs.len() {
            while next < reqs.len() && !free.is_empty() {
                let slot = free.pop().unwrap();
                let (dir, offset, len) = reqs[next];
                let buf = pool.slice_mut(slot as usize);
                for (i, byte) in buf[..len as usize].iter_mut().enumerate() {
                    *byte = if dir == Dir::Write {
                        pattern(offset + i as u64)
                    } else {
                        0xEE
                    };
                }
                let r = Request {
                    slot,
                    disk: 0,
                    dir,
                    offset,
                    len,
                    buf: pool.ptr(slot as usize),
                };
                b.queue(r).unwrap();
                owner[slot as usize] = next;
                next += 1;
            }
            b.commit().unwrap();
            out.clear();
            b.reap(1, Some(Duration::from_secs(30)), &mut out).unwrap();
            assert!(!out.is_empty(), "no completion in 30 s");
            for c in &out {
                let (dir, offset, len) = reqs[owner[c.slot as usize]];
                assert_eq!(c.result, Ok(len), "{dir:?} at {offset} len {len}");
                if dir == Dir::Read {
                    let buf = pool.slice(c.slot as usize);
                    for (i, &byte) in buf[..len as usize].iter().enumerate() {
                        let o = offset + i as u64;
                        assert_eq!(byte, pattern(o), "byte at {o} read back");
                    }
                }
                free.push(c.slot);
                done += 1;
            }
        }
    }

    /// Check the backing file on the server's disk holds the pattern in `range`.
    fn check_backing(path: &Path, range: std::ops::Range<u64>) {
        let data = std::fs::read(path).unwrap();
        assert!(
            data.len() as u64 >= range.end,
            "{} too short",
            path.display()
        );
        for o in range {
            assert_eq!(data[o as usize], pattern(o), "backing byte at {o}");
        }
    }

    /// A deterministic shuffle of 0..n.
    fn shuffled(n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..v.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
        v
    }

    /// Everything the NFS tests check, against `s` with NFS `version`.
    fn scenario(s: &mut Server, version: u8) {
        const MIB: u64 = 1 << 20;
        let file = "data.img";
        let t = s.target(file, version);
        let url = t.to_string();
        let backing = s.dir.join(file);
        let mut pool = BufferPool::new(16, 3 * MIB as usize);

        // A read-only run does not create a missing file.
        let e = NfsBackend::open(std::slice::from_ref(&t), &opts(false, 16))
            .err()
            .unwrap();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&url) && msg.contains("does not exist"),
            "{msg}"
        );

        // Write 4 MiB of 4 KiB blocks in random order at QD 16 (UNSTABLE, COMMIT at drop).
        let mut b = NfsBackend::open(std::slice::from_ref(&t), &opts(true, 16)).unwrap();
        assert_eq!(b.name(), "nfs");
        assert_eq!(b.size(0), 0);
        assert!(
            b.features().contains(&format!("NFSv{version}")),
            "{}",
            b.features()
        );
        println!("{}", b.features());
        let writes: Vec<_> = shuffled(1024)
            .into_iter()
            .map(|i| (Dir::Write, i * 4096, 4096))
            .collect();
        run(&mut b, &mut pool, &writes, 16);
        // One 3 MiB write: split into RPCs of at most 1 MiB.
        run(
            &mut b,
            &mut pool,
            &[(Dir::Write, 4 * MIB, 3 * MIB as u32)],
            1,
        );
        drop(b);
        check_backing(&backing, 0..7 * MIB);

        // Read it back at QD 16 (16 KiB reads, then one 3 MiB read).
        let mut o = opts(false, 16);
        o.size_needed = 7 * MIB;
        let mut b = NfsBackend::open(std::slice::from_ref(&t), &o).unwrap();
        assert_eq!(b.size(0), 7 * MIB);
        let reads: Vec<_> = shuffled(256)
            .into_iter()
            .map(|i| (Dir::Read, i * 16384, 16384))
            .collect();
        run(&mut b, &mut pool, &reads, 16);
        run(
            &mut b,
            &mut pool,
            &[(Dir::Read, 4 * MIB, 3 * MIB as u32)],
            1,
        );
        // Reading past the end is short: 4 KiB of 8 KiB.
        let r = Request {
            slot: 0,
            disk: 0,
            dir: Dir::Read,
            offset: 7 * MIB - 4096,
            len: 8192,
            buf: pool.ptr(0),
        };
        b.queue(r).unwrap();
        b.commit().unwrap();
        let mut out = Vec::new();
        b.reap(1, None, &mut out).unwrap();
        assert_eq!(out[0].result, Ok(4096));
        drop(b);

        // FILE_SYNC writes: complete only when stable; visible on the backing
        // file before the backend is dropped.
        let mut o = opts(true, 16);
        o.sync = Some(SyncMode::Dsync);
        let mut b = NfsBackend::open(std::slice::from_ref(&t), &o).unwrap();
        assert!(b.features().contains("FILE_SYNC"), "{}", b.features());
        std::fs::write(&backing, vec![0u8; 7 * MIB as usize]).unwrap();
        let writes: Vec<_> = (0..64).map(|i| (Dir::Write, i * 8192, 8192)).collect();
        run(&mut b, &mut pool, &writes, 16);
        check_backing(&backing, 0..512 * 1024);
        assert!(!b.disks[0].unstable);
        drop(b);

        // The file is smaller than the run needs: both sizes named.
        let mut o = opts(false, 4);
        o.size_needed = 8 * MIB;
        let msg = NfsBackend::open(std::slice::from_ref(&t), &o)
            .err()
            .unwrap()
            .to_string();
        assert!(
            msg.starts_with(&url)
                && msg.contains(&(7 * MIB).to_string())
                && msg.contains(&(8 * MIB).to_string()),
            "{msg}"
        );

        // A wrong export names the URL and the export.
        let Target::Nfs { export, .. } = &t else {
            unreachable!()
        };
        let mut wrong = t.clone();
        if let Target::Nfs { export, .. } = &mut wrong {
            *export = "/nosuchexport".into();
        }
        let msg = NfsBackend::open(std::slice::from_ref(&wrong), &opts(false, 4))
            .err()
            .unwrap()
            .to_string();
        assert!(
            msg.starts_with(&wrong.to_string()) && msg.contains("export /nosuchexport not found"),
            "{msg}"
        );
        assert_ne!(export, "/nosuchexport");

        // Nothing listens: connection refused, naming the URL.
        let mut refused = t.clone();
        if let Target::Nfs { port, .. } = &mut refused {
            *port = free_port();
        }
        let msg = NfsBackend::open(std::slice::from_ref(&refused), &opts(false, 4))
            .err()
            .unwrap()
            .to_string();
        assert!(
            msg.starts_with(&refused.to_string()) && msg.contains("connection refused"),
            "{msg}"
        );

        // The server dies mid-run: reap fails (the backend is broken).
        let mut b = NfsBackend::open(std::slice::from_ref(&t), &opts(false, 16)).unwrap();
        s.kill();
        for slot in 0..16u32 {
            let r = Request {
                slot,
                disk: 0,
                dir: Dir::Read,
                offset: slot as u64 * 4096,
                len: 4096,
                buf: pool.ptr(slot as usize),
            };
            b.queue(r).unwrap();
        }
        let mut out = Vec::new();
        let err = match b.commit() {
            Err(e) => e,
            Ok(()) => b
                .reap(16, Some(Duration::from_secs(30)), &mut out)
                .err()
                .unwrap(),
        };
        let msg = err.to_string();
        assert!(msg.starts_with(&url), "{msg}");
        assert!(out.is_empty());
        drop(b);
    }

    /// 4 KiB random reads at QD 32 for `secs` seconds: IOPS.
    fn randread_iops(t: &Target, size: u64, secs: u64) -> f64 {
        let mut o = opts(false, 32);
        o.size_needed = size;
        let mut b = NfsBackend::open(std::slice::from_ref(t), &o).unwrap();
        let pool = BufferPool::new(32, 4096);
        let blocks = size / 4096;
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |slot: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Request {
                slot,
                disk: 0,
                dir: Dir::Read,
                offset: (x % blocks) * 4096,
                len: 4096,
                buf: pool.ptr(slot as usize),
            }
        };
        for slot in 0..32 {
            b.queue(next(slot)).unwrap();
        }
        b.commit().unwrap();
        let mut out = Vec::with_capacity(32);
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let mut ios = 0u64;
        while Instant::now() < end {
            out.clear();
            b.reap(1, Some(Duration::from_secs(10)), &mut out).unwrap();
            for c in &out {
                assert_eq!(c.result, Ok(4096));
                b.queue(next(c.slot)).unwrap();
            }
            ios += out.len() as u64;
            b.commit().unwrap();
        }
        let iops = ios as f64 / start.elapsed().as_secs_f64();
        out.clear();
        while b.reap(32, Some(Duration::from_secs(10)), &mut out).unwrap() > 0 {}
        iops
    }

    fn fill(path: &Path, size: u64) {
        let chunk: Vec<u8> = (0..1u64 << 20).map(pattern).collect();
        let mut data = Vec::with_capacity(size as usize);
        while (data.len() as u64) < size {
            data.extend_from_slice(&chunk);
        }
        std::fs::write(path, &data).unwrap();
    }

    /// Measure: `cargo test --release --lib nfs::tests::bench -- --ignored --nocapture`.
    /// The export lives in /dev/shm, so the server's storage costs nothing.
    #[test]
    #[ignore = "a measurement (about a minute), not a check"]
    fn bench_4k_randread_qd32() {
        const SIZE: u64 = 256 << 20;
        let secs = 10;
        let s4 = start_v4("/dev/shm");
        fill(&s4.dir.join("bench.img"), SIZE);
        let v4_lo = randread_iops(&s4.target("bench.img", 4), SIZE, secs);
        drop(s4);
        let lab = start_lab("/dev/shm");
        fill(&lab.dir.join("bench.img"), SIZE);
        let v3_ns = randread_iops(&lab.target("bench.img", 3), SIZE, secs);
        let v4_ns = randread_iops(&lab.target("bench.img", 4), SIZE, secs);
        drop(lab);
        println!("4k randread QD32, {secs} s each, export on /dev/shm:");
        println!("  NFSv4 over loopback (127.0.0.1):       {v4_lo:>9.0} IOPS");
        println!("  NFSv3 over the lab's veth (netns):      {v3_ns:>9.0} IOPS");
        println!("  NFSv4 over the lab's veth (netns):      {v4_ns:>9.0} IOPS");
    }

    #[test]
    fn nfs4_against_ganesha() {
        let mut s = start_v4("/tmp");
        scenario(&mut s, 4);
    }

    #[test]
    fn nfs3_against_ganesha() {
        let mut s = start_lab("/tmp");
        scenario(&mut s, 3);
    }
}
