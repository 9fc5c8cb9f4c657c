//! The agent's request decoding: path + body → a typed, checked request or a
//! refusal with an HTTP status, never a panic. Byte 0 picks the path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab::fleet::agent::decode_request;
use storlab::fleet::wire::paths;

const PATHS: [&str; 8] = [
    paths::HELLO,
    paths::PREPARE,
    paths::START,
    paths::INTERVALS,
    paths::STOP,
    paths::RESULT,
    paths::METRICS,
    "/v1/../etc/passwd",
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let path = PATHS[which as usize % PATHS.len()];
    match decode_request(path, body) {
        Ok(_) => {}
        Err(e) => assert!(
            matches!(e.status, 400 | 404 | 413),
            "unexpected status {} for {path}: {}",
            e.status,
            e.message
        ),
    }
});
