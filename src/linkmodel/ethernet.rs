//! Ethernet frames, IPv4 and TCP: how many bytes of line time the messages
//! of one I/O take in each direction.
//!
//! Every frame costs its preamble and start delimiter, MAC header, FCS and
//! the inter-frame gap besides its IP packet. TCP cuts each direction's byte
//! stream into segments of at most MTU - 52 bytes (IPv4 and TCP headers with
//! the timestamps option). Two regimes, because a saturated link makes them:
//! - the direction the data flows is backlogged (the link is the limit, so
//!   the sender's queue is never empty): its messages are packed end to end
//!   into full segments, whatever their boundaries;
//! - the other direction carries small control messages (commands, R2Ts,
//!   replies) sent as they are made: each takes its own segment(s), and they
//!   carry the ACKs of the data; a pure ACK frame is added for every second
//!   data segment the control messages do not already acknowledge.

use super::{Exchange, Flow};

/// Preamble (7 bytes) and start frame delimiter (1 byte) before every frame:
/// IEEE 802.3 clause 3.2.1-3.2.2.
pub const PREAMBLE_SFD: u64 = 8;
/// Destination and source addresses and the EtherType of an untagged frame:
/// IEEE 802.3 clause 3.2.3-3.2.6.
pub const MAC_HEADER: u64 = 14;
/// An IEEE 802.1Q tag (TPID and TCI) after the source address: IEEE 802.1Q
/// clause 9. FCoE frames carry one (their priority selects the lossless class).
pub const VLAN_TAG: u64 = 4;
/// Frame check sequence (CRC-32): IEEE 802.3 clause 3.2.9.
pub const FCS: u64 = 4;
/// Minimum inter-packet gap, 96 bit times: IEEE 802.3 clause 4.4.2.
pub const IFG: u64 = 12;
/// Smallest MAC client data of an untagged frame (64-byte minimum frame less
/// header and FCS); shorter data is padded: IEEE 802.3 clause 3.2.7, 4.4.2.
pub const MIN_CLIENT_DATA: u64 = 46;
/// IPv4 header without options: RFC 791 section 3.1.
pub const IPV4_HEADER: u64 = 20;
/// TCP header without options: RFC 9293 section 3.1.
pub const TCP_HEADER: u64 = 20;
/// The TCP timestamps option (10 bytes, padded to 12 with two NOPs) on every
/// segment once negotiated: RFC 7323 section 3 and appendix A. Linux
/// negotiates it by default (net.ipv4.tcp_timestamps = 1).
pub const TCP_TIMESTAMPS: u64 = 12;
/// Full-sized segments acknowledged per ACK (delayed ACK): a receiver ACKs
/// at least every second full-sized segment, RFC 5681 section 4.2 and
/// RFC 1122 section 4.2.3.2. Linux ACKs every second one when it keeps up.
pub const SEGMENTS_PER_ACK: f64 = 2.0;
/// Smallest MTU the model takes (IPv4's minimum reassembly buffer, RFC 791),
/// the lab's own lower bound.
pub const MIN_MTU: u32 = 576;
/// Largest MTU the model takes, the lab's own upper bound (`lab up --mtu`).
pub const MAX_MTU: u32 = 65520;

/// Line bytes of one untagged frame whose MAC client data (the IP packet) is
/// `data` bytes: preamble, header, data padded to the minimum, FCS, gap.
pub fn frame_bytes(data: u64) -> u64 {
    PREAMBLE_SFD + MAC_HEADER + data.max(MIN_CLIENT_DATA) + FCS + IFG
}

/// TCP payload bytes per segment at `mtu`: the MSS less the timestamps option.
pub fn segment_payload(mtu: u32) -> u64 {
    u64::from(mtu) - IPV4_HEADER - TCP_HEADER - TCP_TIMESTAMPS
}

/// Line bytes of a segment carrying `payload` bytes of TCP data.
fn segment_bytes(payload: u64) -> u64 {
    frame_bytes(IPV4_HEADER + TCP_HEADER + TCP_TIMESTAMPS + payload)
}

/// The flows of `ex` over TCP/IPv4 on Ethernet at `mtu`: (data direction,
/// control direction), per I/O.
pub fn tcp_flows(ex: &Exchange, mtu: u32) -> (Flow, Flow) {
    let mss = segment_payload(mtu);
    // Backlogged: the stream is cut into full segments.
    let stream = ex.data.bytes() as f64;
    let data_segs = stream / mss as f64;
    let data_wire = stream + data_segs * (segment_bytes(0) as f64);
    // Sent as made: each control message in its own segment(s); the last
    // segment of a message carries its remainder.
    let mut ctrl_segs = 0.0;
    let mut ctrl_wire = 0.0;
    for &(count, bytes) in ex.ctrl.runs() {
        let full = bytes / mss;
        let rest = bytes % mss;
        let per = full as f64 * segment_bytes(mss) as f64
            + if rest > 0 {
                segment_bytes(rest) as f64
            } else {
                0.0
            };
        ctrl_segs += count as f64 * (full + u64::from(rest > 0)) as f64;
        ctrl_wire += count as f64 * per;
    }
    let ack = segment_bytes(0) as f64;
    let ctrl_acks = (data_segs / SEGMENTS_PER_ACK - ctrl_segs).max(0.0);
    let data_acks = (ctrl_segs / SEGMENTS_PER_ACK - data_segs).max(0.0);
    (
        Flow {
            frames: data_segs + data_acks,
            acks: data_acks,
            wire_bytes: data_wire + data_acks * ack,
        },
        Flow {
            frames: ctrl_segs + ctrl_acks,
            acks: ctrl_acks,
            wire_bytes: ctrl_wire + ctrl_acks * ack,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::Messages;
    use super::*;

    #[test]
    fn a_full_segment_and_an_ack_on_the_wire() {
        // 1500-byte MTU: 1448 bytes of data in a 1538-byte slot of line time
        // (8 + 14 + 1500 + 4 + 12), the figure every Ethernet efficiency
        // table starts from; an ACK with timestamps is 52 bytes of IP in 90.
        assert_eq!(segment_payload(1500), 1448);
        assert_eq!(segment_bytes(1448), 1538);
        assert_eq!(segment_bytes(0), 90);
        assert_eq!(segment_payload(9000), 8948);
        assert_eq!(segment_bytes(8948), 9038);
        // The minimum frame: 64 bytes plus preamble and gap.
        assert_eq!(frame_bytes(28), 84);
    }

    #[test]
    fn data_is_packed_and_control_messages_are_not() {
        let mut ex = Exchange::default();
        ex.data.push(1, 2 * 1448);
        ex.ctrl.push(3, 10);
        let (d, c) = tcp_flows(&ex, 1500);
        assert!((d.frames - 2.0).abs() < 1e-9 && d.acks == 0.0, "{d:?}");
        assert!((d.wire_bytes - 2.0 * 1538.0).abs() < 1e-9);
        // Three messages, three segments, which also ACK both data segments.
        assert_eq!(c.frames, 3.0);
        assert_eq!(c.acks, 0.0);
        assert_eq!(c.wire_bytes, 3.0 * 100.0);
        // One control message for 10 data segments: 4 pure ACKs besides it.
        let mut ex = Exchange::default();
        ex.data.push(10, 1448);
        ex.ctrl.push(1, 48);
        let (_, c) = tcp_flows(&ex, 1500);
        assert_eq!(c.acks, 4.0);
        assert_eq!(c.wire_bytes, 138.0 + 4.0 * 90.0);
        let m = Messages::default();
        assert_eq!(m.bytes(), 0);
    }
}
