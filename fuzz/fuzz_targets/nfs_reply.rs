//! The NFS client's reply parsers (RFC 5531 RPC reply header, NFSv3 READ and
//! WRITE results, NFSv4 COMPOUND results, the 4.1 SEQUENCE, EXCHANGE_ID and
//! CREATE_SESSION results, GETATTR's attributes): whatever bytes a server
//! sends give a value or a named error, never a panic, and never a data
//! header that claims more bytes than the reply holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab::backends::nfs::rpc::{Head, parse_reply};
use storlab::backends::nfs::xdr::Dec;
use storlab::backends::nfs::{compound, v3, v4, v41};

/// A data header must lie inside the bytes it was parsed from.
fn head_inside(h: Head, len: usize) {
    if let Head::Data { len: at, .. } = h {
        assert!(at <= len, "a READ header of {at} bytes in a {len}-byte reply");
    }
}

fuzz_target!(|data: &[u8]| {
    // The RPC header first, then the same bytes past it as every body.
    let body = match parse_reply(data) {
        Ok((_, Ok(at))) => {
            assert!(at <= data.len(), "body at {at} of a {}-byte reply", data.len());
            &data[at..]
        }
        _ => data,
    };
    head_inside(v3::read_head(body), body.len());
    head_inside(v4::read_head(body), body.len());
    head_inside(v4::read_head41(body), body.len());
    let _ = v3::read_result(body, None);
    let _ = v3::write_result(body);
    let _ = v4::read_result(body, None);
    let _ = v4::write_result(body, false);
    let _ = v4::write_result(body, true);
    let _ = compound::sequenced(body);
    if let Ok((_, n, mut d)) = compound::results(body) {
        // Walk the results as the client would, op numbers as they come.
        for _ in 0..n.min(64) {
            let Ok(op) = Dec::new(&body[body.len() - d.remaining()..]).u32() else {
                break;
            };
            if compound::op(&mut d, op).is_err() {
                break;
            }
        }
    }
    let _ = v4::parse_attrs(&mut Dec::new(body));
    let _ = v41::decode_exchange_id(&mut Dec::new(body));
    let _ = v41::decode_create_session(&mut Dec::new(body));
});
