//! NFSv4.1 (RFC 8881) client and session lifetime: EXCHANGE_ID (a client
//! owner unique per open, SP4_NONE), CREATE_SESSION (the fore channel's
//! slot table sized to the queue depth, its largest request and reply to the
//! transfer size), RECLAIM_COMPLETE; BIND_CONN_TO_SESSION for each further
//! connection (nconnect); DESTROY_SESSION and DESTROY_CLIENTID at the end.
//! The file operations are [`super::v4`]'s, each COMPOUND after SEQUENCE.
//!
//! No back channel is asked for: storlab serves no callbacks, so the server
//! grants no delegations.

use super::compound::{self, NFS4ERR_MINOR_VERS_MISMATCH, Session, op, short};
use super::rpc::Conn;
use super::status_name;
use super::xdr::{Dec, Enc, Short};
use std::time::Duration;

const OP_BIND_CONN_TO_SESSION: u32 = 41;
const OP_EXCHANGE_ID: u32 = 42;
const OP_CREATE_SESSION: u32 = 43;
const OP_DESTROY_SESSION: u32 = 44;
const OP_DESTROY_CLIENTID: u32 = 57;
const OP_RECLAIM_COMPLETE: u32 = 58;
/// EXCHGID4_FLAG_USE_NON_PNFS: plain NFS, no pNFS roles.
const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x0001_0000;
/// NFS4ERR_COMPLETE_ALREADY: RECLAIM_COMPLETE was done before.
const NFS4ERR_COMPLETE_ALREADY: u32 = 10054;
/// CDFC4_FORE: bind a connection to the fore channel.
const CDFC4_FORE: u32 = 1;
/// The minor version.
pub const MINOR: u32 = 1;
/// Bytes of a COMPOUND besides READ or WRITE data: the RPC header and
/// credential, SEQUENCE, PUTFH of a handle of up to 128 bytes and the
/// READ/WRITE arguments or results (about 400; rounded up).
pub const OVERHEAD: u32 = 1024;
/// The most operations storlab puts in one COMPOUND (OPEN's: SEQUENCE,
/// PUTFH, a LOOKUP per directory, OPEN, GETFH, GETATTR).
const MAX_OPS: u32 = 64;

/// The fore channel storlab asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Largest request, RPC header included.
    pub max_request: u32,
    /// Largest reply.
    pub max_response: u32,
    /// Largest reply the server keeps in its reply cache (storlab sends cachethis=false).
    pub max_response_cached: u32,
    /// Most operations per COMPOUND.
    pub max_ops: u32,
    /// Slots: requests in flight at once.
    pub max_requests: u32,
}

impl Channel {
    /// `depth` slots, requests and replies large enough for `transfer` bytes of data.
    pub fn for_depth(depth: u32, transfer: u32) -> Channel {
        Channel {
            max_request: transfer + OVERHEAD,
            max_response: transfer + OVERHEAD,
            max_response_cached: 4096,
            max_ops: MAX_OPS,
            max_requests: depth.max(1),
        }
    }

    fn encode(&self, e: &mut Enc) {
        e.u32(0) // headerpadsize
            .u32(self.max_request)
            .u32(self.max_response)
            .u32(self.max_response_cached)
            .u32(self.max_ops)
            .u32(self.max_requests)
            .u32(0); // no RDMA ird
    }

    fn decode(d: &mut Dec) -> Result<Channel, Short> {
        d.u32()?; // headerpadsize
        let c = Channel {
            max_request: d.u32()?,
            max_response: d.u32()?,
            max_response_cached: d.u32()?,
            max_ops: d.u32()?,
            max_requests: d.u32()?,
        };
        let ird = d.u32()?;
        if ird > 1 {
            return Err(Short);
        }
        d.skip(4 * ird as usize)?;
        Ok(c)
    }
}

/// EXCHANGE_ID arguments: owner, flags, SP4_NONE, no implementation id.
pub fn encode_exchange_id(e: &mut Enc, verf: &[u8; 8], owner: &str) {
    e.u32(OP_EXCHANGE_ID)
        .fixed(verf)
        .string(owner)
        .u32(EXCHGID4_FLAG_USE_NON_PNFS)
        .u32(0) // SP4_NONE
        .u32(0); // eia_client_impl_id<1>: none
}

/// An EXCHANGE_ID4resok: (clientid, sequenceid); the state protection must be SP4_NONE.
pub fn decode_exchange_id(d: &mut Dec) -> Result<(u64, u32), String> {
    let clientid = d.u64().map_err(short)?;
    let seq = d.u32().map_err(short)?;
    d.u32().map_err(short)?; // flags
    let how = d.u32().map_err(short)?;
    if how != 0 {
        return Err(format!(
            "EXCHANGE_ID: the server chose state protection {how} where SP4_NONE (0) was asked"
        ));
    }
    d.u64().map_err(short)?; // so_minor_id
    d.opaque().map_err(short)?; // so_major_id
    d.opaque().map_err(short)?; // server scope
    let impls = d.u32().map_err(short)?;
    if impls > 1 {
        return Err("EXCHANGE_ID: malformed server implementation id".into());
    }
    Ok((clientid, seq))
}

/// CREATE_SESSION arguments: no flags, fore channel `fore`, a one-slot back
/// channel, no callback program, AUTH_NONE for callbacks.
pub fn encode_create_session(e: &mut Enc, clientid: u64, seq: u32, fore: &Channel) {
    e.u32(OP_CREATE_SESSION).u64(clientid).u32(seq).u32(0);
    fore.encode(e);
    Channel {
        max_request: 4096,
        max_response: 4096,
        max_response_cached: 0,
        max_ops: 2,
        max_requests: 1,
    }
    .encode(e);
    e.u32(0).u32(1).u32(0); // cb_program, one callback_sec_parms4: AUTH_NONE
}

/// A CREATE_SESSION4resok: (session id, the fore channel granted).
pub fn decode_create_session(d: &mut Dec) -> Result<([u8; 16], Channel), Short> {
    let id: [u8; 16] = d.fixed(16)?.try_into().map_err(|_| Short)?;
    d.u32()?; // sequence
    d.u32()?; // flags
    let fore = Channel::decode(d)?;
    Channel::decode(d)?;
    Ok((id, fore))
}

/// EXCHANGE_ID, CREATE_SESSION with `want` as the fore channel, and
/// RECLAIM_COMPLETE: the client id and the session (its slots and sizes the
/// server's, which may be smaller than asked). `server` names it in errors.
pub fn establish(
    c: &mut Conn,
    server: &str,
    want: &Channel,
    timeout: Duration,
) -> Result<(u64, Session), String> {
    let (verf, owner) = compound::client_owner("storlab-4.1");
    let r = compound::call(c, MINOR, None, timeout, 1, |e| {
        encode_exchange_id(e, &verf, &owner)
    })?;
    let (status, mut d) = r.results()?;
    if status == NFS4ERR_MINOR_VERS_MISMATCH {
        return Err(format!(
            "server {server} does not offer NFSv4.1 (NFS4ERR_MINOR_VERS_MISMATCH): \
             use version=4 (4.0) or version=3"
        ));
    }
    let st = op(&mut d, OP_EXCHANGE_ID)?;
    if st != 0 {
        return Err(format!("EXCHANGE_ID: {}", status_name(4, st)));
    }
    let (clientid, seq) = decode_exchange_id(&mut d)?;
    let r = compound::call(c, MINOR, None, timeout, 1, |e| {
        encode_create_session(e, clientid, seq, want)
    })?;
    let (_, mut d) = r.results()?;
    let st = op(&mut d, OP_CREATE_SESSION)?;
    if st != 0 {
        return Err(format!("CREATE_SESSION: {}", status_name(4, st)));
    }
    let (id, got) = decode_create_session(&mut d).map_err(short)?;
    if got.max_requests == 0 {
        return Err("CREATE_SESSION: the server granted no slots".into());
    }
    let slots = got.max_requests.min(want.max_requests);
    let mut session = Session::new(id, slots, got.max_request, got.max_response);
    let r = compound::call(c, MINOR, Some(&mut session), timeout, 1, |e| {
        e.u32(OP_RECLAIM_COMPLETE).bool(false);
    })?;
    let (_, mut d) = r.results()?;
    match op(&mut d, OP_RECLAIM_COMPLETE)? {
        0 | NFS4ERR_COMPLETE_ALREADY => Ok((clientid, session)),
        st => Err(format!("RECLAIM_COMPLETE: {}", status_name(4, st))),
    }
}

/// BIND_CONN_TO_SESSION: connection `c` carries the session's fore channel.
pub fn bind(c: &mut Conn, session: &Session, timeout: Duration) -> Result<(), String> {
    let r = compound::call(c, MINOR, None, timeout, 1, |e| {
        e.u32(OP_BIND_CONN_TO_SESSION)
            .fixed(&session.id)
            .u32(CDFC4_FORE)
            .bool(false);
    })?;
    let (_, mut d) = r.results()?;
    match op(&mut d, OP_BIND_CONN_TO_SESSION)? {
        0 => Ok(()),
        st => Err(format!("BIND_CONN_TO_SESSION: {}", status_name(4, st))),
    }
}

/// DESTROY_SESSION, then DESTROY_CLIENTID.
pub fn destroy(
    c: &mut Conn,
    clientid: u64,
    session: &Session,
    timeout: Duration,
) -> Result<(), String> {
    let r = compound::call(c, MINOR, None, timeout, 1, |e| {
        e.u32(OP_DESTROY_SESSION).fixed(&session.id);
    })?;
    let (_, mut d) = r.results()?;
    let st = op(&mut d, OP_DESTROY_SESSION)?;
    if st != 0 {
        return Err(format!("DESTROY_SESSION: {}", status_name(4, st)));
    }
    let r = compound::call(c, MINOR, None, timeout, 1, |e| {
        e.u32(OP_DESTROY_CLIENTID).u64(clientid);
    })?;
    let (_, mut d) = r.results()?;
    match op(&mut d, OP_DESTROY_CLIENTID)? {
        0 => Ok(()),
        st => Err(format!("DESTROY_CLIENTID: {}", status_name(4, st))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cut of `b` short of its end fails to decode.
    fn truncations_fail<T: std::fmt::Debug>(b: &[u8], f: impl Fn(&mut Dec) -> Result<T, String>) {
        for cut in 0..b.len() {
            assert!(f(&mut Dec::new(&b[..cut])).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn exchange_id_round_trip() {
        let mut a = Vec::new();
        encode_exchange_id(&mut Enc::new(&mut a), &[1; 8], "own");
        let mut d = Dec::new(&a);
        assert_eq!(d.u32(), Ok(OP_EXCHANGE_ID));
        assert_eq!(d.fixed(8).unwrap(), &[1; 8]);
        assert_eq!(d.string().unwrap(), "own");
        let rest: Vec<_> = (0..3).map(|_| d.u32().unwrap()).collect();
        assert_eq!(rest, [EXCHGID4_FLAG_USE_NON_PNFS, 0, 0]);
        assert_eq!(d.remaining(), 0);

        let mut r = Vec::new();
        let mut e = Enc::new(&mut r);
        e.u64(0x1122_3344_5566_7788).u32(7).u32(0x0001_0000).u32(0);
        e.u64(1).opaque(b"major").opaque(b"scope").u32(1);
        e.string("domain").string("ganesha").u64(0).u32(0);
        let got = decode_exchange_id(&mut Dec::new(&r)).unwrap();
        assert_eq!(got, (0x1122_3344_5566_7788, 7));
        // Up to the implementation id's count (its contents are not read).
        let needed = 8 + 4 + 4 + 4 + 8 + 12 + 12 + 4;
        truncations_fail(&r[..needed], decode_exchange_id);
        // State protection other than SP4_NONE is refused.
        r[19] = 1;
        let e = decode_exchange_id(&mut Dec::new(&r)).unwrap_err();
        assert!(e.contains("SP4_NONE"), "{e}");
    }

    #[test]
    fn create_session_round_trip() {
        let fore = Channel::for_depth(32, 1 << 20);
        assert_eq!(fore.max_requests, 32);
        assert_eq!(fore.max_request, (1 << 20) + OVERHEAD);
        let mut a = Vec::new();
        encode_create_session(&mut Enc::new(&mut a), 9, 3, &fore);
        let mut d = Dec::new(&a);
        assert_eq!(
            (d.u32(), d.u64(), d.u32(), d.u32()),
            (Ok(43), Ok(9), Ok(3), Ok(0))
        );
        assert_eq!(Channel::decode(&mut d), Ok(fore));
        assert_eq!(Channel::decode(&mut d).map(|c| c.max_requests), Ok(1));
        let tail: Vec<_> = (0..3).map(|_| d.u32().unwrap()).collect();
        assert_eq!(tail, [0, 1, 0]);
        assert_eq!(d.remaining(), 0);

        // The reply: id, sequence, flags, fore (granted fewer slots), back.
        let granted = Channel {
            max_requests: 16,
            ..fore
        };
        let mut r = Vec::new();
        let mut e = Enc::new(&mut r);
        e.fixed(&[6; 16]).u32(3).u32(0);
        granted.encode(&mut e);
        Channel::for_depth(1, 4096).encode(&mut e);
        let (id, ch) = decode_create_session(&mut Dec::new(&r)).unwrap();
        assert_eq!((id, ch), ([6; 16], granted));
        truncations_fail(&r, |d| decode_create_session(d).map_err(short));
        // An RDMA ird array longer than its bound of 1 is malformed.
        let mut bad = r.clone();
        bad[16 + 8 + 24..16 + 8 + 28].copy_from_slice(&2u32.to_be_bytes());
        assert!(decode_create_session(&mut Dec::new(&bad)).is_err());
    }
}
