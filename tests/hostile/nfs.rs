//! The hostile NFS server: just enough NFSv3 (MOUNT, LOOKUP, GETATTR,
//! FSINFO, READ, WRITE, COMMIT, on one port) for storlab to open a 64 MiB
//! file and run, then one fault per test.

use super::{FAULT_AFTER, Hostile, check_run, message_begins, reset};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const FILE_SIZE: u64 = 64 << 20;

/// How the server breaks the protocol once the fault starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Every reply carries an XID of no call.
    WrongXid,
    /// A READ reply announces 1 GiB of data for a 4 KiB read.
    ReadPastBuffer,
    /// A WRITE reply's record is 1 GiB long and keeps coming.
    HugeRecord,
    /// A READ reply ends inside its attributes.
    BadXdr,
    /// Half a READ reply, then a TCP reset.
    ResetMidReply,
    /// No reply at all, the connection kept open.
    Silence,
}

/// XDR encoding, enough for the replies.
#[derive(Default)]
struct Xdr(Vec<u8>);

impl Xdr {
    fn u32(&mut self, v: u32) -> &mut Xdr {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Xdr {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn opaque(&mut self, b: &[u8]) -> &mut Xdr {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }
}

/// A call: XID, program, procedure, and its arguments.
#[derive(Clone)]
struct Call {
    xid: u32,
    prog: u32,
    proc_: u32,
    args: Vec<u8>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Read one call record (storlab sends one fragment per call); `None` when
/// the client closed the connection or the server stops.
fn read_call(s: &mut TcpStream, stop: &AtomicBool) -> Option<Call> {
    let mut h = [0u8; 4];
    message_begins(s, stop, 4)?;
    s.read_exact(&mut h).ok()?;
    let mut rec = vec![0u8; (u32::from_be_bytes(h) & 0x7fff_ffff) as usize];
    s.read_exact(&mut rec).ok()?;
    // xid, CALL, rpcvers, prog, vers, proc, cred (flavor, opaque), verf.
    let cred_len = be32(&rec, 28) as usize;
    let verf_at = 32 + cred_len.next_multiple_of(4);
    let args_at = verf_at + 8 + (be32(&rec, verf_at + 4) as usize).next_multiple_of(4);
    Some(Call {
        xid: be32(&rec, 0),
        prog: be32(&rec, 12),
        proc_: be32(&rec, 20),
        args: rec[args_at..].to_vec(),
    })
}

/// An accepted, successful reply header for `xid`.
fn reply_head(xid: u32) -> Xdr {
    let mut x = Xdr::default();
    x.u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0);
    x
}

/// One record (last fragment) of `body`.
fn record(body: &[u8]) -> Vec<u8> {
    let mut r = (0x8000_0000 | body.len() as u32).to_be_bytes().to_vec();
    r.extend_from_slice(body);
    r
}

/// fattr3 of the file: a regular file of FILE_SIZE bytes.
fn fattr(x: &mut Xdr) {
    x.u32(1).u32(0o644).u32(1).u32(0).u32(0);
    x.u64(FILE_SIZE).u64(FILE_SIZE).u32(0).u32(0).u64(1).u64(2);
    for _ in 0..6 {
        x.u32(0);
    }
}

/// The well-formed reply body of `c`.
fn answer(c: &Call) -> Xdr {
    let mut x = reply_head(c.xid);
    match (c.prog, c.proc_) {
        (_, 0) => {}
        (100_005, 1) => {
            x.u32(0).opaque(b"ROOT").u32(1).u32(1);
        }
        (100_003, 3) => {
            x.u32(0).opaque(b"FILE").u32(0).u32(0);
        }
        (100_003, 1) => {
            x.u32(0);
            fattr(&mut x);
        }
        (100_003, 19) => {
            x.u32(0).u32(0);
            for v in [1 << 20, 1 << 20, 4096, 1 << 20, 1 << 20, 4096, 4096] {
                x.u32(v);
            }
            x.u64(u64::MAX).u32(0).u32(1).u32(0);
        }
        (100_003, 6) => {
            // fh (4 bytes + length word), offset, count.
            let count = be32(&c.args, 16);
            x.u32(0).u32(0).u32(count).u32(0);
            x.opaque(&vec![0u8; count as usize]);
        }
        (100_003, 7) => {
            let count = be32(&c.args, 16);
            x.u32(0)
                .u32(0)
                .u32(0)
                .u32(count)
                .u32(2)
                .u64(0x5354_4f52_4c41_4221);
        }
        (100_003, 21) => {
            x.u32(0).u32(0).u32(0).u64(0x5354_4f52_4c41_4221);
        }
        (p, n) => panic!("hostile server: unexpected call {p}/{n}"),
    }
    x
}

/// What the server does with READ/WRITE calls once the fault started.
fn faulty(fault: Fault, c: &Call, s: &mut TcpStream) -> std::io::Result<()> {
    let read = c.proc_ == 6;
    match fault {
        Fault::WrongXid => {
            let mut bad = c.clone();
            bad.xid ^= 0x8000_0000;
            s.write_all(&record(&answer(&bad).0))
        }
        Fault::ReadPastBuffer if read => {
            let mut x = reply_head(c.xid);
            x.u32(0).u32(0).u32(1 << 30).u32(0).u32(1 << 30);
            x.0.extend_from_slice(&[0u8; 8192]);
            let mut r = (0x8000_0000u32 | ((1 << 30) + 64)).to_be_bytes().to_vec();
            r.extend_from_slice(&x.0);
            s.write_all(&r)
        }
        Fault::HugeRecord if !read => {
            let mut x = reply_head(c.xid);
            x.u32(0);
            s.write_all(&(0x8000_0000u32 | (1 << 30)).to_be_bytes())?;
            s.write_all(&x.0)?;
            let junk = vec![0u8; 64 << 10];
            for _ in 0..64 {
                s.write_all(&junk)?;
            }
            Ok(())
        }
        Fault::BadXdr if read => {
            let mut x = reply_head(c.xid);
            x.u32(0).u32(1).u32(1).u32(0o644);
            s.write_all(&record(&x.0))
        }
        Fault::ResetMidReply if read => {
            let full = record(&answer(c).0);
            s.write_all(&full[..full.len() / 2])?;
            reset(s)
        }
        // Silence, and the other faults' calls of the other direction.
        _ => Ok(()),
    }
}

/// Answer one connection's calls, breaking the protocol once the fault starts.
fn serve(mut s: TcpStream, fault: Fault, stop: &AtomicBool, first_io: &OnceLock<Instant>) {
    while let Some(c) = read_call(&mut s, stop) {
        let io = c.prog == 100_003 && matches!(c.proc_, 6 | 7);
        let started = io && first_io.get_or_init(Instant::now).elapsed() > FAULT_AFTER;
        let r = if started {
            faulty(fault, &c, &mut s)
        } else {
            s.write_all(&record(&answer(&c).0))
        };
        if r.is_err() || (started && fault == Fault::ResetMidReply && c.proc_ == 6) {
            return;
        }
    }
}

/// Run `rw` against the hostile NFS server with `fault`.
fn nfs(fault: Fault, rw: &str, must: &[&str]) {
    let srv = Hostile::start(move |s, stop, first_io| serve(s, fault, stop, first_io));
    let p = srv.port;
    let url = format!("nfs://127.0.0.1:{p}/export/file?version=3&mountport={p}");
    check_run(&url, &format!("nfs {fault:?}"), rw, must);
}

#[test]
fn replies_with_wrong_xids_end_at_the_io_timeout_naming_them() {
    nfs(
        Fault::WrongXid,
        "randrw",
        &[
            "did not complete within 2 s",
            "matched no call in flight (wrong XID",
        ],
    );
}

#[test]
fn read_data_longer_than_the_read_is_refused() {
    nfs(
        Fault::ReadPastBuffer,
        "randread",
        &[
            "the server broke the RPC protocol",
            "1073741824 bytes of READ data for a 4096-byte read",
        ],
    );
}

#[test]
fn a_reply_record_larger_than_any_reply_is_refused() {
    nfs(
        Fault::HugeRecord,
        "randwrite",
        &["the server broke the RPC protocol", "larger than any reply"],
    );
}

#[test]
fn a_read_reply_with_bad_xdr_is_named() {
    nfs(Fault::BadXdr, "randread", &["malformed READ reply"]);
}

#[test]
fn a_reset_in_the_middle_of_a_reply_ends_the_run() {
    nfs(Fault::ResetMidReply, "randread", &["did the server stop?"]);
}

#[test]
fn silence_ends_the_run_at_the_io_timeout() {
    nfs(Fault::Silence, "randrw", &["did not complete within 2 s"]);
}
