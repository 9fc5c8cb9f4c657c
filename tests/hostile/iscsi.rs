//! The hostile iSCSI target (RFC 7143): a login that agrees to every phase
//! change the initiator asks for, then SCSI commands on a 64 MiB LUN 0
//! (TEST UNIT READY, INQUIRY, READ CAPACITY(10/16), MODE SENSE(10), REPORT
//! LUNS, READ(10/16) answered by one Data-In with status; anything else GOOD
//! without data), NOP-Out and Logout, then one fault per test.

use super::{FAULT_AFTER, Hostile, check_run, message_begins, reset};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const LUN_SIZE: u64 = 64 << 20;
const BLOCK: u32 = 512;
const IQN: &str = "iqn.2026-11.lab.storlab:hostile";
/// The MaxRecvDataSegmentLength this target declares.
const TARGET_MRDSL: u32 = 262_144;

/// How the target breaks the protocol once the fault starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Data-In for a task tag (ITT) the initiator never sent.
    WrongItt,
    /// A PDU whose opcode is no target opcode.
    BadOpcode,
    /// Data-In carrying twice the data the READ asked for.
    DataPastBuffer,
    /// A Data-In header whose data segment length is past the
    /// MaxRecvDataSegmentLength the initiator declared.
    Oversized,
    /// Half a Data-In PDU, then a TCP reset.
    ResetMidPdu,
    /// No answer to READs, the connection kept open.
    Silence,
}

/// One PDU: the 48-byte basic header segment and its data segment.
struct Pdu {
    bhs: [u8; 48],
    data: Vec<u8>,
}

impl Pdu {
    fn new(opcode: u8) -> Pdu {
        let mut bhs = [0u8; 48];
        bhs[0] = opcode;
        Pdu {
            bhs,
            data: Vec::new(),
        }
    }
    fn be32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.bhs[at..at + 4].try_into().unwrap())
    }
    fn set32(&mut self, at: usize, v: u32) -> &mut Pdu {
        self.bhs[at..at + 4].copy_from_slice(&v.to_be_bytes());
        self
    }
    /// The wire form: BHS with the data segment length, data padded to 4.
    fn bytes(&self) -> Vec<u8> {
        let mut b = self.bhs.to_vec();
        let len = self.data.len() as u32;
        b[5..8].copy_from_slice(&len.to_be_bytes()[1..]);
        b.extend_from_slice(&self.data);
        b.resize(b.len().next_multiple_of(4), 0);
        b
    }
}

/// Read one PDU (header, AHS, padded data segment); `None` if the peer
/// closed or the server stops.
fn read_pdu(s: &mut TcpStream, stop: &AtomicBool) -> Option<Pdu> {
    message_begins(s, stop, 48)?;
    let mut p = Pdu::new(0);
    s.read_exact(&mut p.bhs).ok()?;
    let ahs = usize::from(p.bhs[4]) * 4;
    let len = (p.be32(4) & 0x00ff_ffff) as usize;
    let mut rest = vec![0u8; ahs + len.next_multiple_of(4)];
    s.read_exact(&mut rest).ok()?;
    p.data = rest[ahs..ahs + len].to_vec();
    Some(p)
}

/// Sequence numbers of one connection.
struct Conn {
    stat_sn: u32,
    exp_cmd_sn: u32,
    /// The MaxRecvDataSegmentLength the initiator declared at login.
    mrdsl: u32,
}

impl Conn {
    /// Note a request's CmdSN (bytes 24..28); immediate ones take none.
    fn take(&mut self, req: &Pdu) {
        let cmd_sn = req.be32(24);
        self.exp_cmd_sn = if req.bhs[0] & 0x40 == 0 {
            cmd_sn.wrapping_add(1)
        } else {
            self.exp_cmd_sn.max(cmd_sn)
        };
    }
    /// A response to `req`: its ITT, StatSN (taken), ExpCmdSN, MaxCmdSN.
    fn response(&mut self, opcode: u8, req: &Pdu) -> Pdu {
        let mut p = Pdu::new(opcode);
        p.bhs[16..20].copy_from_slice(&req.bhs[16..20]);
        p.set32(24, self.stat_sn)
            .set32(28, self.exp_cmd_sn)
            .set32(32, self.exp_cmd_sn.wrapping_add(63));
        self.stat_sn = self.stat_sn.wrapping_add(1);
        p
    }
}

/// The login response's keys: the initiator's offers echoed (what it offers
/// is acceptable), its declarations left out, ours added.
fn login_keys(c: &mut Conn, offer: &[u8], first: bool) -> Vec<u8> {
    let mut out = String::new();
    for kv in offer.split(|&b| b == 0).filter(|kv| !kv.is_empty()) {
        let kv = String::from_utf8_lossy(kv);
        let key = kv.split('=').next().unwrap_or_default();
        match key {
            "InitiatorName" | "InitiatorAlias" | "TargetName" | "SessionType" => {}
            "MaxRecvDataSegmentLength" => {
                c.mrdsl = kv[key.len() + 1..].parse().unwrap_or(8192);
                out.push_str(&format!("{key}={TARGET_MRDSL}\0"));
            }
            _ => out.push_str(&format!("{kv}\0")),
        }
    }
    if first {
        out.push_str("TargetPortalGroupTag=1\0");
    }
    out.into_bytes()
}

/// The data a non-READ SCSI command returns, `None` for a command this
/// target does not know.
fn command_data(cdb: &[u8]) -> Option<Vec<u8>> {
    let blocks = LUN_SIZE / u64::from(BLOCK);
    Some(match cdb[0] {
        // TEST UNIT READY, SYNCHRONIZE CACHE(10/16), WRITE(10/16).
        0x00 | 0x35 | 0x91 | 0x2a | 0x8a => Vec::new(),
        // INQUIRY: a standard page for a disk, or an empty VPD page.
        0x12 if cdb[1] & 1 == 0 => {
            let mut d = vec![0u8; 36];
            d[2] = 6; // SPC-4
            d[3] = 2;
            d[4] = 31;
            d[8..16].copy_from_slice(b"storlab ");
            d[16..32].copy_from_slice(b"hostile target  ");
            d
        }
        0x12 => vec![0, cdb[2], 0, 0],
        // READ CAPACITY(10).
        0x25 => {
            let mut d = ((blocks - 1) as u32).to_be_bytes().to_vec();
            d.extend_from_slice(&BLOCK.to_be_bytes());
            d
        }
        // READ CAPACITY(16).
        0x9e => {
            let mut d = (blocks - 1).to_be_bytes().to_vec();
            d.extend_from_slice(&BLOCK.to_be_bytes());
            d.resize(32, 0);
            d
        }
        // MODE SENSE(10): a header, no pages, no DPOFUA.
        0x5a => vec![0, 6, 0, 0, 0, 0, 0, 0],
        // REPORT LUNS: LUN 0.
        0xa0 => {
            let mut d = 8u32.to_be_bytes().to_vec();
            d.resize(16, 0);
            d
        }
        _ => return None,
    })
}

/// The transfer length of a READ(10) or READ(16), `None` for other commands.
fn read_len(cdb: &[u8]) -> Option<usize> {
    let blocks = match cdb[0] {
        0x28 => u32::from(u16::from_be_bytes([cdb[7], cdb[8]])),
        0x88 => u32::from_be_bytes(cdb[10..14].try_into().unwrap()),
        _ => return None,
    };
    Some(blocks as usize * BLOCK as usize)
}

/// Data-In with status GOOD (F and S bits) for `req`, or a SCSI Response
/// when there is no data.
fn answer(c: &mut Conn, req: &Pdu, mut data: Vec<u8>) -> Pdu {
    let want = req.be32(20) as usize;
    if data.is_empty() {
        let mut p = c.response(0x21, req);
        p.bhs[1] = 0x80;
        return p;
    }
    let mut p = c.response(0x25, req);
    p.bhs[1] = 0x80 | 0x01;
    p.bhs[8..16].copy_from_slice(&req.bhs[8..16]);
    p.set32(20, 0xffff_ffff);
    if data.len() > want {
        data.truncate(want);
    } else if data.len() < want {
        p.bhs[1] |= 0x02; // U: residual underflow
        p.set32(44, (want - data.len()) as u32);
    }
    p.data = data;
    p
}

/// A SCSI Response with CHECK CONDITION, ILLEGAL REQUEST / INVALID COMMAND
/// OPERATION CODE.
fn unsupported(c: &mut Conn, req: &Pdu) -> Pdu {
    let mut p = c.response(0x21, req);
    p.bhs[1] = 0x80;
    p.bhs[3] = 0x02;
    let mut sense = vec![0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x20, 0];
    sense.resize(18, 0);
    p.data = (sense.len() as u16).to_be_bytes().to_vec();
    p.data.extend_from_slice(&sense);
    p
}

/// Send `reply` to a READ broken the way `fault` says; `Err` ends the
/// connection.
fn faulty(fault: Fault, c: &Conn, reply: &mut Pdu, s: &mut TcpStream) -> std::io::Result<()> {
    match fault {
        Fault::WrongItt => {
            let itt = reply.be32(16) ^ 0x5a5a_0000;
            s.write_all(reply.set32(16, itt).bytes().as_slice())
        }
        Fault::BadOpcode => {
            reply.bhs[0] = 0x3d;
            s.write_all(&reply.bytes())
        }
        Fault::DataPastBuffer => {
            let n = reply.data.len();
            reply.data.resize(n * 2, 0xa5);
            s.write_all(&reply.bytes())
        }
        Fault::Oversized => {
            let mut b = reply.bytes();
            b[5..8].copy_from_slice(&(c.mrdsl + 512).to_be_bytes()[1..]);
            s.write_all(&b)
        }
        Fault::ResetMidPdu => {
            let b = reply.bytes();
            let _ = s.write_all(&b[..b.len() / 2]);
            let _ = reset(s);
            Err(std::io::ErrorKind::ConnectionReset.into())
        }
        Fault::Silence => Ok(()),
    }
}

/// Answer one connection, breaking the protocol once the fault starts.
fn serve(mut s: TcpStream, fault: Fault, stop: &AtomicBool, first_io: &OnceLock<Instant>) {
    let mut c = Conn {
        stat_sn: 1,
        exp_cmd_sn: 0,
        mrdsl: 8192,
    };
    let mut first_login = true;
    while let Some(req) = read_pdu(&mut s, stop) {
        let opcode = req.bhs[0] & 0x3f;
        // Data-Out and SNACK carry no CmdSN.
        if !matches!(opcode, 0x05 | 0x10) {
            c.take(&req);
        }
        let r = match opcode {
            // Login: agree to the transit asked for (T, CSG, NSG echoed).
            0x03 => {
                let mut p = c.response(0x23, &req);
                p.bhs[1] = req.bhs[1] & 0x8f;
                p.bhs[8..14].copy_from_slice(&req.bhs[8..14]);
                p.bhs[14..16].copy_from_slice(&1u16.to_be_bytes()); // TSIH
                p.data = login_keys(&mut c, &req.data, first_login);
                first_login = false;
                s.write_all(&p.bytes())
            }
            // SCSI command.
            0x01 => {
                let cdb = &req.bhs[32..48];
                if let Some(len) = read_len(cdb) {
                    let started = first_io.get_or_init(Instant::now).elapsed() > FAULT_AFTER;
                    let mut p = answer(&mut c, &req, vec![0u8; len]);
                    if started {
                        faulty(fault, &c, &mut p, &mut s)
                    } else {
                        s.write_all(&p.bytes())
                    }
                } else {
                    let p = match command_data(cdb) {
                        Some(d) => answer(&mut c, &req, d),
                        None => unsupported(&mut c, &req),
                    };
                    s.write_all(&p.bytes())
                }
            }
            // NOP-Out: a NOP-In when it asks for one.
            0x00 if req.be32(16) != 0xffff_ffff => {
                let mut p = c.response(0x20, &req);
                p.bhs[1] = 0x80;
                p.set32(20, 0xffff_ffff);
                p.data = req.data.clone();
                s.write_all(&p.bytes())
            }
            // Logout: a Logout Response, then the end.
            0x06 => {
                let mut p = c.response(0x26, &req);
                p.bhs[1] = 0x80;
                let _ = s.write_all(&p.bytes());
                return;
            }
            _ => Ok(()),
        };
        if r.is_err() {
            return;
        }
    }
}

/// Run a random read against the hostile target with `fault`.
fn iscsi(fault: Fault, must: &[&str]) {
    let srv = Hostile::start(move |s, stop, first_io| serve(s, fault, stop, first_io));
    let url = format!("iscsi://127.0.0.1:{}/{IQN}/0", srv.port);
    check_run(&url, &format!("iscsi {fault:?}"), "randread", must);
}

#[test]
fn iscsi_data_in_for_a_task_never_sent_ends_the_run_at_the_io_timeout() {
    // libiscsi 1.19 drops a PDU for no task without a word: the run ends
    // at the I/O timeout.
    iscsi(Fault::WrongItt, &["did not complete within 2 s"]);
}

#[test]
fn iscsi_a_pdu_with_a_bad_opcode_is_refused() {
    iscsi(Fault::BadOpcode, &["connection lost", "wrong opcode"]);
}

#[test]
fn iscsi_data_in_past_the_read_buffer_is_refused() {
    iscsi(
        Fault::DataPastBuffer,
        &["connection lost", "more data than the command asked for"],
    );
}

#[test]
fn iscsi_a_data_segment_beyond_max_recv_length_is_refused() {
    iscsi(
        Fault::Oversized,
        &["connection lost", "MaxRecvDataSegmentLength"],
    );
}

#[test]
fn iscsi_reset_in_the_middle_of_a_pdu_ends_the_run() {
    iscsi(Fault::ResetMidPdu, &["connection lost", "reset by peer"]);
}

#[test]
fn iscsi_silence_ends_the_run_at_the_io_timeout() {
    iscsi(Fault::Silence, &["did not complete within 2 s"]);
}
