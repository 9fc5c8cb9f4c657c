//! The hostile NBD server: the fixed-newstyle handshake (NBD_OPT_GO or
//! NBD_OPT_EXPORT_NAME, every other option refused as unsupported) and
//! simple replies for a 64 MiB export, then one fault per test.

use super::{FAULT_AFTER, Hostile, check_run, message_begins, reset};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const EXPORT_SIZE: u64 = 64 << 20;
const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// HAS_FLAGS | SEND_FLUSH | SEND_FUA.
const TRANSMISSION_FLAGS: u16 = 1 | 4 | 8;

/// How the server breaks the protocol once the fault starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Replies carry a cookie of no request.
    WrongCookie,
    /// Replies start with a magic that is no reply's.
    BadMagic,
    /// Half a read reply, then a TCP reset.
    ResetMidReply,
    /// No reply at all, the connection kept open.
    Silence,
}

fn read_u32(s: &mut TcpStream) -> Option<u32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b).ok()?;
    Some(u32::from_be_bytes(b))
}

fn read_u64(s: &mut TcpStream) -> Option<u64> {
    let mut b = [0u8; 8];
    s.read_exact(&mut b).ok()?;
    Some(u64::from_be_bytes(b))
}

/// An option reply of `kind` with `data`.
fn opt_reply(opt: u32, kind: u32, data: &[u8]) -> Vec<u8> {
    let mut r = OPT_REPLY_MAGIC.to_be_bytes().to_vec();
    r.extend_from_slice(&opt.to_be_bytes());
    r.extend_from_slice(&kind.to_be_bytes());
    r.extend_from_slice(&(data.len() as u32).to_be_bytes());
    r.extend_from_slice(data);
    r
}

/// The handshake up to transmission; `None` if the client gave up.
fn handshake(s: &mut TcpStream) -> Option<()> {
    let mut hello = b"NBDMAGIC".to_vec();
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&3u16.to_be_bytes()); // FIXED_NEWSTYLE | NO_ZEROES
    s.write_all(&hello).ok()?;
    let client_flags = read_u32(s)?;
    loop {
        if read_u64(s)? != IHAVEOPT {
            return None;
        }
        let opt = read_u32(s)?;
        let mut data = vec![0u8; read_u32(s)? as usize];
        s.read_exact(&mut data).ok()?;
        let mut info = 0u16.to_be_bytes().to_vec(); // NBD_INFO_EXPORT
        info.extend_from_slice(&EXPORT_SIZE.to_be_bytes());
        info.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
        match opt {
            // NBD_OPT_EXPORT_NAME: size and flags, no option reply.
            1 => {
                s.write_all(&info[2..]).ok()?;
                if client_flags & 2 == 0 {
                    s.write_all(&[0u8; 124]).ok()?;
                }
                return Some(());
            }
            // NBD_OPT_INFO / NBD_OPT_GO: NBD_REP_INFO, then NBD_REP_ACK.
            6 | 7 => {
                s.write_all(&opt_reply(opt, 3, &info)).ok()?;
                s.write_all(&opt_reply(opt, 1, &[])).ok()?;
                if opt == 7 {
                    return Some(());
                }
            }
            // NBD_OPT_ABORT.
            2 => return None,
            // Anything else: NBD_REP_ERR_UNSUP.
            _ => s.write_all(&opt_reply(opt, 0x8000_0001, &[])).ok()?,
        }
    }
}

/// A simple reply: magic, no error, the cookie, and `data`.
fn simple_reply(magic: u32, cookie: u64, data: &[u8]) -> Vec<u8> {
    let mut r = magic.to_be_bytes().to_vec();
    r.extend_from_slice(&0u32.to_be_bytes());
    r.extend_from_slice(&cookie.to_be_bytes());
    r.extend_from_slice(data);
    r
}

/// Answer one connection, breaking the protocol once the fault starts.
fn serve(mut s: TcpStream, fault: Fault, stop: &AtomicBool, first_io: &OnceLock<Instant>) {
    if handshake(&mut s).is_none() {
        return;
    }
    while message_begins(&mut s, stop, 28).is_some() {
        let mut h = [0u8; 28];
        if s.read_exact(&mut h).is_err() {
            return;
        }
        let be32 = |at: usize| u32::from_be_bytes(h[at..at + 4].try_into().unwrap());
        assert_eq!(be32(0), REQUEST_MAGIC, "hostile nbd: not a request");
        let kind = u16::from_be_bytes([h[6], h[7]]);
        let cookie = u64::from_be_bytes(h[8..16].try_into().unwrap());
        let len = be32(24) as usize;
        let data = match kind {
            0 => vec![0u8; len],
            1 => {
                let mut w = vec![0u8; len];
                if s.read_exact(&mut w).is_err() {
                    return;
                }
                Vec::new()
            }
            2 => return,
            _ => Vec::new(),
        };
        let io = matches!(kind, 0 | 1);
        let started = io && first_io.get_or_init(Instant::now).elapsed() > FAULT_AFTER;
        let r = match (started, fault) {
            (false, _) => s.write_all(&simple_reply(SIMPLE_REPLY_MAGIC, cookie, &data)),
            (true, Fault::WrongCookie) => {
                s.write_all(&simple_reply(SIMPLE_REPLY_MAGIC, cookie ^ 0x5a5a, &data))
            }
            (true, Fault::BadMagic) => s.write_all(&simple_reply(0xdead_beef, cookie, &data)),
            (true, Fault::ResetMidReply) if kind == 0 => {
                let full = simple_reply(SIMPLE_REPLY_MAGIC, cookie, &data);
                let _ = s.write_all(&full[..full.len() / 2]);
                let _ = reset(&mut s);
                return;
            }
            (true, _) => Ok(()),
        };
        if r.is_err() {
            return;
        }
    }
}

/// Run `rw` against the hostile NBD server with `fault`.
fn nbd(fault: Fault, rw: &str, must: &[&str]) {
    let srv = Hostile::start(move |s, stop, first_io| serve(s, fault, stop, first_io));
    let url = format!("nbd://127.0.0.1:{}/store", srv.port);
    check_run(&url, &format!("nbd {fault:?}"), rw, must);
}

#[test]
fn nbd_replies_to_no_request_are_refused() {
    nbd(Fault::WrongCookie, "randrw", &["connection lost", "cookie"]);
}

#[test]
fn nbd_replies_with_a_bad_magic_are_refused() {
    nbd(Fault::BadMagic, "randrw", &["connection lost", "magic"]);
}

#[test]
fn nbd_reset_in_the_middle_of_a_reply_ends_the_run() {
    nbd(Fault::ResetMidReply, "randread", &["connection lost"]);
}

#[test]
fn nbd_silence_ends_the_run_at_the_io_timeout() {
    nbd(Fault::Silence, "randrw", &["did not complete within 2 s"]);
}
