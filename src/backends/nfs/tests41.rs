//! The NFSv4.1 client against a strict fake server on 127.0.0.1: it grants
//! fewer slots than asked and checks every SEQUENCE (slot inside the
//! grant, sequence id exactly one past the slot's last, seqid-0 stateids on
//! READ and WRITE, SEQUENCE first in every COMPOUND but the session's own),
//! keeps the file's bytes, and can answer NFS4ERR_DELAY, break a slot's
//! sequence or shrink its slot table.

use super::compound::{NFS4ERR_BADSLOT, NFS4ERR_DELAY, NFS4ERR_GRACE, NFS4ERR_SEQ_MISORDERED};
use super::xdr::{Dec, Enc, Short};
use super::*;
use crate::io::{BufferPool, Lane};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

const FILE_SIZE: usize = 4 << 20;
const SESSION: [u8; 16] = [9; 16];
const STATEID_OTHER: [u8; 12] = [7; 12];

/// What the server does wrong on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// The first N READs / WRITEs get NFS4ERR_DELAY, alternately at SEQUENCE
    /// (the slot not advanced) and at the READ / WRITE (advanced).
    DelayFirst(u32),
    /// Every READ / WRITE gets NFS4ERR_DELAY at SEQUENCE.
    DelayAlways,
    /// The first N OPENs get NFS4ERR_GRACE (a server that just started).
    GraceOpens(u32),
    /// After N READs / WRITEs, slot 0 expects a sequence id 5 ahead.
    Misorder(u32),
    /// After N READs / WRITEs, only slot 0 exists.
    Shrink(u32),
    /// After N READs / WRITEs, the replies ask the client to use slot 0 only
    /// (target_highest_slotid 0; the table itself stays).
    Target(u32),
}

#[derive(Default)]
struct State {
    granted: u32,
    fault: Option<Fault>,
    seqids: Vec<u32>,
    file: Vec<u8>,
    io: u32,
    delays: u32,
    graces: u32,
    max_slot: u32,
    bound: u32,
    session_destroyed: bool,
    client_destroyed: bool,
    /// What the client did against the protocol.
    violations: Vec<String>,
}

/// One op's result, appended to `out`; its status.
fn do_op(st: &mut State, op: u32, d: &mut Dec, first: bool, out: &mut Enc) -> Result<u32, Short> {
    let fault = st.fault.unwrap_or(Fault::None);
    let session_op = matches!(op, 41..=44 | 57);
    if first && !session_op && op != 53 {
        st.violations
            .push(format!("COMPOUND starts with op {op}, not SEQUENCE"));
    }
    out.u32(op);
    let status = match op {
        42 => {
            d.fixed(8)?;
            d.opaque()?;
            d.skip(8)?;
            if d.u32()? != 0 {
                return Err(Short);
            }
            out.u32(0).u64(0x42).u32(1).u32(0x0001_0000).u32(0);
            out.u64(0).opaque(b"fake").opaque(b"fake").u32(0);
            return Ok(0);
        }
        43 => {
            d.skip(16)?;
            let want: Vec<u32> = (0..6).map(|_| d.u32()).collect::<Result<_, _>>()?;
            d.skip(4 * d.clone().u32()? as usize + 4)?;
            d.skip(28)?; // back channel
            d.skip(4)?;
            let n = d.u32()?;
            d.skip(4 * n as usize)?;
            st.granted = st.granted.min(want[5]);
            st.seqids = vec![0; st.granted as usize];
            out.u32(0).fixed(&SESSION).u32(1).u32(0);
            out.u32(0).u32(want[1]).u32(want[2]).u32(0).u32(want[4]);
            out.u32(st.granted).u32(0);
            out.u32(0).u32(4096).u32(4096).u32(0).u32(2).u32(1).u32(0);
            return Ok(0);
        }
        53 => return sequence(st, d, fault, out),
        58 => {
            d.u32()?;
            0
        }
        24 => 0,
        15 => {
            d.opaque()?;
            0
        }
        10 => {
            out.u32(0).opaque(b"FILE");
            return Ok(0);
        }
        22 => {
            d.opaque()?;
            0
        }
        18 => {
            d.skip(12 + 8)?;
            d.opaque()?;
            if d.u32()? == 1 {
                match d.u32()? {
                    0 | 1 => {
                        let n = d.u32()?;
                        d.skip(4 * n as usize)?;
                        d.opaque()?;
                    }
                    _ => d.skip(8)?,
                }
            }
            d.u32()?;
            d.opaque()?;
            if let Fault::GraceOpens(n) = fault
                && st.graces < n
            {
                st.graces += 1;
                out.u32(NFS4ERR_GRACE);
                return Ok(NFS4ERR_GRACE);
            }
            out.u32(0).u32(1).fixed(&STATEID_OTHER);
            out.u32(1).u64(0).u64(1).u32(0).u32(0).u32(0);
            return Ok(0);
        }
        9 => {
            let n = d.u32()?;
            d.skip(4 * n as usize)?;
            let mut vals = Vec::new();
            Enc::new(&mut vals)
                .u32(1)
                .u64(FILE_SIZE as u64)
                .u64(1 << 20)
                .u64(1 << 20);
            let mask = 1u32 << 1 | 1 << 4 | 1 << 30 | 1 << 31;
            out.u32(0).u32(1).u32(mask).opaque(&vals);
            return Ok(0);
        }
        25 | 38 => {
            let stateid = d.fixed(16)?;
            if stateid[..4] != [0; 4] || stateid[4..] != STATEID_OTHER {
                st.violations.push(format!("I/O stateid {stateid:?}"));
            }
            let off = d.u64()? as usize;
            if let Fault::DelayFirst(n) = fault
                && st.delays < n
                && st.delays % 2 == 1
            {
                st.delays += 1;
                if op == 38 {
                    d.u32()?;
                    d.opaque()?;
                } else {
                    d.u32()?;
                }
                out.u32(NFS4ERR_DELAY);
                return Ok(NFS4ERR_DELAY);
            }
            if op == 25 {
                let n = d.u32()? as usize;
                let end = (off + n).min(FILE_SIZE);
                out.u32(0).bool(end == FILE_SIZE).opaque(&st.file[off..end]);
            } else {
                let stable = d.u32()?;
                let data = d.opaque()?;
                st.file[off..off + data.len()].copy_from_slice(data);
                out.u32(0).u32(data.len() as u32).u32(stable).fixed(&[5; 8]);
            }
            return Ok(0);
        }
        5 => {
            d.skip(12)?;
            out.u32(0).fixed(&[5; 8]);
            return Ok(0);
        }
        4 => {
            d.skip(20)?;
            out.u32(0).u32(2).fixed(&STATEID_OTHER);
            return Ok(0);
        }
        44 => {
            d.skip(16)?;
            st.session_destroyed = true;
            0
        }
        57 => {
            d.u64()?;
            st.client_destroyed = true;
            0
        }
        41 => {
            d.skip(16 + 8)?;
            st.bound += 1;
            out.u32(0).fixed(&SESSION).u32(1).u32(0);
            return Ok(0);
        }
        _ => {
            st.violations.push(format!("unexpected op {op}"));
            return Err(Short);
        }
    };
    out.u32(status);
    Ok(status)
}

/// SEQUENCE: checks the slot and its id; the faults.
fn sequence(st: &mut State, d: &mut Dec, fault: Fault, out: &mut Enc) -> Result<u32, Short> {
    let sid = d.fixed(16)?;
    let (seqid, slot, highest) = (d.u32()?, d.u32()?, d.u32()?);
    if d.u32()? != 0 {
        st.violations.push("cachethis set".into());
    }
    if sid != SESSION {
        st.violations.push("wrong session id".into());
    }
    // Is this an I/O COMPOUND? PUTFH, then READ or WRITE.
    let mut peek = d.clone();
    let io = peek.u32() == Ok(22) && peek.opaque().is_ok() && matches!(peek.u32(), Ok(25) | Ok(38));
    if io {
        st.io += 1;
    }
    let mut granted = st.granted;
    match fault {
        Fault::DelayFirst(n) if io && st.delays < n && st.delays % 2 == 0 => {
            st.delays += 1;
            out.u32(NFS4ERR_DELAY);
            return Ok(NFS4ERR_DELAY);
        }
        Fault::DelayAlways if io => {
            st.delays += 1;
            out.u32(NFS4ERR_DELAY);
            return Ok(NFS4ERR_DELAY);
        }
        Fault::Misorder(n) if st.io == n + 1 => st.seqids[0] += 5,
        Fault::Shrink(n) if st.io > n => granted = 1,
        _ => {}
    }
    // Once the client has had a reply asking for slot 0 only (the target
    // set after I/O n, and every request that was in flight then answered),
    // a new I/O on any other slot breaks RFC 8881 §2.10.6.1.
    let target = match fault {
        Fault::Target(n) if st.io > n => {
            if io && slot > 0 && st.io > n + st.granted {
                st.violations
                    .push(format!("I/O {} on slot {slot} past the target 0", st.io));
            }
            0
        }
        _ => granted - 1,
    };
    st.max_slot = st.max_slot.max(slot);
    if slot >= granted || highest >= st.granted {
        if fault == Fault::None {
            st.violations
                .push(format!("slot {slot}, highest {highest} of {granted}"));
        }
        out.u32(NFS4ERR_BADSLOT);
        return Ok(NFS4ERR_BADSLOT);
    }
    let last = &mut st.seqids[slot as usize];
    if seqid != last.wrapping_add(1) {
        if fault == Fault::None {
            st.violations
                .push(format!("slot {slot}: seqid {seqid} after {last}"));
        }
        out.u32(NFS4ERR_SEQ_MISORDERED);
        return Ok(NFS4ERR_SEQ_MISORDERED);
    }
    *last = seqid;
    out.u32(0).fixed(&SESSION).u32(seqid).u32(slot);
    out.u32(granted - 1).u32(target).u32(0);
    Ok(0)
}

/// Answer one connection's calls.
fn serve(mut s: TcpStream, st: Arc<Mutex<State>>) {
    loop {
        let mut h = [0u8; 4];
        if s.read_exact(&mut h).is_err() {
            return;
        }
        let mut rec = vec![0u8; (u32::from_be_bytes(h) & 0x7fff_ffff) as usize];
        if s.read_exact(&mut rec).is_err() {
            return;
        }
        let mut d = Dec::new(&rec);
        let mut body = Vec::new();
        let parse = |d: &mut Dec, body: &mut Vec<u8>| -> Result<u32, Short> {
            let xid = d.u32()?;
            d.skip(16)?; // CALL, rpcvers, prog, vers
            let proc_ = d.u32()?;
            d.skip(4)?;
            d.opaque()?;
            d.skip(4)?;
            d.opaque()?;
            let mut e = Enc::new(body);
            e.u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0);
            if proc_ == 0 {
                return Ok(xid);
            }
            d.opaque()?;
            if d.u32()? != 1 {
                e.u32(10021).string("").u32(0);
                return Ok(xid);
            }
            let n = d.u32()?;
            let mut res = Vec::new();
            let mut status = 0;
            let mut done = 0;
            let mut st = st.lock().unwrap();
            for i in 0..n {
                let op = d.u32()?;
                done += 1;
                status = do_op(&mut st, op, d, i == 0, &mut Enc::new(&mut res))?;
                if status != 0 {
                    break;
                }
            }
            e.u32(status).string("").u32(done);
            e.buf.extend_from_slice(&res);
            Ok(xid)
        };
        if parse(&mut d, &mut body).is_err() {
            st.lock()
                .unwrap()
                .violations
                .push("undecodable call".into());
            return;
        }
        let mut r = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
        r.extend_from_slice(&body);
        if s.write_all(&r).is_err() {
            return;
        }
    }
}

/// A fake server granting `granted` slots; its URL's target and state.
fn fake(granted: u32, nconnect: u8) -> (Target, Arc<Mutex<State>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let st = Arc::new(Mutex::new(State {
        granted,
        file: vec![0; FILE_SIZE],
        ..State::default()
    }));
    let s2 = st.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { return };
            let s = s2.clone();
            std::thread::spawn(move || serve(c, s));
        }
    });
    let t = Target::parse(&format!(
        "nfs://127.0.0.1:{port}/e/f?version=4.1&nconnect={nconnect}"
    ))
    .unwrap();
    (t, st)
}

fn byte(o: usize) -> u8 {
    (o * 31 + o / 4096) as u8
}

/// `t` opened for writing at `depth`, behind a lane of 8 slots of 4 MiB (the
/// largest request here is 3 MiB).
fn open(t: &Target, depth: u32) -> Lane<NfsBackend> {
    let opts = OpenOptions {
        write: true,
        depth,
        ..OpenOptions::default()
    };
    let b = NfsBackend::open(std::slice::from_ref(t), &opts).unwrap();
    Lane::new(Box::new(b), BufferPool::new(8, 4 << 20)).unwrap()
}

/// A fake server of one connection granting 4 slots that does `fault`, and
/// the backend opened on it at depth 4.
fn faulty(fault: Fault) -> (Lane<NfsBackend>, Arc<Mutex<State>>) {
    let (t, st) = fake(4, 1);
    st.lock().unwrap().fault = Some(fault);
    (open(&t, 4), st)
}

/// `n` 4 KiB writes (or reads) of the first `n` blocks, for [`run`].
fn blocks(write: bool, n: u64) -> Vec<(bool, u64, u32)> {
    (0..n).map(|i| (write, i * 4096, 4096)).collect()
}

/// Write the first `n` blocks at depth 4, then read them back (checked by
/// [`run`]): every request succeeds.
fn write_and_read_back(b: &mut Lane<NfsBackend>, n: u64) {
    for write in [true, false] {
        let got = run(b, &blocks(write, n), 4);
        assert!(got.iter().all(|r| r.is_ok()), "write {write}: {got:?}");
    }
}

/// Run `reqs` (write, offset, len) at depth `qd` through the lane's slots:
/// writes carry the pattern, reads are checked against it. The results.
fn run(b: &mut Lane<NfsBackend>, reqs: &[(bool, u64, u32)], qd: usize) -> Vec<Result<u32, i32>> {
    assert!(qd <= b.slots());
    let mut owner = vec![0; qd];
    let mut free: Vec<u32> = (0..qd as u32).rev().collect();
    let mut results = vec![Ok(0); reqs.len()];
    let (mut next, mut done, mut out) = (0, 0, Vec::new());
    let one = Wait::at_least(1).or_after(Duration::from_secs(30));
    while done < reqs.len() {
        while next < reqs.len()
            && let Some(slot) = free.pop()
        {
            let (write, offset, len) = reqs[next];
            for (i, x) in b.buf_mut(slot)[..len as usize].iter_mut().enumerate() {
                *x = if write {
                    byte(offset as usize + i)
                } else {
                    0xEE
                };
            }
            let dir = if write { Dir::Write } else { Dir::Read };
            b.queue(slot, 0, dir, offset, len).unwrap();
            owner[slot as usize] = next;
            next += 1;
        }
        b.commit().unwrap();
        out.clear();
        b.reap(one, &mut out).unwrap();
        assert!(!out.is_empty(), "no completion in 30 s");
        for c in &out {
            let i = owner[c.slot as usize];
            let (write, offset, len) = reqs[i];
            if !write && c.result == Ok(len) {
                for (k, &x) in b.buf(c.slot)[..len as usize].iter().enumerate() {
                    assert_eq!(x, byte(offset as usize + k), "read back at {offset}+{k}");
                }
            }
            results[i] = c.result;
            free.push(c.slot);
            done += 1;
        }
    }
    results
}

#[test]
fn a_session_keeps_to_the_slots_granted() {
    let (t, st) = fake(3, 2);
    let mut b = open(&t, 8);
    assert!(
        b.backend()
            .features()
            .contains("NFSv4.1 (session of 3 slots)")
            && b.backend().features().contains("nconnect 2"),
        "{}",
        b.backend().features()
    );
    // 4 KiB writes at depth 8 over 3 slots, a 3 MiB write (three RPCs),
    // then all of it read back.
    let mut reqs = blocks(true, 64);
    reqs.push((true, 1 << 20, 3 << 20));
    assert!(run(&mut b, &reqs, 8).iter().all(|r| r.is_ok()));
    let reads: Vec<_> = reqs.iter().map(|&(_, o, l)| (false, o, l)).collect();
    let got = run(&mut b, &reads, 8);
    assert_eq!(got, reads.iter().map(|r| Ok(r.2)).collect::<Vec<_>>());
    drop(b);
    let st = st.lock().unwrap();
    assert_eq!(st.violations, Vec::<String>::new());
    assert!(st.max_slot == 2, "slots used up to {}", st.max_slot);
    assert_eq!(st.bound, 1, "the second connection bound to the session");
    assert!(st.session_destroyed && st.client_destroyed);
}

#[test]
fn delay_is_retried_a_bounded_number_of_times() {
    let (mut b, st) = faulty(Fault::DelayFirst(6));
    write_and_read_back(&mut b, 16);
    assert_eq!(st.lock().unwrap().delays, 6);
    assert_eq!(b.backend().error_detail(), None);

    // A server that stays busy: the write fails after the retries, named.
    st.lock().unwrap().fault = Some(Fault::DelayAlways);
    let before = st.lock().unwrap().delays;
    let got = run(&mut b, &[(true, 0, 4096)], 1);
    assert_eq!(got, [Err(libc::EAGAIN)]);
    let detail = b.backend().error_detail().unwrap();
    assert!(detail.contains("NFS4ERR_DELAY 11 times"), "{detail}");
    assert_eq!(st.lock().unwrap().delays - before, 11);
    st.lock().unwrap().fault = None;
    drop(b);
    assert_eq!(st.lock().unwrap().violations, Vec::<String>::new());
}

#[test]
fn an_open_in_the_servers_grace_period_waits_it_out() {
    // RFC 8881 section 8.4.2: outside a reclaim, the client sends again
    // later; it does not fail the open.
    let (t, st) = fake(4, 1);
    st.lock().unwrap().fault = Some(Fault::GraceOpens(3));
    let mut b = open(&t, 4);
    assert_eq!(st.lock().unwrap().graces, 3);
    write_and_read_back(&mut b, 8);
    assert_eq!(b.backend().error_detail(), None);
    drop(b);
    assert_eq!(st.lock().unwrap().violations, Vec::<String>::new());
}

#[test]
fn a_lowered_target_slot_is_followed_and_the_io_goes_on() {
    let (mut b, st) = faulty(Fault::Target(8));
    write_and_read_back(&mut b, 64);
    assert_eq!(b.backend().error_detail(), None);
    drop(b);
    let st = st.lock().unwrap();
    assert!(
        st.max_slot > 0,
        "the client used its slots before the target fell"
    );
    assert_eq!(st.violations, Vec::<String>::new());
}

#[test]
fn misordered_and_bad_slots_fail_the_io_naming_the_error() {
    for (fault, name) in [
        (Fault::Misorder(4), "NFS4ERR_SEQ_MISORDERED"),
        (Fault::Shrink(4), "NFS4ERR_BADSLOT"),
    ] {
        let (mut b, _) = faulty(fault);
        let reqs = blocks(true, 16);
        let got = run(&mut b, &reqs, 4);
        assert!(got[..4].iter().all(|r| r.is_ok()), "{fault:?}: {got:?}");
        assert!(got.contains(&Err(libc::EIO)), "{fault:?}: {got:?}");
        let detail = b.backend().error_detail().unwrap();
        assert!(
            detail.contains(&format!("SEQUENCE: {name}")),
            "{fault:?}: {detail}"
        );
        b.abandon();
    }
}
