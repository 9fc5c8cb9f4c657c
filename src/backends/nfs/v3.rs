//! NFSv3 (RFC 1813): the portmapper's GETPORT, MOUNT3 MNT, and the NFS
//! procedures a benchmark needs: LOOKUP, CREATE (UNCHECKED), GETATTR, FSINFO,
//! READ, WRITE and COMMIT.
//!
//! Set-up calls are synchronous ([`Conn::call`]); READ and WRITE are only
//! encoded here (into the connection's send buffer) and their replies decoded,
//! so the backend can keep many of them in flight.

use super::rpc::{Conn, Head, MOUNT_PROG, NFS_PROG, PMAP_PROG, PMAP_VERS, RpcError};
use super::xdr::{Dec, Enc, Short};
use super::{SETUP_TIMEOUT, status_name};
use std::time::Duration;

/// NFS version 3.
pub const VERS: u32 = 3;
const MOUNT_VERS: u32 = 3;
const PMAPPROC_GETPORT: u32 = 3;
const MOUNTPROC3_MNT: u32 = 1;
/// NFSv3 procedure numbers (RFC 1813 §3.3), for the I/O path here and the file
/// operations of `meta.rs`.
pub(super) const GETATTR: u32 = 1;
pub(super) const LOOKUP: u32 = 3;
/// The READ procedure.
pub const READ: u32 = 6;
/// The WRITE procedure.
pub const WRITE: u32 = 7;
pub(super) const CREATE: u32 = 8;
pub(super) const MKDIR: u32 = 9;
pub(super) const REMOVE: u32 = 12;
pub(super) const RMDIR: u32 = 13;
pub(super) const RENAME: u32 = 14;
pub(super) const READDIR: u32 = 16;
const FSINFO: u32 = 19;
pub(super) const COMMIT: u32 = 21;
const NFS3ERR_NOENT: u32 = 2;
const NFS3ERR_ACCES: u32 = 13;
const IPPROTO_TCP: u32 = 6;
const NF3REG: u32 = 1;
/// Bytes of an fattr3.
const FATTR3: usize = 84;
/// Bytes of a wcc_attr.
const WCC_ATTR: usize = 24;

/// An open NFSv3 file.
#[derive(Clone, Debug)]
pub struct File {
    /// Its file handle.
    pub fh: Vec<u8>,
    /// Size in bytes at open.
    pub size: u64,
    /// Largest READ the server takes (FSINFO rtmax).
    pub rsize: u32,
    /// Largest WRITE the server takes (FSINFO wtmax).
    pub wsize: u32,
    /// The file's `fileid`.
    pub fileid: u64,
}

fn short(_: Short) -> String {
    "malformed reply (XDR data ends early)".into()
}

/// Ask the portmapper at `host:111` which TCP port serves MOUNT v3.
pub fn mount_port(host: &str) -> Result<u16, String> {
    let mut c = Conn::connect(host, 111, SETUP_TIMEOUT).map_err(|e| {
        format!(
            "cannot reach the portmapper at {host}:111 to find the MOUNT port: {e} \
             (start rpcbind on the server, or give ?mountport=N)"
        )
    })?;
    let body = c
        .call(PMAP_PROG, PMAP_VERS, PMAPPROC_GETPORT, SETUP_TIMEOUT, |e| {
            e.u32(MOUNT_PROG).u32(MOUNT_VERS).u32(IPPROTO_TCP).u32(0);
        })
        .map_err(|e| format!("portmapper at {host}:111: {e}"))?;
    let port = Dec::new(&body).u32().map_err(short)?;
    if port == 0 || port > u16::MAX as u32 {
        return Err(format!(
            "the portmapper at {host}:111 knows no MOUNT v3 over TCP \
             (is the NFS server serving NFSv3? or give ?mountport=N)"
        ));
    }
    Ok(port as u16)
}

/// MOUNT3 MNT of `export` on `host:port`: the export's root file handle.
pub fn mount(host: &str, port: u16, export: &str) -> Result<Vec<u8>, String> {
    let mut c = Conn::connect(host, port, SETUP_TIMEOUT)
        .map_err(|e| format!("cannot connect to the MOUNT service at {host}:{port}: {e}"))?;
    let body = c
        .call(MOUNT_PROG, MOUNT_VERS, MOUNTPROC3_MNT, SETUP_TIMEOUT, |e| {
            e.string(export);
        })
        .map_err(|e| format!("MOUNT at {host}:{port}: {e}"))?;
    let mut d = Dec::new(&body);
    match d.u32().map_err(short)? {
        0 => Ok(d.opaque().map_err(short)?.to_vec()),
        2 => Err(format!(
            "export {export} not found on the server (MNT3ERR_NOENT): check the export path \
             (showmount -e {host})"
        )),
        13 | 1 => Err(format!(
            "export {export} not found or not permitted (MNT3ERR_ACCES): check the export path \
             (showmount -e {host}) and the export's client rules (storlab uses AUTH_SYS uid 0)"
        )),
        n => Err(format!("mounting export {export} failed: MOUNT status {n}")),
    }
}

fn skip_post_op_attr(d: &mut Dec) -> Result<(), Short> {
    if d.bool()? {
        d.skip(FATTR3)?;
    }
    Ok(())
}

fn skip_wcc(d: &mut Dec) -> Result<(), Short> {
    if d.bool()? {
        d.skip(WCC_ATTR)?;
    }
    skip_post_op_attr(d)
}

/// A synchronous NFSv3 call returning (status, decoder after the status).
fn nfs_call(
    c: &mut Conn,
    proc_: u32,
    args: impl FnOnce(&mut Enc),
) -> Result<(u32, Vec<u8>), String> {
    let body = c
        .call(NFS_PROG, VERS, proc_, SETUP_TIMEOUT, args)
        .map_err(|e| e.to_string())?;
    let status = Dec::new(&body).u32().map_err(short)?;
    Ok((status, body))
}

/// A call whose one argument is the file handle `fh`; a status other than
/// OK fails naming `what`. Returns the reply from its status on.
fn fh_call(c: &mut Conn, proc_: u32, fh: &[u8], what: &str) -> Result<Vec<u8>, String> {
    let (status, body) = nfs_call(c, proc_, |e| {
        e.opaque(fh);
    })?;
    if status != 0 {
        return Err(failed(what, status));
    }
    Ok(body)
}

/// What went wrong with `what`, for a status other than NOENT.
fn failed(what: &str, status: u32) -> String {
    match status {
        NFS3ERR_ACCES | 1 => format!(
            "{what}: permission denied ({}): check the export's access rules \
             (storlab uses AUTH_SYS uid 0, which the server may squash)",
            status_name(3, status)
        ),
        s => format!("{what}: {}", status_name(3, s)),
    }
}

/// LOOKUP `name` in `dir`: Ok(Some(fh)), Ok(None) when it does not exist.
fn lookup(c: &mut Conn, dir: &[u8], name: &str) -> Result<Option<Vec<u8>>, String> {
    let (status, body) = nfs_call(c, LOOKUP, |e| {
        e.opaque(dir).string(name);
    })?;
    match status {
        0 => {
            let mut d = Dec::new(&body[4..]);
            Ok(Some(d.opaque().map_err(short)?.to_vec()))
        }
        NFS3ERR_NOENT => Ok(None),
        s => Err(failed(&format!("looking up {name:?}"), s)),
    }
}

/// CREATE `name` in `dir`, UNCHECKED (an existing file is kept), mode 0644.
fn create(c: &mut Conn, dir: &[u8], name: &str) -> Result<Vec<u8>, String> {
    let (status, body) = nfs_call(c, CREATE, |e| {
        e.opaque(dir).string(name).u32(0); // UNCHECKED
        // sattr3: mode 0644, uid, gid, size, atime, mtime left alone.
        e.bool(true)
            .u32(0o644)
            .bool(false)
            .bool(false)
            .bool(false)
            .u32(0)
            .u32(0);
    })?;
    if status != 0 {
        return Err(failed(&format!("creating {name:?}"), status));
    }
    let mut d = Dec::new(&body[4..]);
    if d.bool().map_err(short)? {
        return Ok(d.opaque().map_err(short)?.to_vec());
    }
    // No handle in the reply: look it up.
    lookup(c, dir, name)?.ok_or_else(|| format!("{name:?} vanished right after CREATE"))
}

/// What GETATTR tells of a file (fattr3, RFC 1813 §2.6).
struct Fattr {
    ftype: u32,
    size: u64,
    fileid: u64,
}

/// GETATTR: type, size and fileid.
fn getattr(c: &mut Conn, fh: &[u8]) -> Result<Fattr, String> {
    let body = fh_call(c, GETATTR, fh, "reading the file's attributes")?;
    let mut d = Dec::new(&body[4..]);
    let ftype = d.u32().map_err(short)?;
    d.skip(16).map_err(short)?; // mode, nlink, uid, gid
    let size = d.u64().map_err(short)?;
    d.skip(24).map_err(short)?; // used, rdev, fsid
    let fileid = d.u64().map_err(short)?;
    Ok(Fattr {
        ftype,
        size,
        fileid,
    })
}

/// FSINFO: (rtmax, wtmax).
fn fsinfo(c: &mut Conn, fh: &[u8]) -> Result<(u32, u32), String> {
    let body = fh_call(c, FSINFO, fh, "FSINFO")?;
    let mut d = Dec::new(&body[4..]);
    skip_post_op_attr(&mut d).map_err(short)?;
    let rtmax = d.u32().map_err(short)?;
    d.skip(8).map_err(short)?; // rtpref, rtmult
    let wtmax = d.u32().map_err(short)?;
    Ok((rtmax, wtmax))
}

/// Look up (or, when `create` is set, create) `path` under the export root.
pub fn open(
    c: &mut Conn,
    root: &[u8],
    export: &str,
    path: &str,
    create_missing: bool,
) -> Result<File, String> {
    c.set_read_head(read_head);
    let comps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (name, dirs) = comps.split_last().ok_or("no file name")?;
    let mut dir = root.to_vec();
    for d in dirs {
        dir = lookup(c, &dir, d)?.ok_or_else(|| {
            format!("directory {d:?} of {path} does not exist in export {export} (NFS3ERR_NOENT): create it first")
        })?;
    }
    let fh = match lookup(c, &dir, name)? {
        Some(fh) => fh,
        None if create_missing => create(c, &dir, name)?,
        None => {
            return Err(format!(
                "file {path} does not exist in export {export} (NFS3ERR_NOENT); a read-only run \
                 does not create it: write it first (a write workload creates it)"
            ));
        }
    };
    let a = getattr(c, &fh)?;
    if a.ftype != NF3REG {
        return Err(format!(
            "{path} is not a regular file (NFSv3 type {})",
            a.ftype
        ));
    }
    let (rsize, wsize) = fsinfo(c, &fh)?;
    Ok(File {
        fh,
        size: a.size,
        fileid: a.fileid,
        rsize: rsize.max(4096),
        wsize: wsize.max(4096),
    })
}

/// READ3args.
pub fn encode_read(e: &mut Enc, f: &File, offset: u64, count: u32) {
    e.opaque(&f.fh).u64(offset).u32(count);
}

/// WRITE3args up to the data's length word (the data follows as payload).
pub fn encode_write(e: &mut Enc, f: &File, offset: u64, count: u32, stable: u32) {
    e.opaque(&f.fh)
        .u64(offset)
        .u32(count)
        .u32(stable)
        .u32(count);
}

/// Where the data of a READ3res starts.
pub fn read_head(b: &[u8]) -> Head {
    let mut d = Dec::new(b);
    let parse = |d: &mut Dec| -> Result<Head, Short> {
        if d.u32()? != 0 {
            return Ok(Head::NoData);
        }
        skip_post_op_attr(d)?;
        d.skip(8)?; // count, eof
        let count = d.u32()?;
        Ok(Head::Data {
            len: d.pos(),
            count,
        })
    };
    parse(&mut d).unwrap_or(Head::More)
}

/// A READ reply: Ok(bytes) or Err(NFS status; `u32::MAX` for a malformed reply).
pub fn read_result(body: &[u8], data: Option<u32>) -> Result<u32, u32> {
    if let Some(n) = data {
        return Ok(n);
    }
    match Dec::new(body).u32() {
        Ok(0) | Err(_) => Err(u32::MAX),
        Ok(s) => Err(s),
    }
}

/// A WRITE reply: Ok((count, verifier)) or Err(status; `u32::MAX` if malformed).
pub fn write_result(body: &[u8]) -> Result<(u32, [u8; 8]), u32> {
    let mut d = Dec::new(body);
    let parse = |d: &mut Dec| -> Result<Result<(u32, [u8; 8]), u32>, Short> {
        let status = d.u32()?;
        if status != 0 {
            return Ok(Err(status));
        }
        skip_wcc(d)?;
        let count = d.u32()?;
        d.u32()?; // committed
        let verf = d.fixed(8)?.try_into().unwrap();
        Ok(Ok((count, verf)))
    };
    parse(&mut d).unwrap_or(Err(u32::MAX))
}

/// COMMIT the whole file: the write verifier.
pub fn commit(c: &mut Conn, f: &File, timeout: Duration) -> Result<[u8; 8], String> {
    let body = c
        .call(NFS_PROG, VERS, COMMIT, timeout, |e| {
            e.opaque(&f.fh).u64(0).u32(0);
        })
        .map_err(|e: RpcError| e.to_string())?;
    let mut d = Dec::new(&body);
    let status = d.u32().map_err(short)?;
    if status != 0 {
        return Err(status_name(3, status));
    }
    skip_wcc(&mut d).map_err(short)?;
    Ok(d.fixed(8).map_err(short)?.try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_reply_head_and_results() {
        let mut b = Vec::new();
        let mut e = Enc::new(&mut b);
        e.u32(0)
            .bool(true)
            .fixed(&[0; FATTR3])
            .u32(5)
            .bool(true)
            .u32(5);
        let len = b.len();
        b.extend_from_slice(b"hello\0\0\0");
        for cut in 0..len {
            assert_eq!(read_head(&b[..cut]), Head::More, "cut {cut}");
        }
        assert_eq!(read_head(&b), Head::Data { len, count: 5 });
        assert_eq!(read_head(&[0, 0, 0, 70]), Head::NoData);
        assert_eq!(read_result(&[0, 0, 0, 70, 0, 0, 0, 0], None), Err(70));
        assert_eq!(read_result(&b[..len], Some(5)), Ok(5));

        let mut w = Vec::new();
        Enc::new(&mut w)
            .u32(0)
            .bool(true)
            .fixed(&[0; WCC_ATTR])
            .bool(false)
            .u32(4096)
            .u32(2)
            .fixed(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(write_result(&w), Ok((4096, [1, 2, 3, 4, 5, 6, 7, 8])));
        assert_eq!(
            write_result(&[0, 0, 0, 28, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(28)
        );
        assert_eq!(write_result(&w[..10]), Err(u32::MAX));
    }

    #[test]
    fn write_args_layout() {
        let f = File {
            fh: vec![1, 2, 3],
            size: 0,
            rsize: 4096,
            wsize: 4096,
            fileid: 0,
        };
        let mut b = Vec::new();
        encode_write(&mut Enc::new(&mut b), &f, 8192, 512, 2);
        let mut d = Dec::new(&b);
        assert_eq!(d.opaque().unwrap(), &[1, 2, 3]);
        assert_eq!(d.u64().unwrap(), 8192);
        assert_eq!((d.u32(), d.u32(), d.u32()), (Ok(512), Ok(2), Ok(512)));
        assert_eq!(d.remaining(), 0);
    }
}
