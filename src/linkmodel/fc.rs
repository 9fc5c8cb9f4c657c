//! Fibre Channel: FCP's information units in FC frames, natively (FC-FS) or
//! encapsulated in Ethernet (FCoE, FC-BB-5).
//!
//! FC has no TCP: a read is one FCP_CMND frame to the target, the data in
//! frames of 2048 bytes back, and one FCP_RSP; a write adds an
//! FCP_XFER_RDY from the target before the initiator sends its data. Frames
//! are never packed across I/Os: each I/O's data is its own sequence. Class 3
//! needs no acknowledgement frames; the R_RDY that returns each buffer credit
//! is a primitive signal sent in place of an idle, so it costs no line time
//! beyond the idles counted here.

use super::ethernet;
use super::{Dir, Exchange, Flow};

/// Start-of-frame delimiter, one transmission word: FC-FS-3 (ordered sets).
pub const SOF: u64 = 4;
/// Frame header: FC-FS-3 (frame format, 24 bytes).
pub const FRAME_HEADER: u64 = 24;
/// Frame CRC: FC-FS-3 (frame format, 4 bytes).
pub const CRC: u64 = 4;
/// End-of-frame delimiter, one transmission word: FC-FS-3 (ordered sets).
pub const EOF: u64 = 4;
/// Largest data field of a frame: FC-FS-3 (2112 bytes, optional headers
/// included).
pub const MAX_DATA_FIELD: u64 = 2112;
/// Data bytes per FCP data frame: the 2048-byte receive data field size that
/// HBAs and switches log in with (PLOGI service parameters), so the data of a
/// sequence is cut at 2 KiB although a frame could hold 2112.
pub const DATA_PER_FRAME: u64 = 2048;
const _: () = assert!(DATA_PER_FRAME <= MAX_DATA_FIELD);
/// Idle words a transmitter sends at least between frames: six primitive
/// signals, FC-FS-3 (transmission rules; receivers must tolerate two).
/// At 8GFC and above the fill word is ARB(ff), of the same size.
pub const MIN_IDLE_WORDS: u64 = 6;
/// Bytes in a transmission word (a primitive signal, delimiter or idle).
pub const WORD: u64 = 4;
/// FCP_CMND IU with a 16-byte CDB and no additional CDB: FCP_LUN 8, command
/// reference number, task attribute, task management flags, additional CDB
/// length with RDDATA/WRDATA 1 each, CDB 16, FCP_DL 4: FCP-4 (FCP_CMND IU).
pub const FCP_CMND: u64 = 32;
/// FCP_XFER_RDY IU: relative offset 4, burst length 4, reserved 4: FCP-4
/// (FCP_XFER_RDY IU). One per write: the target asks for the whole transfer.
pub const FCP_XFER_RDY: u64 = 12;
/// FCP_RSP IU with GOOD status, no sense and no response information:
/// reserved 8, retry delay timer 2, flags 1, SCSI status 1, FCP_RESID 4,
/// FCP_SNS_LEN 4, FCP_RSP_LEN 4: FCP-4 (FCP_RSP IU).
pub const FCP_RSP: u64 = 24;
/// FCoE header: version (4 bits) and reserved bits, 13 bytes, then the
/// encoded SOF, 1 byte: FC-BB-5 (FCoE frame format).
pub const FCOE_HEADER: u64 = 14;
/// FCoE trailer: the encoded EOF, 1 byte, and 3 reserved bytes: FC-BB-5.
pub const FCOE_TRAILER: u64 = 4;
/// Largest FCoE frame, MAC header to FCS with an 802.1Q tag: FC-BB-5's
/// 2180 bytes. Its MAC client data is up to 2158 bytes, more than a
/// 1500-byte MTU: FCoE links run a "baby jumbo" MTU such as 2500, whatever
/// MTU the IP protocols use.
pub const FCOE_MAX_FRAME: u64 = 2180;

/// FC fill bytes: a frame's data field is a whole number of words.
fn words(bytes: u64) -> u64 {
    bytes.div_ceil(WORD) * WORD
}

/// The FCP information units of one I/O, as frame data fields:
/// (data direction, control direction).
pub fn fcp_exchange(io: u64, dir: Dir) -> Exchange {
    let mut ex = Exchange::default();
    let (full, rest) = (io / DATA_PER_FRAME, io % DATA_PER_FRAME);
    let data = |ex: &mut Exchange| {
        ex.data.push(full, DATA_PER_FRAME);
        if rest > 0 {
            ex.data.push(1, words(rest));
        }
    };
    match dir {
        Dir::Read => {
            ex.ctrl.push(1, FCP_CMND);
            data(&mut ex);
            ex.data.push(1, FCP_RSP);
        }
        Dir::Write => {
            ex.data.push(1, FCP_CMND);
            data(&mut ex);
            ex.ctrl.push(1, FCP_XFER_RDY);
            ex.ctrl.push(1, FCP_RSP);
        }
    }
    ex
}

/// Line bytes of a native FC frame with `data` bytes in its data field,
/// with the idles that must follow it.
pub fn fc_frame_bytes(data: u64) -> u64 {
    SOF + FRAME_HEADER + data + CRC + EOF + MIN_IDLE_WORDS * WORD
}

/// Line bytes of an FCoE frame carrying an FC frame with `data` bytes in its
/// data field: preamble, tagged MAC header, FCoE header with SOF, FC header,
/// data, FC CRC, EOF and reserved, FCS, gap (FC-BB-5 over IEEE 802.3).
pub fn fcoe_frame_bytes(data: u64) -> u64 {
    let client = FCOE_HEADER + FRAME_HEADER + data + CRC + FCOE_TRAILER;
    ethernet::frame_bytes(client) + ethernet::VLAN_TAG
}

/// Frames and line bytes of each direction when every data field of `ex` is
/// a frame whose line cost is `frame(data)`.
pub fn frame_flows(ex: &Exchange, frame: fn(u64) -> u64) -> (Flow, Flow) {
    let flow = |m: &super::Messages| Flow {
        frames: m.count() as f64,
        acks: 0.0,
        wire_bytes: m.runs().iter().map(|&(n, d)| (n * frame(d)) as f64).sum(),
    };
    (flow(&ex.data), flow(&ex.ctrl))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes() {
        // A full data frame: 36 bytes of delimiters, header and CRC, then six
        // idle words.
        assert_eq!(fc_frame_bytes(DATA_PER_FRAME), 2048 + 36 + 24);
        // FCoE: the largest frame is FC-BB-5's 2180 bytes, MAC header to FCS.
        let largest = fcoe_frame_bytes(MAX_DATA_FIELD) - ethernet::PREAMBLE_SFD - ethernet::IFG;
        assert_eq!(largest, FCOE_MAX_FRAME);
        assert_eq!(fcoe_frame_bytes(DATA_PER_FRAME), 2048 + 88);
    }

    #[test]
    fn a_read_and_a_write_exchange() {
        let r = fcp_exchange(65536, Dir::Read);
        assert_eq!(r.data.count(), 33, "32 data frames and FCP_RSP");
        assert_eq!(r.data.bytes(), 65536 + FCP_RSP);
        assert_eq!(r.ctrl.count(), 1);
        let w = fcp_exchange(5000, Dir::Write);
        // FCP_CMND, 2 full frames, 904 bytes in the third.
        assert_eq!(w.data.count(), 4);
        assert_eq!(w.data.bytes(), FCP_CMND + 5000);
        assert_eq!(w.ctrl.bytes(), FCP_XFER_RDY + FCP_RSP);
        // Fill bytes round a partial data field up to a word.
        let odd = fcp_exchange(513, Dir::Read);
        assert_eq!(odd.data.bytes(), 516 + FCP_RSP);
    }
}
