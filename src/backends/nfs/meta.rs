//! File operations over storlab's NFS client ([`FileOps`] for the metadata
//! workload): NFSv3 (LOOKUP, CREATE GUARDED, MKDIR, REMOVE, RMDIR, RENAME,
//! READDIR, GETATTR, READ, WRITE, COMMIT) and NFSv4.0 / 4.1 COMPOUNDs
//! (PUTFH + LOOKUP / OPEN / CREATE / REMOVE / RENAME / READDIR / GETATTR,
//! READ and WRITE with the open's stateid, COMMIT, CLOSE), each call
//! synchronous on one TCP connection.
//!
//! Like a kernel client's dentry cache, the handles of the paths it has
//! looked up, created or made are kept (per instance: each worker opens its
//! own) and forgotten on remove, rmdir and rename; `stat` always asks the
//! server (GETATTR), and no file data is cached. Writes follow the Linux
//! client at close: a file written in one WRITE of at most [`CHUNK`] bytes
//! is sent FILE_SYNC when it is closed (or synced); anything larger goes
//! UNSTABLE, and close or sync COMMITs it. NFSv4 opens every file with OPEN
//! (an open-owner per instance; OPEN_CONFIRM when a 4.0 server asks) and
//! CLOSEs it, so a small-file write is OPEN, WRITE, CLOSE.

use super::compound::{self, Reply, Session, op};
use super::rpc::{Conn, NFS_PROG};
use super::v4::{
    FATTR4_SIZE, FATTR4_TYPE, OP_CLOSE, OP_COMMIT, OP_CREATE, OP_GETATTR, OP_GETFH, OP_LOOKUP,
    OP_OPEN, OP_OPEN_CONFIRM, OP_PUTFH, OP_READ, OP_READDIR, OP_REMOVE, OP_RENAME, OP_SAVEFH,
    OP_WRITE, OPEN4_RESULT_CONFIRM,
};
use super::xdr::{Dec, Enc, Short};
use super::{FILE_SYNC, SETUP_TIMEOUT, UNSTABLE, errno, status_name, v3, v4, v41};
use crate::io::fsops::{Attr, FileOps, FsError, Handle, OpenMode, split_path};
use crate::target::Target;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most data one READ or WRITE of these calls carries (a synchronous
/// call's reply is collected in memory, at most `rpc::MAX_COLLECT`).
pub const CHUNK: u32 = 64 * 1024;
/// How often a listing is started again after NOENT (see `list`).
const LIST_RETRIES: u32 = 10;
/// Bytes asked of READDIR per call.
const DIR_COUNT: u32 = 32 * 1024;

// The directory file type (ftype3, nfs_ftype4).
const NF3DIR: u32 = 2;
const NF4DIR: u32 = 2;

/// NFSv4.0 errors after which the open-owner's seqid does not advance
/// (RFC 7530 §9.1.7).
const NO_SEQID_BUMP: [u32; 8] = [10026, 10022, 10023, 10025, 10036, 10018, 10020, 10019];

/// The version-specific state.
enum Proto {
    V3,
    V4 {
        clientid: u64,
        /// NFSv4.1's session (None: 4.0).
        session: Option<Session>,
        /// The open-owner's next seqid (4.0; 4.1 ignores it).
        seqid: u32,
        owner: String,
    },
}

/// An open file.
struct OpenFile {
    fh: Vec<u8>,
    /// NFSv4: the open stateid.
    stateid: [u8; 16],
    /// A write of at most CHUNK bytes held until close or sync (sent
    /// FILE_SYNC when it is the file's only one).
    pending: Option<(u64, Vec<u8>)>,
    /// UNSTABLE data written: COMMIT at close or sync.
    unstable: bool,
}

/// File operations on a directory of an NFS export.
pub struct NfsOps {
    url: String,
    conn: Conn,
    proto: Proto,
    /// Handles by path ("" is the directory the target names).
    fhs: HashMap<String, Vec<u8>>,
    files: HashMap<u64, OpenFile>,
    next: u64,
    /// Largest READ / WRITE sent.
    chunk: u32,
}

fn short(_: Short) -> String {
    "malformed reply (XDR data ends early)".into()
}

/// A v3 sattr3 that sets only the mode (uid, gid, size unset; times left
/// to the server).
fn sattr3_mode(e: &mut Enc, mode: u32) {
    e.bool(true)
        .u32(mode)
        .bool(false)
        .bool(false)
        .bool(false)
        .u32(0)
        .u32(0);
}

impl NfsOps {
    /// Connect to the server of `t` (an `nfs://` target whose path, which
    /// may be empty, names a directory in the export), set the client up
    /// (MOUNT for v3, SETCLIENTID for 4.0, EXCHANGE_ID and a session for
    /// 4.1) and look the directory up. Errors name the URL.
    pub fn open(t: &Target) -> Result<NfsOps, String> {
        let u = super::NfsUrl::of(t).ok_or_else(|| format!("{t}: not an nfs:// target"))?;
        let err = |m: String| format!("{}: {m}", u.url);
        let (host, port, export) = (&u.nfs.host, u.nfs.port, &u.nfs.export);
        let mut conn = u.connect().map_err(err)?;
        let mut chunk = CHUNK;
        let (proto, root) = match (u.nfs.version, u.nfs.minor) {
            (3, _) => (Proto::V3, u.mount3().map_err(err)?),
            (4, m @ (0 | 1)) => {
                let (clientid, mut session) = if m == 0 {
                    (v4::set_client_id(&mut conn).map_err(err)?, None)
                } else {
                    let server = format!("{host}:{port}");
                    let want = v41::Channel::for_depth(1, CHUNK);
                    let (id, s) =
                        v41::establish(&mut conn, &server, &want, SETUP_TIMEOUT).map_err(err)?;
                    let fit = |max: u32| max.saturating_sub(v41::OVERHEAD) & !4095;
                    chunk = chunk.min(fit(s.max_request)).min(fit(s.max_response));
                    if chunk < 4096 {
                        return Err(err(format!(
                            "the server allows NFSv4.1 requests of {} bytes and replies of {} \
                             bytes; storlab needs at least {}",
                            s.max_request,
                            s.max_response,
                            4096 + v41::OVERHEAD
                        )));
                    }
                    (id, Some(s))
                };
                let root = v4::export_fh(&mut conn, session.as_mut(), export).map_err(err)?;
                static OWNERS: AtomicU32 = AtomicU32::new(0);
                let owner = format!(
                    "storlab-meta-{}-{}",
                    std::process::id(),
                    OWNERS.fetch_add(1, Ordering::Relaxed)
                );
                (
                    Proto::V4 {
                        clientid,
                        session,
                        seqid: 1,
                        owner,
                    },
                    root,
                )
            }
            (v, m) => {
                return Err(err(format!(
                    "NFS version {v}.{m} is not supported (allowed: 3, 4, 4.0, 4.1)"
                )));
            }
        };
        let mut ops = NfsOps {
            url: u.url.clone(),
            conn,
            proto,
            fhs: HashMap::from([(String::new(), root)]),
            files: HashMap::new(),
            next: 0,
            chunk,
        };
        let dir = u.nfs.path.trim_matches('/').to_string();
        if !dir.is_empty() {
            match ops.stat(&dir) {
                Ok(a) if a.dir => {}
                Ok(_) => return Err(format!("{}: {dir} is not a directory", ops.url)),
                Err(e) => return Err(e.message),
            }
            let fh = ops.fhs[&dir].clone();
            ops.fhs = HashMap::from([(String::new(), fh)]);
        }
        Ok(ops)
    }

    fn version(&self) -> u8 {
        match self.proto {
            Proto::V3 => 3,
            Proto::V4 { .. } => 4,
        }
    }

    fn rpc_err(&self, what: &str, path: &str, e: impl std::fmt::Display) -> FsError {
        FsError::new(libc::EIO, format!("{what} {path} on {}: {e}", self.url))
    }

    fn status_err(&self, what: &str, path: &str, status: u32) -> FsError {
        FsError::new(
            errno(status),
            format!(
                "{what} {path} on {}: {}",
                self.url,
                status_name(self.version(), status)
            ),
        )
    }

    fn malformed(&self, what: &str, path: &str) -> FsError {
        FsError::new(
            libc::EPROTO,
            format!("{what} {path} on {}: {}", self.url, short(Short)),
        )
    }

    /// An NFSv3 call: (status, the body after it).
    fn call3(
        &mut self,
        what: &str,
        path: &str,
        proc_: u32,
        args: impl FnOnce(&mut Enc),
    ) -> Result<(u32, Vec<u8>), FsError> {
        let body = self
            .conn
            .call(NFS_PROG, v3::VERS, proc_, SETUP_TIMEOUT, args)
            .map_err(|e| self.rpc_err(what, path, e))?;
        let status = Dec::new(&body)
            .u32()
            .map_err(|_| self.malformed(what, path))?;
        Ok((status, body[4..].to_vec()))
    }

    /// An NFSv3 call that must succeed: the body after the status.
    fn ok3(
        &mut self,
        what: &str,
        path: &str,
        proc_: u32,
        args: impl FnOnce(&mut Enc),
    ) -> Result<Vec<u8>, FsError> {
        match self.call3(what, path, proc_, args)? {
            (0, b) => Ok(b),
            (s, _) => Err(self.status_err(what, path, s)),
        }
    }

    /// An NFSv4 COMPOUND of `numops` ops (after SEQUENCE in 4.1).
    fn call4(
        &mut self,
        what: &str,
        path: &str,
        numops: u32,
        args: impl Fn(&mut Enc),
    ) -> Result<Reply, FsError> {
        let Proto::V4 { session, .. } = &mut self.proto else {
            unreachable!("call4 on NFSv3")
        };
        let minor = session.is_some() as u32;
        compound::call(
            &mut self.conn,
            minor,
            session.as_mut(),
            SETUP_TIMEOUT,
            numops,
            args,
        )
        .map_err(|e| self.rpc_err(what, path, e))
    }

    /// Read the result header of `opnum`; an error unless it succeeded.
    fn op4(&self, d: &mut Dec, opnum: u32, what: &str, path: &str) -> Result<(), FsError> {
        match op(d, opnum).map_err(|e| self.rpc_err(what, path, e))? {
            0 => Ok(()),
            s => Err(self.status_err(what, path, s)),
        }
    }

    /// The handle of `path`, from the cache or looked up (each missing
    /// parent too).
    fn fh(&mut self, path: &str) -> Result<Vec<u8>, FsError> {
        if let Some(f) = self.fhs.get(path) {
            return Ok(f.clone());
        }
        let (dir, name) = split_path(path);
        let dfh = self.fh(dir)?;
        let fh = match self.proto {
            Proto::V3 => {
                let b = self.ok3("lookup", path, v3::LOOKUP, |e| {
                    e.opaque(&dfh).string(name);
                })?;
                Dec::new(&b)
                    .opaque()
                    .map(<[u8]>::to_vec)
                    .map_err(|_| self.malformed("lookup", path))?
            }
            Proto::V4 { .. } => {
                let r = self.call4("lookup", path, 3, |e| {
                    e.u32(OP_PUTFH).opaque(&dfh);
                    e.u32(OP_LOOKUP).string(name);
                    e.u32(OP_GETFH);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("lookup", path, e))?;
                self.op4(&mut d, OP_PUTFH, "lookup", path)?;
                self.op4(&mut d, OP_LOOKUP, "lookup", path)?;
                self.op4(&mut d, OP_GETFH, "lookup", path)?;
                d.opaque()
                    .map(<[u8]>::to_vec)
                    .map_err(|_| self.malformed("lookup", path))?
            }
        };
        self.fhs.insert(path.to_string(), fh.clone());
        Ok(fh)
    }

    /// The handle `post_op_fh3` carries, else a LOOKUP.
    fn fh3_or_lookup(&mut self, body: &[u8], path: &str) -> Result<Vec<u8>, FsError> {
        let mut d = Dec::new(body);
        if let Ok(true) = d.bool()
            && let Ok(fh) = d.opaque()
        {
            let fh = fh.to_vec();
            self.fhs.insert(path.to_string(), fh.clone());
            return Ok(fh);
        }
        self.fh(path)
    }

    fn file(&self, h: &Handle) -> Result<&OpenFile, FsError> {
        self.files
            .get(&h.0)
            .ok_or_else(|| FsError::new(libc::EBADF, format!("no open file {}", h.0)))
    }

    /// NFSv4.0: advance the open-owner's seqid after a seqid-mutating op
    /// answered `status`.
    fn bump(&mut self, status: u32) {
        if let Proto::V4 { seqid, .. } = &mut self.proto
            && !NO_SEQID_BUMP.contains(&status)
        {
            *seqid = seqid.wrapping_add(1);
        }
    }

    /// One WRITE of `data` at `offset` (at most `chunk` bytes).
    fn write_rpc(&mut self, h: u64, offset: u64, data: &[u8], stable: u32) -> Result<(), FsError> {
        let f = &self.files[&h];
        let (fh, stateid) = (f.fh.clone(), f.stateid);
        let n = data.len() as u32;
        let count = match &self.proto {
            Proto::V3 => {
                let b = self.ok3("write", "", v3::WRITE, |e| {
                    e.opaque(&fh).u64(offset).u32(n).u32(stable).opaque(data);
                })?;
                let mut d = Dec::new(&b);
                let parse = |d: &mut Dec| -> Result<u32, Short> {
                    if d.bool()? {
                        d.skip(24)?;
                    }
                    if d.bool()? {
                        d.skip(84)?;
                    }
                    d.u32()
                };
                parse(&mut d).map_err(|_| self.malformed("write", ""))?
            }
            Proto::V4 { session, .. } => {
                let stateid = io_stateid(stateid, session.is_some());
                let r = self.call4("write", "", 2, |e| {
                    e.u32(OP_PUTFH).opaque(&fh);
                    e.u32(OP_WRITE)
                        .fixed(&stateid)
                        .u64(offset)
                        .u32(stable)
                        .opaque(data);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("write", "", e))?;
                self.op4(&mut d, OP_PUTFH, "write", "")?;
                self.op4(&mut d, OP_WRITE, "write", "")?;
                d.u32().map_err(|_| self.malformed("write", ""))?
            }
        };
        if count == 0 {
            return Err(FsError::new(
                libc::EIO,
                format!("write on {}: the server wrote 0 bytes", self.url),
            ));
        }
        if count < n {
            return self.write_rpc(h, offset + count as u64, &data[count as usize..], stable);
        }
        if stable == UNSTABLE {
            self.files.get_mut(&h).expect("open file").unstable = true;
        }
        Ok(())
    }

    /// Send a held write: FILE_SYNC when it is the file's only one, else
    /// UNSTABLE (to be committed).
    fn flush(&mut self, h: u64) -> Result<(), FsError> {
        let f = self.files.get_mut(&h).expect("open file");
        if let Some((off, data)) = f.pending.take() {
            let stable = if f.unstable { UNSTABLE } else { FILE_SYNC };
            self.write_rpc(h, off, &data, stable)?;
        }
        Ok(())
    }

    /// COMMIT what was written UNSTABLE.
    fn commit(&mut self, h: u64) -> Result<(), FsError> {
        let f = &self.files[&h];
        if !f.unstable {
            return Ok(());
        }
        let fh = f.fh.clone();
        match self.proto {
            Proto::V3 => {
                self.ok3("commit", "", v3::COMMIT, |e| {
                    e.opaque(&fh).u64(0).u32(0);
                })?;
            }
            Proto::V4 { .. } => {
                let r = self.call4("commit", "", 2, |e| {
                    e.u32(OP_PUTFH).opaque(&fh);
                    e.u32(OP_COMMIT).u64(0).u32(0);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("commit", "", e))?;
                self.op4(&mut d, OP_PUTFH, "commit", "")?;
                self.op4(&mut d, OP_COMMIT, "commit", "")?;
            }
        }
        self.files.get_mut(&h).expect("open file").unstable = false;
        Ok(())
    }

    /// NFSv4 OPEN of `name` in `dir`: (handle, stateid).
    fn open4(&mut self, path: &str, mode: OpenMode) -> Result<(Vec<u8>, [u8; 16]), FsError> {
        let (dir, name) = split_path(path);
        let dfh = self.fh(dir)?;
        let Proto::V4 {
            clientid,
            session,
            seqid,
            owner,
        } = &self.proto
        else {
            unreachable!("open4 on NFSv3")
        };
        let (clientid, seqid, owner, in_session) =
            (*clientid, *seqid, owner.clone(), session.is_some());
        let access = if mode == OpenMode::Read { 1 } else { 3 };
        let r = self.call4("open", path, 3, |e| {
            e.u32(OP_PUTFH).opaque(&dfh);
            e.u32(OP_OPEN).u32(seqid).u32(access).u32(0);
            e.u64(clientid).string(&owner);
            if mode == OpenMode::Create {
                // OPEN4_CREATE, GUARDED4 (an existing name fails), mode 0644.
                e.u32(1).u32(1).u32(2).u32(0).u32(1 << 1).u32(4).u32(0o644);
            } else {
                e.u32(0);
            }
            e.u32(0).string(name); // CLAIM_NULL
            e.u32(OP_GETFH);
        })?;
        let (_, mut d) = r.results().map_err(|e| self.rpc_err("open", path, e))?;
        self.op4(&mut d, OP_PUTFH, "open", path)?;
        let st = op(&mut d, OP_OPEN).map_err(|e| self.rpc_err("open", path, e))?;
        if !in_session {
            self.bump(st);
        }
        if st != 0 {
            return Err(self.status_err("open", path, st));
        }
        let parse = |d: &mut Dec| -> Result<([u8; 16], u32), Short> {
            let stateid: [u8; 16] = d.fixed(16)?.try_into().map_err(|_| Short)?;
            d.skip(4 + 16)?; // change_info4
            let rflags = d.u32()?;
            let n = d.u32()?; // attrset
            d.skip(4 * n as usize)?;
            v4::skip_delegation(d)?;
            Ok((stateid, rflags))
        };
        let (mut stateid, rflags) = parse(&mut d).map_err(|_| self.malformed("open", path))?;
        self.op4(&mut d, OP_GETFH, "open", path)?;
        let fh = d
            .opaque()
            .map(<[u8]>::to_vec)
            .map_err(|_| self.malformed("open", path))?;
        if rflags & OPEN4_RESULT_CONFIRM != 0 && !in_session {
            let Proto::V4 { seqid, .. } = self.proto else {
                unreachable!()
            };
            let r = self.call4("open_confirm", path, 2, |e| {
                e.u32(OP_PUTFH).opaque(&fh);
                e.u32(OP_OPEN_CONFIRM).fixed(&stateid).u32(seqid);
            })?;
            let (_, mut d) = r
                .results()
                .map_err(|e| self.rpc_err("open_confirm", path, e))?;
            self.op4(&mut d, OP_PUTFH, "open_confirm", path)?;
            let st = op(&mut d, OP_OPEN_CONFIRM).map_err(|e| self.rpc_err("open", path, e))?;
            self.bump(st);
            if st != 0 {
                return Err(self.status_err("open_confirm", path, st));
            }
            stateid = d
                .fixed(16)
                .ok()
                .and_then(|s| s.try_into().ok())
                .ok_or_else(|| self.malformed("open_confirm", path))?;
        }
        self.fhs.insert(path.to_string(), fh.clone());
        Ok((fh, stateid))
    }
}

/// The stateid READ and WRITE carry: in a session (4.1) with seqid 0.
fn io_stateid(mut s: [u8; 16], in_session: bool) -> [u8; 16] {
    if in_session {
        s[..4].fill(0);
    }
    s
}

/// A READDIR reply's names after the status (v3: post_op_attr and
/// cookieverf first; v4: cookieverf, and attributes per entry): (names, the
/// last cookie, the cookie verifier, eof).
fn parse_dir(
    d: &mut Dec,
    v3: bool,
    names: &mut Vec<String>,
) -> Result<(u64, [u8; 8], bool), Short> {
    if v3 && d.bool()? {
        d.skip(84)?;
    }
    let verf: [u8; 8] = d.fixed(8)?.try_into().map_err(|_| Short)?;
    let mut cookie = 0;
    while d.bool()? {
        if v3 {
            d.u64()?; // fileid
            let name = d.string()?;
            cookie = d.u64()?;
            names.push(name);
        } else {
            cookie = d.u64()?;
            let name = d.string()?;
            let n = d.u32()?;
            d.skip(4 * n as usize)?;
            d.opaque()?;
            names.push(name);
        }
    }
    Ok((cookie, verf, d.bool()?))
}

impl FileOps for NfsOps {
    fn describe(&self) -> String {
        let v = match &self.proto {
            Proto::V3 => "3",
            Proto::V4 { session: None, .. } => "4.0",
            Proto::V4 { .. } => "4.1",
        };
        format!(
            "storlab NFSv{v} client over TCP, synchronous calls, READ/WRITE of up to {} KiB",
            self.chunk / 1024
        )
    }

    fn mkdir(&mut self, path: &str) -> Result<(), FsError> {
        let (dir, name) = split_path(path);
        let dfh = self.fh(dir)?;
        match self.proto {
            Proto::V3 => {
                let b = self.ok3("mkdir", path, v3::MKDIR, |e| {
                    e.opaque(&dfh).string(name);
                    sattr3_mode(e, 0o755);
                })?;
                self.fh3_or_lookup(&b, path)?;
            }
            Proto::V4 { .. } => {
                let r = self.call4("mkdir", path, 3, |e| {
                    e.u32(OP_PUTFH).opaque(&dfh);
                    e.u32(OP_CREATE).u32(NF4DIR).string(name);
                    e.u32(2).u32(0).u32(1 << 1).u32(4).u32(0o755);
                    e.u32(OP_GETFH);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("mkdir", path, e))?;
                self.op4(&mut d, OP_PUTFH, "mkdir", path)?;
                self.op4(&mut d, OP_CREATE, "mkdir", path)?;
                let skip = |d: &mut Dec| -> Result<(), Short> {
                    d.skip(20)?;
                    let n = d.u32()?;
                    d.skip(4 * n as usize)
                };
                skip(&mut d).map_err(|_| self.malformed("mkdir", path))?;
                self.op4(&mut d, OP_GETFH, "mkdir", path)?;
                let fh = d
                    .opaque()
                    .map_err(|_| self.malformed("mkdir", path))?
                    .to_vec();
                self.fhs.insert(path.to_string(), fh);
            }
        }
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> Result<(), FsError> {
        self.unlink("rmdir", v3::RMDIR, path)
    }

    fn open(&mut self, path: &str, mode: OpenMode) -> Result<Handle, FsError> {
        let (fh, stateid) = match self.proto {
            Proto::V3 if mode == OpenMode::Create => {
                let (dir, name) = split_path(path);
                let dfh = self.fh(dir)?;
                let b = self.ok3("create", path, v3::CREATE, |e| {
                    e.opaque(&dfh).string(name).u32(1); // GUARDED
                    sattr3_mode(e, 0o644);
                })?;
                (self.fh3_or_lookup(&b, path)?, [0; 16])
            }
            Proto::V3 => (self.fh(path)?, [0; 16]),
            Proto::V4 { .. } => self.open4(path, mode)?,
        };
        self.next += 1;
        self.files.insert(
            self.next,
            OpenFile {
                fh,
                stateid,
                pending: None,
                unstable: false,
            },
        );
        Ok(Handle(self.next))
    }

    fn write_at(&mut self, h: &Handle, offset: u64, data: &[u8]) -> Result<(), FsError> {
        let f = self.file(h)?;
        if data.len() <= self.chunk as usize && f.pending.is_none() && !f.unstable {
            self.files.get_mut(&h.0).expect("open file").pending = Some((offset, data.to_vec()));
            return Ok(());
        }
        if let Some((off, held)) = self.files.get_mut(&h.0).and_then(|f| f.pending.take()) {
            self.write_rpc(h.0, off, &held, UNSTABLE)?;
        }
        let chunk = self.chunk as usize;
        for (i, part) in data.chunks(chunk).enumerate() {
            self.write_rpc(h.0, offset + (i * chunk) as u64, part, UNSTABLE)?;
        }
        Ok(())
    }

    fn read_at(&mut self, h: &Handle, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        let f = self.file(h)?;
        let (fh, stateid) = (f.fh.clone(), f.stateid);
        let mut got = 0;
        while got < buf.len() {
            let n = (buf.len() - got).min(self.chunk as usize) as u32;
            let off = offset + got as u64;
            let (data, eof) = match &self.proto {
                Proto::V3 => {
                    let b = self.ok3("read", "", v3::READ, |e| {
                        e.opaque(&fh).u64(off).u32(n);
                    })?;
                    let parse = |d: &mut Dec| -> Result<(Vec<u8>, bool), Short> {
                        if d.bool()? {
                            d.skip(84)?;
                        }
                        d.u32()?;
                        let eof = d.bool()?;
                        Ok((d.opaque()?.to_vec(), eof))
                    };
                    parse(&mut Dec::new(&b)).map_err(|_| self.malformed("read", ""))?
                }
                Proto::V4 { session, .. } => {
                    let stateid = io_stateid(stateid, session.is_some());
                    let r = self.call4("read", "", 2, |e| {
                        e.u32(OP_PUTFH).opaque(&fh);
                        e.u32(OP_READ).fixed(&stateid).u64(off).u32(n);
                    })?;
                    let (_, mut d) = r.results().map_err(|e| self.rpc_err("read", "", e))?;
                    self.op4(&mut d, OP_PUTFH, "read", "")?;
                    self.op4(&mut d, OP_READ, "read", "")?;
                    let parse = |d: &mut Dec| -> Result<(Vec<u8>, bool), Short> {
                        let eof = d.bool()?;
                        Ok((d.opaque()?.to_vec(), eof))
                    };
                    parse(&mut d).map_err(|_| self.malformed("read", ""))?
                }
            };
            let k = data.len().min(buf.len() - got);
            buf[got..got + k].copy_from_slice(&data[..k]);
            got += k;
            if eof || k == 0 {
                break;
            }
        }
        Ok(got)
    }

    fn sync(&mut self, h: &Handle) -> Result<(), FsError> {
        self.file(h)?;
        self.flush(h.0)?;
        self.commit(h.0)
    }

    fn close(&mut self, h: Handle) -> Result<(), FsError> {
        self.file(&h)?;
        let synced = self.flush(h.0).and_then(|_| self.commit(h.0));
        let f = self.files.remove(&h.0).expect("open file");
        synced?;
        if let Proto::V4 { seqid, session, .. } = &self.proto {
            let (seqid, in_session) = (*seqid, session.is_some());
            let r = self.call4("close", "", 2, |e| {
                e.u32(OP_PUTFH).opaque(&f.fh);
                e.u32(OP_CLOSE).u32(seqid).fixed(&f.stateid);
            })?;
            let (_, mut d) = r.results().map_err(|e| self.rpc_err("close", "", e))?;
            self.op4(&mut d, OP_PUTFH, "close", "")?;
            let st = op(&mut d, OP_CLOSE).map_err(|e| self.rpc_err("close", "", e))?;
            if !in_session {
                self.bump(st);
            }
            if st != 0 {
                return Err(self.status_err("close", "", st));
            }
        }
        Ok(())
    }

    fn drop_cache(&mut self, _path: &str) -> Result<(), FsError> {
        Ok(())
    }

    fn stat(&mut self, path: &str) -> Result<Attr, FsError> {
        let fh = self.fh(path)?;
        match self.proto {
            Proto::V3 => {
                let b = self.ok3("stat", path, v3::GETATTR, |e| {
                    e.opaque(&fh);
                })?;
                let parse = |d: &mut Dec| -> Result<Attr, Short> {
                    let t = d.u32()?;
                    d.skip(16)?; // mode, nlink, uid, gid
                    Ok(Attr {
                        dir: t == NF3DIR,
                        size: d.u64()?,
                    })
                };
                parse(&mut Dec::new(&b)).map_err(|_| self.malformed("stat", path))
            }
            Proto::V4 { .. } => {
                let r = self.call4("stat", path, 2, |e| {
                    e.u32(OP_PUTFH).opaque(&fh);
                    e.u32(OP_GETATTR)
                        .u32(1)
                        .u32(1 << FATTR4_TYPE | 1 << FATTR4_SIZE);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("stat", path, e))?;
                self.op4(&mut d, OP_PUTFH, "stat", path)?;
                self.op4(&mut d, OP_GETATTR, "stat", path)?;
                let a = v4::parse_attrs(&mut d).map_err(|_| self.malformed("stat", path))?;
                Ok(Attr {
                    dir: a.ftype == NF4DIR,
                    size: a.size,
                })
            }
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        let (fdir, fname) = split_path(from);
        let (tdir, tname) = split_path(to);
        let ffh = self.fh(fdir)?;
        let tfh = self.fh(tdir)?;
        match self.proto {
            Proto::V3 => {
                self.ok3("rename", from, v3::RENAME, |e| {
                    e.opaque(&ffh).string(fname).opaque(&tfh).string(tname);
                })?;
            }
            Proto::V4 { .. } => {
                let r = self.call4("rename", from, 4, |e| {
                    e.u32(OP_PUTFH).opaque(&ffh);
                    e.u32(OP_SAVEFH);
                    e.u32(OP_PUTFH).opaque(&tfh);
                    e.u32(OP_RENAME).string(fname).string(tname);
                })?;
                let (_, mut d) = r.results().map_err(|e| self.rpc_err("rename", from, e))?;
                self.op4(&mut d, OP_PUTFH, "rename", from)?;
                self.op4(&mut d, OP_SAVEFH, "rename", from)?;
                self.op4(&mut d, OP_PUTFH, "rename", to)?;
                self.op4(&mut d, OP_RENAME, "rename", from)?;
            }
        }
        self.fhs.remove(from);
        self.fhs.remove(to);
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<(), FsError> {
        self.unlink("remove", v3::REMOVE, path)
    }

    /// nfs-ganesha answers READDIR with NOENT when an entry goes away
    /// while it reads the directory (another worker's remove or rename):
    /// the listing is started again, at most [`LIST_RETRIES`] times.
    fn list(&mut self, path: &str) -> Result<Vec<String>, FsError> {
        let mut tries = 0;
        loop {
            match self.list_once(path) {
                Err(e) if e.errno == libc::ENOENT && tries < LIST_RETRIES => tries += 1,
                r => return r,
            }
        }
    }
}

impl NfsOps {
    /// One listing of `path`, READDIR from cookie 0 to the end.
    fn list_once(&mut self, path: &str) -> Result<Vec<String>, FsError> {
        let dfh = self.fh(path)?;
        let mut names = Vec::new();
        let (mut cookie, mut verf) = (0u64, [0u8; 8]);
        let mut seen = std::collections::HashSet::new();
        let v3 = matches!(self.proto, Proto::V3);
        loop {
            let mut d;
            let r;
            let b;
            if v3 {
                b = self.ok3("list", path, v3::READDIR, |e| {
                    e.opaque(&dfh).u64(cookie).fixed(&verf).u32(DIR_COUNT);
                })?;
                d = Dec::new(&b);
            } else {
                r = self.call4("list", path, 2, |e| {
                    e.u32(OP_PUTFH).opaque(&dfh);
                    e.u32(OP_READDIR)
                        .u64(cookie)
                        .fixed(&verf)
                        .u32(DIR_COUNT / 4)
                        .u32(DIR_COUNT)
                        .u32(1)
                        .u32(1 << FATTR4_TYPE);
                })?;
                let (_, d4) = r.results().map_err(|e| self.rpc_err("list", path, e))?;
                d = d4;
                self.op4(&mut d, OP_PUTFH, "list", path)?;
                self.op4(&mut d, OP_READDIR, "list", path)?;
            }
            let before = names.len();
            let (last, v, eof) =
                parse_dir(&mut d, v3, &mut names).map_err(|_| self.malformed("list", path))?;
            if eof {
                break;
            }
            if names.len() == before {
                return Err(FsError::new(
                    libc::EIO,
                    format!(
                        "list {path} on {}: READDIR returned no entry and no end",
                        self.url
                    ),
                ));
            }
            // A cookie handed out twice is a readdir loop (the Linux client
            // reports ELOOP): the listing would never end.
            if !seen.insert(last) {
                return Err(FsError::new(
                    libc::ELOOP,
                    format!(
                        "list {path} on {}: the server's READDIR came back to cookie {last} \
                         (a readdir loop; nfs-ganesha's chunked dirent cache does this when \
                         a directory changes while it is listed: set MDCACHE Dir_Chunk = 0)",
                        self.url
                    ),
                ));
            }
            (cookie, verf) = (last, v);
        }
        names.retain(|n| n != "." && n != "..");
        Ok(names)
    }

    /// Remove `path`, a file (`what` "remove", v3 procedure REMOVE) or an
    /// empty directory ("rmdir", RMDIR; NFSv4's REMOVE takes both), and
    /// forget its handle.
    fn unlink(&mut self, what: &str, proc3: u32, path: &str) -> Result<(), FsError> {
        let (dir, name) = split_path(path);
        let dfh = self.fh(dir)?;
        match self.proto {
            Proto::V3 => {
                self.ok3(what, path, proc3, |e| {
                    e.opaque(&dfh).string(name);
                })?;
            }
            Proto::V4 { .. } => self.remove4(what, path, &dfh, name)?,
        }
        self.fhs.remove(path);
        Ok(())
    }

    /// NFSv4 PUTFH dir + REMOVE name (a file or an empty directory).
    fn remove4(&mut self, what: &str, path: &str, dfh: &[u8], name: &str) -> Result<(), FsError> {
        let r = self.call4(what, path, 2, |e| {
            e.u32(OP_PUTFH).opaque(dfh);
            e.u32(OP_REMOVE).string(name);
        })?;
        let (_, mut d) = r.results().map_err(|e| self.rpc_err(what, path, e))?;
        self.op4(&mut d, OP_PUTFH, what, path)?;
        self.op4(&mut d, OP_REMOVE, what, path)
    }
}

impl Drop for NfsOps {
    /// NFSv4.1: DESTROY_SESSION and DESTROY_CLIENTID (4.0's client state
    /// expires with its lease; v3 has none).
    fn drop(&mut self) {
        if let Proto::V4 {
            clientid,
            session: Some(s),
            ..
        } = &self.proto
            && let Err(e) = v41::destroy(&mut self.conn, *clientid, s, SETUP_TIMEOUT)
        {
            eprintln!(
                "storlab: {}: ending the NFSv4.1 session failed: {e}",
                self.url
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readdir_replies_of_both_versions() {
        // v3: no dir attributes, verifier, two entries, eof.
        let mut b = Vec::new();
        let mut e = Enc::new(&mut b);
        e.bool(false).fixed(&[9; 8]);
        e.bool(true).u64(1).string("a").u64(11);
        e.bool(true).u64(2).string("..").u64(12);
        e.bool(false).bool(true);
        let mut names = Vec::new();
        let got = parse_dir(&mut Dec::new(&b), true, &mut names).unwrap();
        assert_eq!(got, (12, [9; 8], true));
        assert_eq!(names, ["a", ".."]);
        for cut in 0..b.len() {
            assert!(parse_dir(&mut Dec::new(&b[..cut]), true, &mut Vec::new()).is_err());
        }
        // v4: verifier, one entry with attributes, not eof.
        let mut b = Vec::new();
        let mut e = Enc::new(&mut b);
        e.fixed(&[3; 8]);
        e.bool(true)
            .u64(7)
            .string("f1")
            .u32(1)
            .u32(2)
            .opaque(&[0, 0, 0, 1]);
        e.bool(false).bool(false);
        let mut names = Vec::new();
        let got = parse_dir(&mut Dec::new(&b), false, &mut names).unwrap();
        assert_eq!(got, (7, [3; 8], false));
        assert_eq!(names, ["f1"]);
    }

    #[test]
    fn io_stateid_zeroes_the_seqid_in_a_session() {
        let s = [1; 16];
        assert_eq!(io_stateid(s, false), s);
        assert_eq!(&io_stateid(s, true)[..4], &[0; 4]);
        assert_eq!(&io_stateid(s, true)[4..], &[1; 12]);
    }
}
