//! NFSv4 COMPOUND framing for both minor versions, and NFSv4.1's SEQUENCE
//! and session slot table (RFC 8881 §2.10.6).
//!
//! A COMPOUND is a tag, a minor version and a list of operations; its reply
//! an overall status (the first failed operation's), the tag and the results
//! up to that failure. In NFSv4.1 every COMPOUND (but the ones that set up
//! or tear down a session) starts with SEQUENCE, which names a slot of the
//! session and that slot's sequence id: one request in flight per slot, the
//! id incremented for each new request on it. A request that fails at
//! SEQUENCE leaves the slot's id where it was. Each SEQUENCE reply names the
//! highest slot the server will still accept and the one it wants the client
//! to stay at or below (target_highest_slotid, §2.10.6.1): new requests use
//! only slots up to the lower of the two, so a server that shrinks the table
//! is followed, and one that grows it back is too (up to the table CREATE_SESSION
//! granted).

use super::rpc::{Conn, NFS_PROG};
use super::status_name;
use super::xdr::{Dec, Enc, Short};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// NFS version 4.
pub const VERS: u32 = 4;
/// The COMPOUND procedure.
pub const COMPOUND: u32 = 1;
/// The SEQUENCE operation.
pub const OP_SEQUENCE: u32 = 53;
/// NFS4ERR_DELAY: try again later.
pub const NFS4ERR_DELAY: u32 = 10008;
/// NFS4ERR_GRACE: the server is in its grace period after a restart and
/// takes only reclaims; anything else is to be sent again later (RFC 8881
/// section 8.4.2, RFC 7530 section 9.6.2).
pub const NFS4ERR_GRACE: u32 = 10013;
/// How long a set-up COMPOUND keeps being sent again while the server
/// answers NFS4ERR_GRACE: past the 90 s lease (and grace period) that knfsd
/// and nfs-ganesha default to, so a server that just started is waited out
/// and one that never leaves its grace period still ends the open.
pub const GRACE_WAIT: Duration = Duration::from_secs(150);
/// The wait between sends while the server answers NFS4ERR_GRACE.
const GRACE_RETRY: Duration = Duration::from_millis(500);
/// NFS4ERR_MINOR_VERS_MISMATCH: the server does not offer the minor version.
pub const NFS4ERR_MINOR_VERS_MISMATCH: u32 = 10021;
/// NFS4ERR_BADSLOT: a slot id past the server's table.
pub const NFS4ERR_BADSLOT: u32 = 10053;
/// NFS4ERR_SEQ_MISORDERED: a sequence id the slot did not expect.
pub const NFS4ERR_SEQ_MISORDERED: u32 = 10063;
/// How often a set-up or tear-down COMPOUND is sent again after NFS4ERR_DELAY.
pub const DELAY_RETRIES: u32 = 10;
/// The wait before the first retry after NFS4ERR_DELAY (doubled each time, at most 1 s).
const DELAY_WAIT: Duration = Duration::from_millis(20);

/// How long to wait before retry `attempt` (0 = the first) after NFS4ERR_DELAY.
pub fn delay_wait(attempt: u32) -> Duration {
    DELAY_WAIT
        .saturating_mul(1 << attempt.min(16))
        .min(Duration::from_secs(1))
}
/// Bytes of a successful SEQUENCE result after its status: sessionid,
/// sequenceid, slotid, highest_slotid, target_highest_slotid, status_flags.
const SEQUENCE_RESOK: usize = 16 + 5 * 4;

/// A malformed reply's error text.
pub fn short(_: Short) -> String {
    "malformed COMPOUND reply (XDR data ends early)".into()
}

/// What a SEQUENCE operation names: the session, the slot and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seq {
    /// The session id.
    pub session: [u8; 16],
    /// The slot.
    pub slot: u32,
    /// The slot's sequence id for this request.
    pub seqid: u32,
    /// The highest slot id with a request in flight, this one included
    /// (sa_highest_slotid).
    pub highest: u32,
}

/// What a successful SEQUENCE reply says of the slot table: the highest slot
/// id the server accepts and the one it wants the client to use at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotLimits {
    /// sr_highest_slotid.
    pub highest: u32,
    /// sr_target_highest_slotid.
    pub target: u32,
}

/// An NFSv4.1 session's fore channel slot table.
#[derive(Clone, Debug)]
pub struct Session {
    /// The session id from CREATE_SESSION.
    pub id: [u8; 16],
    /// The sequence id last used on each slot (0 before the first request).
    seqids: Vec<u32>,
    /// Slots with no request in flight (taken from the end).
    free: Vec<u32>,
    /// The highest slot id new requests may use (what the server's latest
    /// SEQUENCE reply allowed, at most the table's last).
    limit: u32,
    /// The largest request (RPC header included) the server accepts.
    pub max_request: u32,
    /// The largest reply the server sends.
    pub max_response: u32,
}

impl Session {
    /// A session of `slots` slots (what the server granted, at least 1).
    pub fn new(id: [u8; 16], slots: u32, max_request: u32, max_response: u32) -> Session {
        let slots = slots.max(1);
        Session {
            id,
            seqids: vec![0; slots as usize],
            free: (0..slots).rev().collect(),
            limit: slots - 1,
            max_request,
            max_response,
        }
    }

    /// Slots in the table.
    pub fn slots(&self) -> usize {
        self.seqids.len()
    }

    /// Slots with no request in flight that new requests may use (at most
    /// the server's latest limit).
    pub fn free_slots(&self) -> usize {
        // `free` is sorted from the highest slot down.
        self.free.len() - self.free.partition_point(|&s| s > self.limit)
    }

    /// The highest slot id new requests may use now.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Take a free slot for a new request (the lowest free one): its SEQUENCE
    /// arguments, or None when every slot the server allows has a request in
    /// flight.
    pub fn take(&mut self) -> Option<Seq> {
        let slot = *self.free.last()?;
        if slot > self.limit {
            return None;
        }
        self.free.pop();
        let id = &mut self.seqids[slot as usize];
        *id = id.wrapping_add(1);
        Some(Seq {
            session: self.id,
            slot,
            seqid: *id,
            highest: self.highest_in_flight(),
        })
    }

    /// The highest slot id with a request in flight (0 when none is).
    fn highest_in_flight(&self) -> u32 {
        // `free` is sorted from the highest slot down.
        let mut top = self.seqids.len() as u32;
        for &f in &self.free {
            if f + 1 != top {
                break;
            }
            top = f;
        }
        top.saturating_sub(1)
    }

    /// A SEQUENCE reply's limits: new requests use slots up to the lower of
    /// the server's highest and target slot ids, never past the table.
    pub fn follow(&mut self, l: SlotLimits) {
        let last = self.seqids.len() as u32 - 1;
        self.limit = l.highest.min(l.target).min(last);
    }

    /// The reply to the request on `slot` arrived: the slot is free again. If
    /// the request failed at SEQUENCE (`sequenced` false) the server did not
    /// advance the slot, so neither does the client.
    pub fn release(&mut self, slot: u32, sequenced: bool) {
        let Some(id) = self.seqids.get_mut(slot as usize) else {
            return;
        };
        if !sequenced {
            *id = id.wrapping_sub(1);
        }
        debug_assert!(!self.free.contains(&slot), "slot {slot} released twice");
        // Keep the lowest slots in use first (the end of `free`).
        let at = self.free.partition_point(|&s| s > slot);
        self.free.insert(at, slot);
    }
}

/// A COMPOUND4args header for `minor` with `numops` operations, then SEQUENCE
/// when `seq` is given (counted in `numops` here: pass the ops after it).
pub fn begin(e: &mut Enc, minor: u32, seq: Option<&Seq>, numops: u32) {
    e.string("").u32(minor).u32(numops + seq.is_some() as u32);
    if let Some(s) = seq {
        e.u32(OP_SEQUENCE)
            .fixed(&s.session)
            .u32(s.seqid)
            .u32(s.slot)
            .u32(s.highest)
            .bool(false); // cachethis
    }
}

/// A COMPOUND reply: the overall status, how many results it holds, and a
/// decoder at the first result.
pub fn results(body: &[u8]) -> Result<(u32, u32, Dec<'_>), Short> {
    let mut d = Dec::new(body);
    let status = d.u32()?;
    d.opaque()?; // tag
    let n = d.u32()?;
    Ok((status, n, d))
}

/// Read an op result header: Ok(status) for op `op`.
pub fn op(d: &mut Dec, op: u32) -> Result<u32, String> {
    let got = d.u32().map_err(short)?;
    if got != op {
        return Err(format!(
            "COMPOUND reply has op {got} where {op} was expected"
        ));
    }
    d.u32().map_err(short)
}

/// A SEQUENCE result: its status (the rest of a successful one is skipped).
/// `Err` when the reply holds no SEQUENCE result or ends early.
pub fn sequence(d: &mut Dec) -> Result<u32, Short> {
    if d.u32()? != OP_SEQUENCE {
        return Err(Short);
    }
    let status = d.u32()?;
    if status == 0 {
        d.skip(SEQUENCE_RESOK)?;
    }
    Ok(status)
}

/// Whether a reply's SEQUENCE succeeded (the server advanced the slot).
pub fn sequenced(body: &[u8]) -> bool {
    sequence_limits(body).is_some()
}

/// A reply's successful SEQUENCE result: the slot limits it names; None when
/// the SEQUENCE failed or the reply is malformed.
pub fn sequence_limits(body: &[u8]) -> Option<SlotLimits> {
    let (_, n, mut d) = results(body).ok()?;
    if n == 0 || d.u32().ok()? != OP_SEQUENCE || d.u32().ok()? != 0 {
        return None;
    }
    d.skip(16 + 2 * 4).ok()?; // sessionid, sequenceid, slotid
    let highest = d.u32().ok()?;
    let target = d.u32().ok()?;
    d.u32().ok()?; // status_flags
    Some(SlotLimits { highest, target })
}

/// An error at SEQUENCE, with what it means.
pub fn sequence_error(status: u32) -> String {
    let why = match status {
        NFS4ERR_BADSLOT => "the server rejected the slot id (its slot table shrank?)",
        NFS4ERR_SEQ_MISORDERED => "the slot's sequence id is not the one the server expected",
        NFS4ERR_DELAY => "the server stayed busy",
        10052 => "the server does not know the session (it restarted?)",
        _ => "the server rejected the session's SEQUENCE",
    };
    format!("SEQUENCE: {} ({why})", status_name(4, status))
}

/// A set-up or tear-down COMPOUND's reply: its body and whether it
/// started with SEQUENCE.
pub struct Reply {
    body: Vec<u8>,
    seq: bool,
}

impl Reply {
    /// The overall status and a decoder at the first result after SEQUENCE.
    pub fn results(&self) -> Result<(u32, Dec<'_>), String> {
        let (status, _, mut d) = results(&self.body).map_err(short)?;
        if self.seq {
            sequence(&mut d).map_err(short)?;
        }
        Ok((status, d))
    }
}

/// One COMPOUND of `numops` operations encoded by `args` (after SEQUENCE on
/// a free slot of `session`, if given), waiting up to `timeout`; sent again
/// (on a new sequence id) up to [`DELAY_RETRIES`] times while the server
/// answers NFS4ERR_DELAY, and for up to [`GRACE_WAIT`] while it answers
/// NFS4ERR_GRACE (a server that just started: the client waits out its grace
/// period, as RFC 8881 asks). An error at SEQUENCE is an `Err`.
pub fn call(
    c: &mut Conn,
    minor: u32,
    mut session: Option<&mut Session>,
    timeout: Duration,
    numops: u32,
    args: impl Fn(&mut Enc),
) -> Result<Reply, String> {
    let started = std::time::Instant::now();
    let mut delays = 0;
    for _ in 0.. {
        let attempt = delays;
        let seq = match session.as_deref_mut() {
            None => None,
            Some(s) => Some(s.take().ok_or("no free session slot for a set-up call")?),
        };
        let r = c.call(NFS_PROG, VERS, COMPOUND, timeout, |e| {
            begin(e, minor, seq.as_ref(), numops);
            args(e);
        });
        let body = match r {
            Ok(b) => b,
            Err(e) => {
                if let (Some(s), Some(q)) = (session.as_deref_mut(), seq) {
                    s.release(q.slot, false);
                }
                return Err(e.to_string());
            }
        };
        let (status, n, mut d) = results(&body).map_err(short)?;
        let mut failed = status;
        if let (Some(s), Some(q)) = (session.as_deref_mut(), seq) {
            let st = if n == 0 {
                status
            } else {
                sequence(&mut d).map_err(short)?
            };
            s.release(q.slot, st == 0);
            if st != 0 && !(st == NFS4ERR_DELAY && attempt < DELAY_RETRIES) {
                return Err(sequence_error(st));
            }
            failed = if st != 0 { st } else { status };
        }
        if failed == NFS4ERR_DELAY && attempt < DELAY_RETRIES {
            std::thread::sleep(delay_wait(attempt));
            delays += 1;
            continue;
        }
        if failed == NFS4ERR_GRACE && started.elapsed() < GRACE_WAIT {
            std::thread::sleep(GRACE_RETRY);
            continue;
        }
        return Ok(Reply {
            body,
            seq: seq.is_some(),
        });
    }
    unreachable!("the retry loop returns")
}

/// A client owner unique per open (SETCLIENTID's id, EXCHANGE_ID's owner):
/// its verifier and `PREFIX-pid-counter-time`.
pub fn client_owner(prefix: &str) -> ([u8; 8], String) {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let mut verf = [0u8; 8];
    verf[..4].copy_from_slice(&pid.to_be_bytes());
    verf[4..].copy_from_slice(&(nanos as u32 ^ n).to_be_bytes());
    (verf, format!("{prefix}-{pid}-{n}-{nanos}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_sequenced_per_slot_and_never_exceed_the_table() {
        let mut s = Session::new([5; 16], 2, 1 << 20, 1 << 20);
        let a = s.take().unwrap();
        let b = s.take().unwrap();
        assert_eq!((a.slot, a.seqid, a.highest), (0, 1, 0));
        assert_eq!((b.slot, b.seqid), (1, 1));
        assert_eq!(s.take(), None, "only the granted slots");
        s.release(0, true);
        assert_eq!(s.take().map(|q| (q.slot, q.seqid)), Some((0, 2)));
        // A failure at SEQUENCE leaves the slot's id where it was.
        s.release(0, false);
        assert_eq!(s.take().map(|q| (q.slot, q.seqid)), Some((0, 2)));
        s.release(1, true);
        s.release(0, true);
        assert_eq!(s.free_slots(), 2);
        assert_eq!(s.take().map(|q| (q.slot, q.seqid)), Some((0, 3)));
        assert_eq!(Session::new([0; 16], 0, 0, 0).slots(), 1);
    }

    #[test]
    fn highest_names_the_top_slot_in_flight() {
        let mut s = Session::new([5; 16], 4, 1 << 20, 1 << 20);
        assert_eq!(s.take().unwrap().highest, 0);
        assert_eq!(s.take().unwrap().highest, 1);
        assert_eq!(s.take().unwrap().highest, 2);
        s.release(2, true);
        s.release(1, true);
        // Slot 0 still in flight; the new request takes slot 1.
        let q = s.take().unwrap();
        assert_eq!((q.slot, q.highest), (1, 1));
        s.release(0, true);
        // Slot 0 free again, slot 1 in flight: the highest in flight is 1.
        let q = s.take().unwrap();
        assert_eq!((q.slot, q.highest), (0, 1));
    }

    #[test]
    fn the_servers_target_shrinks_and_grows_the_usable_slots() {
        let mut s = Session::new([5; 16], 4, 1 << 20, 1 << 20);
        let taken: Vec<u32> = (0..4).map(|_| s.take().unwrap().slot).collect();
        assert_eq!(taken, [0, 1, 2, 3]);
        // The server wants slot 0 only from now on; requests in flight finish.
        s.follow(SlotLimits {
            highest: 3,
            target: 0,
        });
        for q in [3, 2, 1] {
            s.release(q, true);
            assert_eq!(s.free_slots(), 0);
            assert_eq!(s.take(), None, "slot {q} freed but above the target");
        }
        s.release(0, true);
        assert_eq!(s.take().map(|q| q.slot), Some(0));
        assert_eq!(s.take(), None, "one slot while the target is 0");
        // The highest slot id bounds it as well as the target.
        s.follow(SlotLimits {
            highest: 1,
            target: 7,
        });
        assert_eq!(s.take().map(|q| q.slot), Some(1));
        assert_eq!(s.take(), None);
        // Grown past the table: never beyond what CREATE_SESSION granted.
        s.follow(SlotLimits {
            highest: 63,
            target: 63,
        });
        assert_eq!(s.limit(), 3);
        assert_eq!(s.take().map(|q| q.slot), Some(2));
        assert_eq!(s.take().map(|q| q.slot), Some(3));
        assert_eq!(s.take(), None);
    }

    #[test]
    fn delay_waits_grow_to_a_second() {
        assert_eq!(delay_wait(0), DELAY_WAIT);
        assert_eq!(delay_wait(1), DELAY_WAIT * 2);
        assert_eq!(delay_wait(9), Duration::from_secs(1));
        assert_eq!(delay_wait(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn sequence_round_trip_and_truncation() {
        let seq = Seq {
            session: [3; 16],
            slot: 4,
            seqid: 9,
            highest: 15,
        };
        let mut a = Vec::new();
        begin(&mut Enc::new(&mut a), 1, Some(&seq), 2);
        let mut d = Dec::new(&a);
        assert_eq!(d.opaque().unwrap(), b"");
        assert_eq!((d.u32(), d.u32(), d.u32()), (Ok(1), Ok(3), Ok(OP_SEQUENCE)));
        assert_eq!(d.fixed(16).unwrap(), &[3; 16]);
        let fields: Vec<_> = (0..4).map(|_| d.u32().unwrap()).collect();
        assert_eq!(fields, [9, 4, 15, 0]);
        assert_eq!(d.remaining(), 0);

        // A reply: SEQUENCE ok, then one more op.
        let mut r = Vec::new();
        let mut e = Enc::new(&mut r);
        e.u32(0)
            .string("")
            .u32(2)
            .u32(OP_SEQUENCE)
            .u32(0)
            .fixed(&[3; 16]);
        e.u32(9).u32(4).u32(15).u32(15).u32(0).u32(22).u32(0);
        assert!(sequenced(&r));
        assert_eq!(
            sequence_limits(&r),
            Some(SlotLimits {
                highest: 15,
                target: 15
            })
        );
        let (_, _, mut d) = results(&r).unwrap();
        assert_eq!(sequence(&mut d), Ok(0));
        assert_eq!(op(&mut d, 22), Ok(0));
        let ok_len = r.len() - 8;
        for cut in 0..ok_len {
            assert!(!sequenced(&r[..cut]), "cut {cut}");
        }
        // Failed at SEQUENCE: no resok follows.
        let mut bad = Vec::new();
        Enc::new(&mut bad)
            .u32(NFS4ERR_SEQ_MISORDERED)
            .string("")
            .u32(1)
            .u32(OP_SEQUENCE)
            .u32(NFS4ERR_SEQ_MISORDERED);
        assert!(!sequenced(&bad));
        let (_, _, mut d) = results(&bad).unwrap();
        assert_eq!(sequence(&mut d), Ok(NFS4ERR_SEQ_MISORDERED));
        assert!(sequence_error(NFS4ERR_SEQ_MISORDERED).contains("NFS4ERR_SEQ_MISORDERED"));
        assert!(sequence_error(NFS4ERR_BADSLOT).contains("NFS4ERR_BADSLOT"));
    }
}
