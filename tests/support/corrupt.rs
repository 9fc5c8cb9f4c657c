//! Injected corruption for the verify tests: bits flipped in blocks of a
//! file behind storlab's back, and the bad blocks storlab reported.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// storlab's verify block size.
pub const VBLOCK: u64 = 512;

/// Flip one bit in each of `n` distinct verify blocks of
/// `[start, start + len)` of `path` (anywhere in the block: header or
/// payload), chosen by `seed`; returns the blocks' offsets.
pub fn flip_bits(path: &Path, start: u64, len: u64, n: usize, seed: u64) -> BTreeSet<u64> {
    assert!(
        n as u64 <= len / VBLOCK,
        "{n} blocks do not fit in {len} bytes"
    );
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // xorshift64: a fixed, seedable sequence (the seed must not be 0).
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut blocks = BTreeSet::new();
    while blocks.len() < n {
        let block = start + (next() % (len / VBLOCK)) * VBLOCK;
        if !blocks.insert(block) {
            continue;
        }
        let at = block + next() % VBLOCK;
        let mut b = [0u8; 1];
        f.seek(SeekFrom::Start(at)).unwrap();
        f.read_exact(&mut b).unwrap();
        b[0] ^= 1 << (next() % 8);
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&b).unwrap();
    }
    f.sync_all().unwrap();
    blocks
}

/// The offsets of the bad blocks storlab printed (`storlab: verify: … at
/// offset N: …` lines).
pub fn reported(out: &str) -> BTreeSet<u64> {
    out.lines()
        .filter(|l| l.starts_with("storlab: verify: "))
        .filter_map(|l| l.split(" at offset ").nth(1))
        .filter_map(|r| r.split(':').next()?.trim().parse().ok())
        .collect()
}
