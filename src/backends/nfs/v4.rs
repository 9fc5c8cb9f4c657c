//! NFSv4 file COMPOUNDs (RFC 7530 for 4.0, RFC 8881 for 4.1): SETCLIENTID +
//! SETCLIENTID_CONFIRM (4.0; 4.1's session is [`super::v41`]'s), PUTROOTFH
//! and LOOKUP of the export's components (no MOUNT), OPEN (+ OPEN_CONFIRM when
//! a 4.0 server asks) with GETFH and GETATTR, then PUTFH + READ / WRITE per
//! request, COMMIT and CLOSE at the end. In 4.1 each COMPOUND starts with
//! SEQUENCE (given as a [`Seq`] or a [`Session`] to take a slot of), and
//! READ and WRITE carry the open stateid with seqid 0 ("the current one",
//! RFC 8881 §8.2.2).
//!
//! The callback address given to SETCLIENTID is a dummy: storlab runs no
//! callback service, so the server grants no delegations. READ and WRITE use
//! the open stateid, which renews the client's lease (RFC 7530 §9.6), so a
//! run that keeps doing I/O needs no RENEW; [`renew`] exists for idle times.

use super::compound::{self, Reply, Seq, Session, begin, op, results, sequence, short};
pub use super::compound::{COMPOUND, VERS};
use super::rpc::{Conn, Head};
use super::xdr::{Dec, Enc, Short};
use super::{SETUP_TIMEOUT, status_name};
use std::time::Duration;

/// NFSv4 operation numbers (RFC 7530 §16, RFC 8881 §18), for the I/O path
/// here and the file operations of `meta.rs`.
pub(super) const OP_CLOSE: u32 = 4;
pub(super) const OP_COMMIT: u32 = 5;
pub(super) const OP_CREATE: u32 = 6;
pub(super) const OP_GETATTR: u32 = 9;
pub(super) const OP_GETFH: u32 = 10;
pub(super) const OP_LOOKUP: u32 = 15;
pub(super) const OP_OPEN: u32 = 18;
pub(super) const OP_OPEN_CONFIRM: u32 = 20;
pub(super) const OP_PUTFH: u32 = 22;
const OP_PUTROOTFH: u32 = 24;
pub(super) const OP_READ: u32 = 25;
pub(super) const OP_READDIR: u32 = 26;
pub(super) const OP_REMOVE: u32 = 28;
pub(super) const OP_RENAME: u32 = 29;
const OP_RENEW: u32 = 30;
pub(super) const OP_SAVEFH: u32 = 32;
const OP_SETCLIENTID: u32 = 35;
const OP_SETCLIENTID_CONFIRM: u32 = 36;
pub(super) const OP_WRITE: u32 = 38;
const NFS4ERR_NOENT: u32 = 2;
const NFS4ERR_ACCES: u32 = 13;
const NF4REG: u32 = 1;
pub(super) const OPEN4_RESULT_CONFIRM: u32 = 2;
/// Attribute numbers (bits of the first bitmap word).
pub(super) const FATTR4_TYPE: u32 = 1;
pub(super) const FATTR4_SIZE: u32 = 4;
const FATTR4_FILEID: u32 = 20;
const FATTR4_MAXREAD: u32 = 30;
const FATTR4_MAXWRITE: u32 = 31;
/// Transfer size when the server states none.
const DEFAULT_MAX: u64 = 1 << 20;

/// An open NFSv4 file.
#[derive(Clone, Debug)]
pub struct File {
    /// Its file handle.
    pub fh: Vec<u8>,
    /// The open stateid (seqid + other).
    pub stateid: [u8; 16],
    /// The client id from SETCLIENTID.
    pub clientid: u64,
    /// The open-owner's next seqid.
    pub seqid: u32,
    /// Size in bytes at open.
    pub size: u64,
    /// Largest READ (the file system's maxread, else 1 MiB).
    pub rsize: u32,
    /// Largest WRITE (maxwrite, else 1 MiB).
    pub wsize: u32,
    /// The file's `fileid`, when the server gave it.
    pub fileid: Option<u64>,
}

/// A set-up or tear-down COMPOUND of `numops` ops (after SEQUENCE when in a
/// session: NFSv4.1; else NFSv4.0).
fn call(
    c: &mut Conn,
    session: Option<&mut Session>,
    timeout: Duration,
    numops: u32,
    args: impl Fn(&mut Enc),
) -> Result<Reply, String> {
    let minor = session.is_some() as u32;
    compound::call(c, minor, session, timeout, numops, args)
}

fn denied_or(what: &str, status: u32) -> String {
    if status == NFS4ERR_ACCES || status == 1 {
        format!(
            "{what}: permission denied ({}): check the export's access rules \
             (storlab uses AUTH_SYS uid 0, which the server may squash)",
            status_name(4, status)
        )
    } else if status == compound::NFS4ERR_GRACE {
        format!(
            "{what}: {}: the server stayed in its grace period (after a restart) for the {} s \
             storlab waits",
            status_name(4, status),
            compound::GRACE_WAIT.as_secs()
        )
    } else {
        format!("{what}: {}", status_name(4, status))
    }
}

/// SETCLIENTID + SETCLIENTID_CONFIRM: the client id.
pub(super) fn set_client_id(c: &mut Conn) -> Result<u64, String> {
    let (verf, id) = compound::client_owner("storlab");
    let r = call(c, None, SETUP_TIMEOUT, 1, |e| {
        e.u32(OP_SETCLIENTID).fixed(&verf).string(&id);
        // cb_client4: a program and an address nobody serves.
        e.u32(0x4000_0000)
            .string("tcp")
            .string("0.0.0.0.0.0")
            .u32(1);
    })?;
    let (_, mut d) = r.results()?;
    let status = op(&mut d, OP_SETCLIENTID)?;
    if status != 0 {
        return Err(denied_or("SETCLIENTID", status));
    }
    let clientid = d.u64().map_err(short)?;
    let confirm: [u8; 8] = d.fixed(8).map_err(short)?.try_into().unwrap();
    let r = call(c, None, SETUP_TIMEOUT, 1, |e| {
        e.u32(OP_SETCLIENTID_CONFIRM).u64(clientid).fixed(&confirm);
    })?;
    let (status, _) = r.results()?;
    if status != 0 {
        return Err(denied_or("SETCLIENTID_CONFIRM", status));
    }
    Ok(clientid)
}

/// PUTROOTFH + LOOKUP of each export component + GETFH: the export's handle.
pub(super) fn export_fh(
    c: &mut Conn,
    session: Option<&mut Session>,
    export: &str,
) -> Result<Vec<u8>, String> {
    let comps: Vec<&str> = export.split('/').filter(|s| !s.is_empty()).collect();
    let r = call(c, session, SETUP_TIMEOUT, comps.len() as u32 + 2, |e| {
        e.u32(OP_PUTROOTFH);
        for comp in &comps {
            e.u32(OP_LOOKUP).string(comp);
        }
        e.u32(OP_GETFH);
    })?;
    let (_, mut d) = r.results()?;
    let status = op(&mut d, OP_PUTROOTFH)?;
    if status != 0 {
        return Err(denied_or("PUTROOTFH", status));
    }
    for comp in &comps {
        match op(&mut d, OP_LOOKUP)? {
            0 => {}
            NFS4ERR_NOENT => {
                return Err(format!(
                    "export {export} not found in the server's NFSv4 namespace \
                     (NFS4ERR_NOENT at {comp:?}): check the export path (its Pseudo path)"
                ));
            }
            s => {
                return Err(denied_or(
                    &format!("looking up export component {comp:?}"),
                    s,
                ));
            }
        }
    }
    let status = op(&mut d, OP_GETFH)?;
    if status != 0 {
        return Err(denied_or("GETFH", status));
    }
    Ok(d.opaque().map_err(short)?.to_vec())
}

/// Skip an nfsace4.
fn skip_ace(d: &mut Dec) -> Result<(), Short> {
    d.skip(12)?;
    d.opaque().map(|_| ())
}

/// Skip an open_delegation4.
pub(super) fn skip_delegation(d: &mut Dec) -> Result<(), Short> {
    match d.u32()? {
        1 => {
            d.skip(16 + 4)?; // stateid, recall
            skip_ace(d)
        }
        2 => {
            d.skip(16 + 4)?;
            match d.u32()? {
                1 => d.skip(8)?,
                _ => d.skip(8)?,
            }
            skip_ace(d)
        }
        // OPEN_DELEGATE_NONE_EXT (4.1): why none, and for contention or
        // lack of resources a bool.
        3 => match d.u32()? {
            7 | 8 => d.skip(4),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The file attributes storlab asks for, as a GETATTR returned them (an
/// attribute the server left out keeps its default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attrs {
    /// `type` (nfs_ftype4), 0 when absent.
    pub ftype: u32,
    /// `size`, 0 when absent.
    pub size: u64,
    /// `fileid`, `None` when absent.
    pub fileid: Option<u64>,
    /// `maxread`, [`DEFAULT_MAX`] when absent.
    pub maxread: u64,
    /// `maxwrite`, [`DEFAULT_MAX`] when absent.
    pub maxwrite: u64,
}

/// Parse a fattr4 whose mask holds any of the attributes of [`Attrs`]
/// (values in attribute-number order, RFC 7530 §5). Public for the
/// `nfs_reply` fuzz target.
pub fn parse_attrs(d: &mut Dec) -> Result<Attrs, Short> {
    let words = d.u32()?;
    let mut mask = 0u32;
    for i in 0..words {
        let w = d.u32()?;
        if i == 0 {
            mask = w;
        }
    }
    let vals = d.opaque()?;
    let mut v = Dec::new(vals);
    let mut a = Attrs {
        ftype: 0,
        size: 0,
        fileid: None,
        maxread: DEFAULT_MAX,
        maxwrite: DEFAULT_MAX,
    };
    let has = |bit: u32| mask & 1 << bit != 0;
    if has(FATTR4_TYPE) {
        a.ftype = v.u32()?;
    }
    if has(FATTR4_SIZE) {
        a.size = v.u64()?;
    }
    if has(FATTR4_FILEID) {
        a.fileid = Some(v.u64()?);
    }
    if has(FATTR4_MAXREAD) {
        a.maxread = v.u64()?;
    }
    if has(FATTR4_MAXWRITE) {
        a.maxwrite = v.u64()?;
    }
    Ok(a)
}

/// NFSv4.0: set up the client, find the export and OPEN `path` in it
/// (creating it, UNCHECKED, when `create_missing`), read-write when `write`.
pub fn open(
    c: &mut Conn,
    export: &str,
    path: &str,
    write: bool,
    create_missing: bool,
) -> Result<File, String> {
    c.set_read_head(read_head);
    let clientid = set_client_id(c)?;
    open_in(c, None, clientid, export, path, write, create_missing)
}

/// Find the export and OPEN `path` in it for client `clientid`, in
/// `session` (NFSv4.1, whose client and session are set up) or not (4.0).
pub fn open_in(
    c: &mut Conn,
    mut session: Option<&mut Session>,
    clientid: u64,
    export: &str,
    path: &str,
    write: bool,
    create_missing: bool,
) -> Result<File, String> {
    let root = export_fh(c, session.as_deref_mut(), export)?;
    let in_session = session.is_some();
    let comps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (name, dirs) = comps.split_last().ok_or("no file name")?;
    let owner = format!("storlab-open-{}", std::process::id());
    // NFSv4.1 ignores the open-owner's seqid (sessions order the requests).
    let mut seqid = !in_session as u32;
    let r = call(c, session, SETUP_TIMEOUT, dirs.len() as u32 + 4, |e| {
        e.u32(OP_PUTFH).opaque(&root);
        for dir in dirs {
            e.u32(OP_LOOKUP).string(dir);
        }
        let access = if write { 3 } else { 1 };
        e.u32(OP_OPEN).u32(seqid).u32(access).u32(0);
        e.u64(clientid).string(&owner);
        if create_missing {
            // OPEN4_CREATE, UNCHECKED4, attributes: mode 0644.
            e.u32(1).u32(0).u32(2).u32(0).u32(1 << 1).u32(4).u32(0o644);
        } else {
            e.u32(0);
        }
        e.u32(0).string(name); // CLAIM_NULL
        e.u32(OP_GETFH);
        let mask = 1 << FATTR4_TYPE
            | 1 << FATTR4_SIZE
            | 1 << FATTR4_FILEID
            | 1 << FATTR4_MAXREAD
            | 1 << FATTR4_MAXWRITE;
        e.u32(OP_GETATTR).u32(1).u32(mask);
    })?;
    let (_, mut d) = r.results()?;
    let status = op(&mut d, OP_PUTFH)?;
    if status != 0 {
        return Err(denied_or("PUTFH of the export", status));
    }
    for dir in dirs {
        match op(&mut d, OP_LOOKUP)? {
            0 => {}
            NFS4ERR_NOENT => {
                return Err(format!(
                    "directory {dir:?} of {path} does not exist in export {export} (NFS4ERR_NOENT): create it first"
                ));
            }
            s => return Err(denied_or(&format!("looking up {dir:?}"), s)),
        }
    }
    match op(&mut d, OP_OPEN)? {
        0 => {}
        NFS4ERR_NOENT => {
            return Err(format!(
                "file {path} does not exist in export {export} (NFS4ERR_NOENT); a read-only run \
                 does not create it: write it first (a write workload creates it)"
            ));
        }
        s => return Err(denied_or(&format!("opening {path}"), s)),
    }
    let mut stateid: [u8; 16] = d.fixed(16).map_err(short)?.try_into().unwrap();
    d.skip(4 + 16).map_err(short)?; // change_info4
    let rflags = d.u32().map_err(short)?;
    let n = d.u32().map_err(short)?; // attrset
    d.skip(4 * n as usize).map_err(short)?;
    skip_delegation(&mut d).map_err(short)?;
    if !in_session {
        seqid += 1;
    }
    if op(&mut d, OP_GETFH)? != 0 {
        return Err("GETFH after OPEN failed".into());
    }
    let fh = d.opaque().map_err(short)?.to_vec();
    let status = op(&mut d, OP_GETATTR)?;
    if status != 0 {
        return Err(denied_or("GETATTR", status));
    }
    let attrs = parse_attrs(&mut d).map_err(short)?;
    if attrs.ftype != NF4REG {
        return Err(format!(
            "{path} is not a regular file (NFSv4 type {})",
            attrs.ftype
        ));
    }
    // NFSv4.1 has no OPEN_CONFIRM (RFC 8881 §18.16.4: servers do not ask).
    if rflags & OPEN4_RESULT_CONFIRM != 0 && !in_session {
        let r = call(c, None, SETUP_TIMEOUT, 2, |e| {
            e.u32(OP_PUTFH).opaque(&fh);
            e.u32(OP_OPEN_CONFIRM).fixed(&stateid).u32(seqid);
        })?;
        let (status, mut d) = r.results()?;
        if status != 0 {
            return Err(denied_or("OPEN_CONFIRM", status));
        }
        op(&mut d, OP_PUTFH)?;
        op(&mut d, OP_OPEN_CONFIRM)?;
        stateid = d.fixed(16).map_err(short)?.try_into().unwrap();
        seqid += 1;
    }
    let clamp = |v: u64| v.clamp(4096, DEFAULT_MAX.max(4096) * 16) as u32;
    Ok(File {
        fh,
        stateid,
        clientid,
        seqid,
        size: attrs.size,
        rsize: clamp(attrs.maxread),
        wsize: clamp(attrs.maxwrite),
        fileid: attrs.fileid,
    })
}

/// The stateid READ and WRITE carry: in a session (4.1) with seqid 0.
fn io_stateid(f: &File, seq: Option<&Seq>) -> [u8; 16] {
    let mut s = f.stateid;
    if seq.is_some() {
        s[..4].fill(0);
    }
    s
}

/// PUTFH + READ (after SEQUENCE when `seq` is given: NFSv4.1).
pub fn encode_read(e: &mut Enc, f: &File, seq: Option<&Seq>, offset: u64, count: u32) {
    begin(e, seq.is_some() as u32, seq, 2);
    e.u32(OP_PUTFH).opaque(&f.fh);
    e.u32(OP_READ)
        .fixed(&io_stateid(f, seq))
        .u64(offset)
        .u32(count);
}

/// PUTFH + WRITE up to the data's length word (the data follows as
/// payload), after SEQUENCE when `seq` is given (NFSv4.1).
pub fn encode_write(
    e: &mut Enc,
    f: &File,
    seq: Option<&Seq>,
    offset: u64,
    count: u32,
    stable: u32,
) {
    begin(e, seq.is_some() as u32, seq, 2);
    e.u32(OP_PUTFH).opaque(&f.fh);
    e.u32(OP_WRITE)
        .fixed(&io_stateid(f, seq))
        .u64(offset)
        .u32(stable)
        .u32(count);
}

/// The status of the first failed op of a 2-op reply, else None.
fn failed_status(d: &mut Dec, second: u32) -> Result<Option<u32>, Short> {
    d.u32()?;
    let s = d.u32()?;
    if s != 0 {
        return Ok(Some(s));
    }
    let got = d.u32()?;
    let s = d.u32()?;
    if got != second {
        return Ok(Some(u32::MAX));
    }
    Ok((s != 0).then_some(s))
}

/// Where the data of a PUTFH + READ reply starts.
pub fn read_head(b: &[u8]) -> Head {
    read_head_after(b, false)
}

/// Where the data of a SEQUENCE + PUTFH + READ reply (NFSv4.1) starts.
pub fn read_head41(b: &[u8]) -> Head {
    read_head_after(b, true)
}

fn read_head_after(b: &[u8], seq: bool) -> Head {
    let parse = || -> Result<Head, Short> {
        let (_, mut n, mut d) = results(b)?;
        if seq {
            if n == 0 || sequence(&mut d)? != 0 {
                return Ok(Head::NoData);
            }
            n -= 1;
        }
        if n < 2 || failed_status(&mut d, OP_READ)?.is_some() {
            return Ok(Head::NoData);
        }
        d.u32()?; // eof
        let count = d.u32()?;
        Ok(Head::Data {
            len: d.pos(),
            count,
        })
    };
    parse().unwrap_or(Head::More)
}

/// A READ reply: Ok(bytes) or Err(status; `u32::MAX` for a malformed reply).
pub fn read_result(body: &[u8], data: Option<u32>) -> Result<u32, u32> {
    if let Some(n) = data {
        return Ok(n);
    }
    match results(body) {
        Ok((0, _, _)) | Err(_) => Err(u32::MAX),
        Ok((s, _, _)) => Err(s),
    }
}

/// A WRITE reply (after SEQUENCE when `seq`): Ok((count, verifier)) or
/// Err(status; `u32::MAX` if malformed).
pub fn write_result(body: &[u8], seq: bool) -> Result<(u32, [u8; 8]), u32> {
    let parse = || -> Result<Result<(u32, [u8; 8]), u32>, Short> {
        let (status, _, mut d) = results(body)?;
        if status != 0 {
            return Ok(Err(status));
        }
        if seq {
            sequence(&mut d)?;
        }
        if let Some(s) = failed_status(&mut d, OP_WRITE)? {
            return Ok(Err(s));
        }
        let count = d.u32()?;
        d.u32()?; // committed
        Ok(Ok((count, d.fixed(8)?.try_into().unwrap())))
    };
    parse().unwrap_or(Err(u32::MAX))
}

/// PUTFH + COMMIT of the whole file (in `session` for 4.1): the write verifier.
pub fn commit(
    c: &mut Conn,
    f: &File,
    session: Option<&mut Session>,
    timeout: Duration,
) -> Result<[u8; 8], String> {
    let r = call(c, session, timeout, 2, |e| {
        e.u32(OP_PUTFH).opaque(&f.fh);
        e.u32(OP_COMMIT).u64(0).u32(0);
    })?;
    let (status, mut d) = r.results()?;
    if status != 0 {
        return Err(status_name(4, status));
    }
    op(&mut d, OP_PUTFH)?;
    op(&mut d, OP_COMMIT)?;
    Ok(d.fixed(8).map_err(short)?.try_into().unwrap())
}

/// PUTFH + CLOSE of the open state (in `session` for 4.1).
pub fn close(
    c: &mut Conn,
    f: &File,
    session: Option<&mut Session>,
    timeout: Duration,
) -> Result<(), String> {
    let r = call(c, session, timeout, 2, |e| {
        e.u32(OP_PUTFH).opaque(&f.fh);
        e.u32(OP_CLOSE).u32(f.seqid).fixed(&f.stateid);
    })?;
    match r.results()? {
        (0, _) => Ok(()),
        (s, _) => Err(status_name(4, s)),
    }
}

/// RENEW the client's lease.
pub fn renew(c: &mut Conn, f: &File, timeout: Duration) -> Result<(), String> {
    let r = call(c, None, timeout, 1, |e| {
        e.u32(OP_RENEW).u64(f.clientid);
    })?;
    match r.results()? {
        (0, _) => Ok(()),
        (s, _) => Err(status_name(4, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(ops: &[(u32, u32)], rest: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        let status = ops.iter().map(|o| o.1).find(|&s| s != 0).unwrap_or(0);
        let mut e = Enc::new(&mut b);
        e.u32(status).string("").u32(ops.len() as u32);
        for (o, s) in ops {
            e.u32(*o).u32(*s);
        }
        b.extend_from_slice(rest);
        b
    }

    #[test]
    fn read_reply_head_and_errors() {
        let mut rest = Vec::new();
        Enc::new(&mut rest).bool(false).u32(3);
        let b = reply(&[(OP_PUTFH, 0), (OP_READ, 0)], &rest);
        for cut in 0..b.len() {
            assert_eq!(read_head(&b[..cut]), Head::More, "cut {cut}");
        }
        assert_eq!(
            read_head(&b),
            Head::Data {
                len: b.len(),
                count: 3
            }
        );
        let stale = reply(&[(OP_PUTFH, 70)], &[]);
        assert_eq!(read_head(&stale), Head::NoData);
        assert_eq!(read_result(&stale, None), Err(70));
        let io = reply(&[(OP_PUTFH, 0), (OP_READ, 5)], &[]);
        assert_eq!(read_head(&io), Head::NoData);
        assert_eq!(read_result(&io, None), Err(5));
    }

    #[test]
    fn write_reply_and_args() {
        let mut rest = Vec::new();
        Enc::new(&mut rest).u32(512).u32(2).fixed(&[8; 8]);
        let b = reply(&[(OP_PUTFH, 0), (OP_WRITE, 0)], &rest);
        assert_eq!(write_result(&b, false), Ok((512, [8; 8])));
        assert_eq!(
            write_result(&reply(&[(OP_PUTFH, 0), (OP_WRITE, 28)], &[]), false),
            Err(28)
        );
        let f = File {
            fh: vec![7; 5],
            stateid: [1; 16],
            clientid: 9,
            seqid: 2,
            size: 0,
            rsize: 4096,
            wsize: 4096,
            fileid: None,
        };
        let mut a = Vec::new();
        encode_write(&mut Enc::new(&mut a), &f, None, 4096, 512, 2);
        let mut d = Dec::new(&a);
        assert_eq!(d.opaque().unwrap(), b"");
        assert_eq!((d.u32(), d.u32(), d.u32()), (Ok(0), Ok(2), Ok(OP_PUTFH)));
        assert_eq!(d.opaque().unwrap(), &[7; 5]);
        assert_eq!(d.u32(), Ok(OP_WRITE));
        assert_eq!(d.fixed(16).unwrap(), &[1; 16]);
        assert_eq!((d.u64(), d.u32(), d.u32()), (Ok(4096), Ok(2), Ok(512)));
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn attributes_follow_the_returned_mask() {
        let mut b = Vec::new();
        let mut vals = Vec::new();
        Enc::new(&mut vals).u32(NF4REG).u64(12345).u64(65536);
        Enc::new(&mut b)
            .u32(1)
            .u32(1 << FATTR4_TYPE | 1 << FATTR4_SIZE | 1 << FATTR4_MAXREAD)
            .opaque(&vals);
        let got = parse_attrs(&mut Dec::new(&b)).unwrap();
        assert_eq!(
            (got.ftype, got.size, got.maxread, got.maxwrite),
            (NF4REG, 12345, 65536, DEFAULT_MAX)
        );
        assert_eq!(got.fileid, None);
        // fileid sits between size and maxread, in attribute order.
        let mut vals = Vec::new();
        Enc::new(&mut vals).u64(7).u64(99).u64(1 << 20);
        let mut b = Vec::new();
        Enc::new(&mut b)
            .u32(1)
            .u32(1 << FATTR4_SIZE | 1 << FATTR4_FILEID | 1 << FATTR4_MAXWRITE)
            .opaque(&vals);
        let got = parse_attrs(&mut Dec::new(&b)).unwrap();
        assert_eq!((got.size, got.fileid, got.maxwrite), (7, Some(99), 1 << 20));
    }
}
