//! The self-describing block: a 48-byte header at the start of every
//! [`VBLOCK`]-byte verify block, and the checksum that covers it.
//!
//! ```text
//! bytes  field
//!  0..8  magic      "STLBVRFY" (little-endian u64 MAGIC)
//!  8..16 target id  64-bit hash of the store's name (file:PATH or the URL)
//! 16..24 offset     absolute byte offset of this block on its store
//! 24..32 seq        write sequence number, unique per storlab process, > 0
//! 32..36 writer     worker index over the point
//! 36..40 run id     random per storlab process (a run)
//! 40..48 checksum   hash64 of bytes 0..40 and 48..512
//! 48..512 payload   the run's content (`content::fill`) for this write
//! ```

use crate::workload::pattern::splitmix64;
use std::fmt;

/// Size of one verify block: every verified I/O is a whole number of these,
/// aligned to it.
pub const VBLOCK: usize = 512;
/// Bytes of header at the start of each verify block.
pub const HEADER: usize = 48;
/// The magic that starts every verify block.
pub const MAGIC: u64 = u64::from_le_bytes(*b"STLBVRFY");

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;

/// A 64-bit hash of `data` seeded with `seed`. Each 8-byte word goes through a
/// bijective step (xor, multiply by an odd constant), so a change confined to
/// one word always changes the result; other changes collide with
/// probability about 2^-64.
pub fn hash64(seed: u64, data: &[u8]) -> u64 {
    let mut h = seed ^ K2 ^ (data.len() as u64).wrapping_mul(K1);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h.rotate_left(29) ^ v).wrapping_mul(K1);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(29) ^ u64::from_le_bytes(b) ^ 0xFF).wrapping_mul(K1);
    }
    let mut x = h;
    splitmix64(&mut x)
}

/// The 64-bit identity of a store written into every header.
pub fn target_id(store: &str) -> u64 {
    hash64(0x7A67_E71D, store.as_bytes())
}

/// The header of one verify block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// [`MAGIC`] when the block is a verify block.
    pub magic: u64,
    /// [`target_id`] of the store it was written to.
    pub target: u64,
    /// Absolute byte offset it was written at.
    pub offset: u64,
    /// Write sequence number.
    pub seq: u64,
    /// Worker that wrote it.
    pub writer: u32,
    /// Run (process) that wrote it.
    pub run: u32,
    /// Checksum stored in the block.
    pub checksum: u64,
}

fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn half(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The checksum of a verify block: bytes 0..40 and the payload.
fn block_sum(block: &[u8]) -> u64 {
    hash64(hash64(0, &block[..40]), &block[HEADER..])
}

impl Header {
    /// Read the header of `block` (exactly [`VBLOCK`] bytes).
    pub fn parse(block: &[u8]) -> Header {
        Header {
            magic: word(block, 0),
            target: word(block, 8),
            offset: word(block, 16),
            seq: word(block, 24),
            writer: half(block, 32),
            run: half(block, 36),
            checksum: word(block, 40),
        }
    }

    /// Whether the stored checksum matches the block's content.
    pub fn checksum_ok(&self, block: &[u8]) -> bool {
        self.checksum == block_sum(block)
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.magic != MAGIC {
            return write!(f, "no verify header (first bytes {:016x})", self.magic);
        }
        write!(
            f,
            "target {:016x} offset {} seq {} writer {} run {:08x}",
            self.target, self.offset, self.seq, self.writer, self.run
        )
    }
}

/// Write the header of every verify block of `buf` (a write of `buf.len()`
/// bytes at `offset`, both multiples of [`VBLOCK`]), checksums included.
pub fn format(buf: &mut [u8], target: u64, offset: u64, seq: u64, writer: u32, run: u32) {
    for (i, block) in buf.chunks_exact_mut(VBLOCK).enumerate() {
        block[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        block[8..16].copy_from_slice(&target.to_le_bytes());
        block[16..24].copy_from_slice(&(offset + (i * VBLOCK) as u64).to_le_bytes());
        block[24..32].copy_from_slice(&seq.to_le_bytes());
        block[32..36].copy_from_slice(&writer.to_le_bytes());
        block[36..40].copy_from_slice(&run.to_le_bytes());
        let sum = block_sum(block);
        block[40..48].copy_from_slice(&sum.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_then_parse_round_trips() {
        let mut buf = vec![0x5Au8; 4 * VBLOCK];
        format(&mut buf, 77, 8192, 5, 3, 0xABCD);
        for (i, b) in buf.chunks_exact(VBLOCK).enumerate() {
            let h = Header::parse(b);
            assert_eq!(h.magic, MAGIC);
            assert_eq!(
                (h.target, h.offset, h.seq),
                (77, 8192 + (i * VBLOCK) as u64, 5)
            );
            assert_eq!((h.writer, h.run), (3, 0xABCD));
            assert!(h.checksum_ok(b));
        }
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let mut buf = vec![0u8; VBLOCK];
        crate::workload::content::fill(&mut buf, crate::workload::Content::Random, 1, 2);
        format(&mut buf, 1, 0, 9, 0, 1);
        for bit in 0..VBLOCK * 8 {
            let mut b = buf.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let h = Header::parse(&b);
            // A flip in the magic, target, offset, seq, writer or run shows as a
            // wrong field or a bad checksum; anywhere else as a bad checksum.
            let caught =
                !h.checksum_ok(&b) || h.magic != MAGIC || (h.target, h.offset, h.seq) != (1, 0, 9);
            assert!(caught, "flip of bit {bit} not detected");
        }
    }

    #[test]
    fn hash_depends_on_every_word_and_the_length() {
        let a = [1u8; 64];
        let mut b = a;
        b[63] = 2;
        assert_ne!(hash64(0, &a), hash64(0, &b));
        assert_ne!(hash64(0, &a[..63]), hash64(0, &a[..64]));
        assert_ne!(hash64(0, &a), hash64(1, &a));
        assert_ne!(target_id("file:/a"), target_id("file:/b"));
    }
}
