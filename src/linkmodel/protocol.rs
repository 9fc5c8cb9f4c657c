//! The messages one I/O makes, per protocol over TCP: iSCSI PDUs, ONC RPC
//! records of NFS, NBD requests and replies. Sizes are their XDR or wire
//! encodings; the header fields' sources are given with each constant.

use super::{Dir, Exchange};

/// iSCSI Basic Header Segment: RFC 7143 section 11.2.1. No AHS is used by
/// READ/WRITE(10/16) CDBs of 16 bytes or less, and no digests are assumed
/// (HeaderDigest and DataDigest default to None, section 13.1).
pub const ISCSI_BHS: u64 = 48;
/// ONC RPC record marking: one 4-byte fragment header per record, each
/// message one fragment (RFC 5531 section 11). storlab's client sends every
/// call as one fragment; ganesha's replies of up to 1 MiB are one fragment.
pub const RPC_RECORD_MARK: u64 = 4;
/// AUTH_SYS credential body as storlab's client sends it: stamp 4,
/// machinename "storlab" (4 + 7 padded to 8), uid 4, gid 4, no auxiliary gids
/// (4): RFC 5531 appendix A. A kernel client sends its host name and groups.
pub const AUTH_SYS_BODY: u64 = 4 + (4 + 8) + 4 + 4 + 4;
/// RPC call header: xid, msg_type, rpcvers, prog, vers, proc (6 x 4), the
/// credential (flavor, length, body) and an AUTH_NONE verifier (flavor,
/// length 0): RFC 5531 section 9.
pub const RPC_CALL_HEADER: u64 = 6 * 4 + (8 + AUTH_SYS_BODY) + 8;
/// RPC accepted reply header: xid, msg_type, reply_stat, an AUTH_NONE
/// verifier (8), accept_stat: RFC 5531 section 9.
pub const RPC_REPLY_HEADER: u64 = 3 * 4 + 8 + 4;
/// File handle length. Handles are the server's (RFC 1813: up to 64 bytes;
/// RFC 7530: up to 128); nfs-ganesha 4.3's VFS FSAL gave the lab's file a
/// 28-byte v3 handle and a 27-byte v4 one (padded to 28), read from the
/// READ calls storlab sent. Handles travel only in calls: a READ's rate does
/// not depend on them; a 4 KiB WRITE's falls by 1.5% with a handle 64 bytes
/// longer, a 64 KiB WRITE's by 0.1%.
pub const FILE_HANDLE: u64 = 28;
/// fattr3: type, mode, nlink, uid, gid (5 x 4), size, used, rdev, fsid,
/// fileid, atime, mtime, ctime (8 x 8): RFC 1813 section 2.5.
pub const FATTR3: u64 = 5 * 4 + 8 * 8;
/// post_op_attr with attributes (a boolean, then fattr3): RFC 1813 section
/// 2.5. Ganesha returns them after every READ and WRITE.
pub const POST_OP_ATTR: u64 = 4 + FATTR3;
/// pre_op_attr with wcc_attr (size, mtime, ctime): RFC 1813 section 2.5.
pub const PRE_OP_ATTR: u64 = 4 + 8 + 8 + 8;
/// Largest READ or WRITE: nfs-ganesha's default MaxRead and MaxWrite and the
/// Linux client's largest rsize/wsize, 1 MiB; larger I/Os take several RPCs.
pub const NFS_MAX_IO: u64 = 1 << 20;
/// NFSv4.1 SEQUENCE arguments: sessionid 16, sequenceid, slotid,
/// highest_slotid, cachethis (4 x 4): RFC 8881 section 18.46.
pub const SEQUENCE_ARGS: u64 = 16 + 4 * 4;
/// NFSv4.1 SEQUENCE result: sessionid 16, sequenceid, slotid,
/// highest_slotid, target_highest_slotid, status_flags (5 x 4): RFC 8881
/// section 18.46.
pub const SEQUENCE_RES: u64 = 16 + 5 * 4;
/// NFSv4 stateid: seqid 4 and other 12: RFC 7530 section 9.1.4.
pub const STATEID: u64 = 16;
/// NBD request header: magic 4, flags 2, type 2, cookie 8, offset 8,
/// length 4 (the NBD protocol, "Transmission phase", request message).
pub const NBD_REQUEST: u64 = 28;
/// NBD simple reply: magic 4, error 4, cookie 8 (NBD protocol, simple reply).
pub const NBD_SIMPLE_REPLY: u64 = 16;
/// NBD structured reply chunk header: magic 4, flags 2, type 2, cookie 8,
/// length 4 (NBD protocol, structured reply chunk).
pub const NBD_CHUNK_HEADER: u64 = 20;
/// The offset before the data of an NBD_REPLY_TYPE_OFFSET_DATA chunk; nbdkit
/// sends a dense read as one such chunk with the DONE flag.
pub const NBD_OFFSET: u64 = 8;
/// Largest NBD request a client should send without the server's block size
/// constraints: 32 MiB (NBD protocol, "Block size constraints").
pub const NBD_MAX_IO: u64 = 32 << 20;

/// XDR pads opaque data to 4 bytes (RFC 4506 section 4.10); so does iSCSI's
/// data segment (RFC 7143 section 11.2).
pub fn pad4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// The login keys an iSCSI session runs with (RFC 7143 section 13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IscsiParams {
    /// Where these values come from.
    pub source: &'static str,
    /// MaxRecvDataSegmentLength the initiator declares: the largest Data-In.
    pub initiator_mrdsl: u64,
    /// MaxRecvDataSegmentLength the target declares: the largest immediate
    /// data and Data-Out.
    pub target_mrdsl: u64,
    /// FirstBurstLength: unsolicited data (immediate and Data-Out) at most.
    pub first_burst: u64,
    /// MaxBurstLength: the data one R2T asks for at most.
    pub max_burst: u64,
    /// ImmediateData: a write's command PDU carries its first data.
    pub immediate_data: bool,
    /// InitialR2T: no unsolicited Data-Out before the first R2T.
    pub initial_r2t: bool,
    /// The target puts a read's status in its last Data-In (section 11.7.4)
    /// instead of sending a SCSI Response PDU.
    pub status_in_data_in: bool,
}

impl IscsiParams {
    /// What libiscsi 1.19 (storlab's initiator) and tgt 1.0.85 (the lab's
    /// target) negotiate: libiscsi declares MaxRecvDataSegmentLength 262144
    /// and asks for InitialR2T=No, ImmediateData=Yes, FirstBurstLength and
    /// MaxBurstLength 262144 (lib/init.c); tgt declares 8192 and keeps
    /// InitialR2T=Yes, FirstBurstLength 65536, MaxBurstLength 262144
    /// (usr/iscsi/target.c). InitialR2T is an OR, the burst lengths a
    /// minimum. tgt collapses GOOD status into the final Data-In
    /// (usr/iscsi/iscsid.c). The model's iSCSI rows use these.
    pub const LAB: IscsiParams = IscsiParams {
        source: "libiscsi 1.19 initiator with tgt 1.0.85 target (negotiated)",
        initiator_mrdsl: 262_144,
        target_mrdsl: 8192,
        first_burst: 65_536,
        max_burst: 262_144,
        immediate_data: true,
        initial_r2t: true,
        status_in_data_in: true,
    };

    /// RFC 7143's defaults (section 13): 8192-byte data segments both ways,
    /// InitialR2T=Yes, ImmediateData=Yes, FirstBurstLength 65536,
    /// MaxBurstLength 262144; a separate SCSI Response after a read's data.
    pub const RFC7143_DEFAULTS: IscsiParams = IscsiParams {
        source: "RFC 7143 section 13 defaults",
        initiator_mrdsl: 8192,
        target_mrdsl: 8192,
        first_burst: 65_536,
        max_burst: 262_144,
        immediate_data: true,
        initial_r2t: true,
        status_in_data_in: false,
    };
}

/// Cut `bytes` into PDUs of at most `max` data bytes, each behind a BHS.
fn pdus(ex: &mut super::Messages, bytes: u64, max: u64) {
    ex.push(bytes / max, ISCSI_BHS + max);
    if bytes % max > 0 {
        ex.push(1, ISCSI_BHS + pad4(bytes % max));
    }
}

/// One iSCSI READ or WRITE of `io` bytes under `p`.
pub fn iscsi(io: u64, dir: Dir, p: &IscsiParams) -> Exchange {
    let mut ex = Exchange::default();
    match dir {
        Dir::Read => {
            ex.ctrl.push(1, ISCSI_BHS); // SCSI Command (section 11.3)
            pdus(&mut ex.data, io, p.initiator_mrdsl); // Data-In (11.7)
            if !p.status_in_data_in {
                ex.data.push(1, ISCSI_BHS); // SCSI Response (11.4)
            }
        }
        Dir::Write => {
            let immediate = if p.immediate_data {
                io.min(p.first_burst).min(p.target_mrdsl)
            } else {
                0
            };
            ex.data.push(1, ISCSI_BHS + pad4(immediate));
            let unsolicited = if p.initial_r2t {
                0
            } else {
                p.first_burst.min(io) - immediate
            };
            pdus(&mut ex.data, unsolicited, p.target_mrdsl);
            // The rest in bursts, each asked for by an R2T (section 11.8).
            let mut left = io - immediate - unsolicited;
            while left > 0 {
                let burst = left.min(p.max_burst);
                ex.ctrl.push(1, ISCSI_BHS);
                pdus(&mut ex.data, burst, p.target_mrdsl);
                left -= burst;
            }
            ex.ctrl.push(1, ISCSI_BHS); // SCSI Response
        }
    }
    ex
}

/// Which NFS dialect's messages to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nfs {
    /// NFSv3 READ/WRITE (RFC 1813).
    V3,
    /// NFSv4.0 COMPOUND of PUTFH and READ/WRITE (RFC 7530), as storlab sends.
    V40,
    /// NFSv4.1 COMPOUND of SEQUENCE, PUTFH and READ/WRITE (RFC 8881).
    V41,
}

/// Call and reply bytes of one NFS READ or WRITE RPC, record marks
/// included, without the data itself: (call, reply).
fn nfs_rpc(v: Nfs, dir: Dir) -> (u64, u64) {
    let call = RPC_RECORD_MARK + RPC_CALL_HEADER;
    let reply = RPC_RECORD_MARK + RPC_REPLY_HEADER;
    let fh = 4 + pad4(FILE_HANDLE);
    match v {
        Nfs::V3 => match dir {
            // READ3args: fh, offset, count. READ3resok: status,
            // post_op_attr, count, eof, data length (RFC 1813 3.3.6).
            Dir::Read => (call + fh + 8 + 4, reply + 4 + POST_OP_ATTR + 4 + 4 + 4),
            // WRITE3args: fh, offset, count, stable, data length. WRITE3resok:
            // status, wcc_data, count, committed, verifier (RFC 1813 3.3.7).
            Dir::Write => (
                call + fh + 8 + 4 + 4 + 4,
                reply + 4 + PRE_OP_ATTR + POST_OP_ATTR + 4 + 4 + 8,
            ),
        },
        Nfs::V40 | Nfs::V41 => {
            // COMPOUND4args: empty tag, minorversion, op count; results:
            // status, empty tag, result count (RFC 7530 section 16.2).
            let (mut c, mut r) = (call + 4 + 4 + 4, reply + 4 + 4 + 4);
            if v == Nfs::V41 {
                c += 4 + SEQUENCE_ARGS;
                r += 4 + 4 + SEQUENCE_RES;
            }
            c += 4 + fh; // PUTFH (RFC 7530 section 16.20)
            r += 4 + 4;
            match dir {
                // READ4args: stateid, offset, count; READ4resok: eof, data
                // length (RFC 7530 section 16.23).
                Dir::Read => (c + 4 + STATEID + 8 + 4, r + 4 + 4 + 4 + 4),
                // WRITE4args: stateid, offset, stable, data length;
                // WRITE4resok: count, committed, verifier (section 16.36).
                Dir::Write => (c + 4 + STATEID + 8 + 4 + 4, r + 4 + 4 + 4 + 4 + 8),
            }
        }
    }
}

/// One NFS READ or WRITE of `io` bytes: RPCs of at most [`NFS_MAX_IO`].
pub fn nfs(io: u64, dir: Dir, v: Nfs) -> Exchange {
    let mut ex = Exchange::default();
    for (count, n) in split(io, NFS_MAX_IO) {
        let (call, reply) = nfs_rpc(v, dir);
        match dir {
            Dir::Read => {
                ex.ctrl.push(count, call);
                ex.data.push(count, reply + pad4(n));
            }
            Dir::Write => {
                ex.data.push(count, call + pad4(n));
                ex.ctrl.push(count, reply);
            }
        }
    }
    ex
}

/// One NBD read or write of `io` bytes: requests of at most [`NBD_MAX_IO`];
/// read replies simple, or one structured OFFSET_DATA chunk when
/// `structured`; write replies are simple either way (nbdkit sends
/// structured replies only for reads and errors).
pub fn nbd(io: u64, dir: Dir, structured: bool) -> Exchange {
    let mut ex = Exchange::default();
    let read_reply = if structured {
        NBD_CHUNK_HEADER + NBD_OFFSET
    } else {
        NBD_SIMPLE_REPLY
    };
    for (count, n) in split(io, NBD_MAX_IO) {
        match dir {
            Dir::Read => {
                ex.ctrl.push(count, NBD_REQUEST);
                ex.data.push(count, read_reply + n);
            }
            Dir::Write => {
                ex.data.push(count, NBD_REQUEST + n);
                ex.ctrl.push(count, NBD_SIMPLE_REPLY);
            }
        }
    }
    ex
}

/// `io` as runs of (count, size) requests of at most `max` bytes.
fn split(io: u64, max: u64) -> Vec<(u64, u64)> {
    let mut runs = vec![(io / max, max)];
    if io % max > 0 {
        runs.push((1, io % max));
    }
    runs.retain(|&(n, _)| n > 0);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_headers() {
        assert_eq!(AUTH_SYS_BODY, 28);
        assert_eq!(RPC_CALL_HEADER, 68);
        assert_eq!(RPC_REPLY_HEADER, 24);
        // Linux's NFS3_POST_OP_ATTR_WORDS is 22 (88 bytes).
        assert_eq!(POST_OP_ATTR, 88);
        assert_eq!(nfs_rpc(Nfs::V3, Dir::Read), (116, 132));
        assert_eq!(nfs_rpc(Nfs::V3, Dir::Write), (124, 164));
        assert_eq!(nfs_rpc(Nfs::V40, Dir::Read), (152, 64));
        // v4.1's SEQUENCE adds 36 bytes to the call and 44 to the reply.
        assert_eq!(nfs_rpc(Nfs::V41, Dir::Read), (188, 108));
        assert_eq!(nfs_rpc(Nfs::V40, Dir::Write), (156, 72));
    }

    #[test]
    fn nfs_splits_at_the_largest_rpc() {
        let ex = nfs(3 << 20 | 4096, Dir::Read, Nfs::V3);
        assert_eq!(ex.ctrl.count(), 4);
        assert_eq!(ex.data.bytes(), (3 << 20 | 4096) + 4 * 132);
        let ex = nfs(4096, Dir::Write, Nfs::V40);
        assert_eq!(ex.data.bytes(), 4096 + 156);
        assert_eq!(ex.ctrl.bytes(), 72);
    }

    #[test]
    fn iscsi_read_with_lab_and_rfc_keys() {
        // The lab: one Data-In of 64 KiB carrying the status.
        let ex = iscsi(65536, Dir::Read, &IscsiParams::LAB);
        assert_eq!(ex.data.count(), 1);
        assert_eq!(ex.data.bytes(), 65536 + 48);
        assert_eq!(ex.ctrl.bytes(), 48);
        // RFC defaults: 8 Data-In of 8 KiB and a SCSI Response.
        let ex = iscsi(65536, Dir::Read, &IscsiParams::RFC7143_DEFAULTS);
        assert_eq!(ex.data.count(), 9);
        assert_eq!(ex.data.bytes(), 65536 + 9 * 48);
    }

    #[test]
    fn iscsi_write_immediate_then_r2t_bursts() {
        // 64 KiB: 8 KiB immediate, one R2T for the rest in 7 Data-Out.
        let ex = iscsi(65536, Dir::Write, &IscsiParams::LAB);
        assert_eq!(ex.data.count(), 8);
        assert_eq!(ex.data.bytes(), 65536 + 8 * 48);
        assert_eq!(ex.ctrl.count(), 2, "R2T and SCSI Response");
        // 1 MiB: the 1040384 bytes after the immediate data take 4 bursts.
        let ex = iscsi(1 << 20, Dir::Write, &IscsiParams::LAB);
        assert_eq!(ex.ctrl.count(), 5);
        assert_eq!(ex.data.count(), 128);
        // 4 KiB fits in the command PDU: no R2T.
        let ex = iscsi(4096, Dir::Write, &IscsiParams::LAB);
        assert_eq!((ex.data.count(), ex.ctrl.count()), (1, 1));
        // InitialR2T=No sends unsolicited Data-Out up to FirstBurstLength.
        let p = IscsiParams {
            initial_r2t: false,
            ..IscsiParams::LAB
        };
        let ex = iscsi(65536, Dir::Write, &p);
        assert_eq!(ex.ctrl.count(), 1, "no R2T: the first burst covers it");
    }

    #[test]
    fn nbd_headers() {
        let ex = nbd(65536, Dir::Read, false);
        assert_eq!((ex.data.bytes(), ex.ctrl.bytes()), (65552, 28));
        let ex = nbd(65536, Dir::Read, true);
        assert_eq!(ex.data.bytes(), 65536 + 28);
        let ex = nbd(65536, Dir::Write, true);
        assert_eq!((ex.data.bytes(), ex.ctrl.bytes()), (65564, 16));
        assert_eq!(nbd(64 << 20, Dir::Read, false).ctrl.count(), 2);
    }
}
