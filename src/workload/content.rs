//! Data content of prepared files and of writes.
//!
//! [`fill`] is deterministic per `(content, seed, block_no, buffer length)`, so
//! a test or a verifier can recompute what was written. [`stamp`] makes a
//! filled buffer unique per write at a cost of 8 bytes per 512-byte sector
//! (fio's `scramble_buffers`).

use crate::workload::Content;
use crate::workload::pattern::{Rng, splitmix64};

/// The unit in which `Mixed` content places its compressible share.
pub const UNIT: usize = 4096;
/// The sector size [`stamp`] works in.
pub const SECTOR: usize = 512;

const DEDUPE_TAG: u64 = 0xD3D0_9E5E_ED00_0001;
const CANON_TAG: u64 = 0xCA40_41CA_1B10_C000;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A well-mixed 64-bit hash of two words.
#[inline]
fn mix(a: u64, b: u64) -> u64 {
    let mut x = a;
    let h = splitmix64(&mut x);
    let mut y = h ^ b;
    splitmix64(&mut y)
}

/// Whether `block_no` is one of the `dedupe_pct` percent of blocks that repeat
/// the canonical block of `seed`.
pub fn is_dedupe_block(seed: u64, block_no: u64, dedupe_pct: u8) -> bool {
    dedupe_pct > 0 && (mix(seed ^ DEDUPE_TAG, block_no) % 100) < dedupe_pct.min(100) as u64
}

/// The key a mixed block's units are drawn from: the canonical block's for
/// a dedupe block, else the block's own.
fn block_key(seed: u64, block_no: u64, dedupe_pct: u8) -> u64 {
    if is_dedupe_block(seed, block_no, dedupe_pct) {
        mix(seed ^ CANON_TAG, 0)
    } else {
        mix(seed, block_no)
    }
}

/// Bytes of a `unit_len`-byte unit that are random under `compress_pct`
/// (the rest, at the end of the unit, are zeros).
#[inline]
fn random_len(unit_len: usize, compress_pct: u8) -> usize {
    let zeros = unit_len * compress_pct.min(100) as usize / 100;
    unit_len - zeros
}

/// Fill `buf` with the content of block `block_no` for `seed`.
///
/// * `Random`: incompressible bytes, different for every `(seed, block_no)`.
/// * `Zeros`: all zero.
/// * `Mixed`: each 4 KiB unit (the last one may be shorter) has its last
///   `compress_pct` percent of bytes zero and the rest random; a block whose
///   hash falls under `dedupe_pct` ([`is_dedupe_block`]) gets the seed's
///   canonical block instead of its own, the same bytes every time. Canonical
///   blocks of different lengths share their leading units, so storage that
///   deduplicates at 4 KiB or coarser sees them all as copies.
pub fn fill(buf: &mut [u8], content: Content, seed: u64, block_no: u64) {
    match content {
        Content::Zeros => buf.fill(0),
        Content::Random => Rng::new(mix(seed, block_no)).fill_bytes(buf),
        Content::Mixed {
            compress_pct,
            dedupe_pct,
        } => {
            let key = block_key(seed, block_no, dedupe_pct);
            for (u, unit) in buf.chunks_mut(UNIT).enumerate() {
                let r = random_len(unit.len(), compress_pct);
                let (rnd, zeros) = unit.split_at_mut(r);
                if !rnd.is_empty() {
                    Rng::new(key ^ (u as u64).wrapping_mul(GOLDEN)).fill_bytes(rnd);
                }
                zeros.fill(0);
            }
        }
    }
}

/// The bytes a file prepared by `crate::prepare` holds at `offset`: the file
/// of `file_size` bytes was filled chunk by chunk, chunk `n` (of `chunk` bytes,
/// the last one shorter) with [`fill`]`(.., content, seed, n)`. Writes
/// `out.len()` bytes (clipped at `file_size`; the rest is left alone) and
/// returns how many it wrote. Used by the verifier to check blocks a run never
/// wrote; the cost is that of filling up to `offset` within its chunk.
pub fn prepared_bytes(
    out: &mut [u8],
    content: Content,
    seed: u64,
    chunk: u64,
    file_size: u64,
    offset: u64,
) -> usize {
    let mut done = 0usize;
    while done < out.len() {
        let off = offset + done as u64;
        if off >= file_size || chunk == 0 {
            break;
        }
        let n = off / chunk;
        let start = n * chunk;
        let chunk_len = chunk.min(file_size - start) as usize;
        let pos = (off - start) as usize;
        let take = (chunk_len - pos).min(out.len() - done);
        chunk_range(
            &mut out[done..done + take],
            content,
            seed,
            n,
            chunk_len,
            pos,
        );
        done += take;
    }
    done
}

/// Bytes `[pos, pos + out.len())` of `fill(buf of chunk_len, content, seed, n)`.
fn chunk_range(out: &mut [u8], content: Content, seed: u64, n: u64, chunk_len: usize, pos: usize) {
    // Bytes [pos, ..) of a random stream: skip whole words, then copy.
    let stream = |out: &mut [u8], key: u64, pos: usize| {
        let mut rng = Rng::new(key);
        for _ in 0..pos / 8 {
            rng.next_u64();
        }
        let skip = pos % 8;
        let mut tmp = vec![0u8; out.len() + skip];
        rng.fill_bytes(&mut tmp);
        out.copy_from_slice(&tmp[skip..]);
    };
    match content {
        Content::Zeros => out.fill(0),
        Content::Random => stream(out, mix(seed, n), pos),
        Content::Mixed {
            compress_pct,
            dedupe_pct,
        } => {
            let key = block_key(seed, n, dedupe_pct);
            let mut at = pos;
            let mut done = 0;
            while done < out.len() {
                let u = at / UNIT;
                let unit_len = UNIT.min(chunk_len - u * UNIT);
                let r = random_len(unit_len, compress_pct);
                let in_unit = at - u * UNIT;
                let take = (unit_len - in_unit).min(out.len() - done);
                let dst = &mut out[done..done + take];
                // Random part of the unit first, zeros after.
                let rnd_end = r.saturating_sub(in_unit).min(take);
                if rnd_end > 0 {
                    stream(
                        &mut dst[..rnd_end],
                        key ^ (u as u64).wrapping_mul(GOLDEN),
                        in_unit,
                    );
                }
                dst[rnd_end..].fill(0);
                at += take;
                done += take;
            }
        }
    }
}

/// Make a filled buffer unique to write number `seq`: overwrite the first 8
/// bytes of every 512-byte sector with a value derived from `seq`.
///
/// `Zeros` content is left all zero. For `Mixed` content only sectors that
/// start in the random part of their 4 KiB unit are stamped, so the
/// compressible share is kept; stamping does make every block unique, so a
/// writer that wants the `dedupe_pct` share must [`fill`] per write instead.
#[inline]
pub fn stamp(buf: &mut [u8], content: Content, seq: u64) {
    let mut x = seq;
    let base = splitmix64(&mut x);
    match content {
        Content::Zeros => {}
        Content::Random => stamp_range(buf, base, 0),
        Content::Mixed { compress_pct, .. } => {
            for (u, unit) in buf.chunks_mut(UNIT).enumerate() {
                let r = random_len(unit.len(), compress_pct);
                stamp_range(&mut unit[..r], base, u * (UNIT / SECTOR));
            }
        }
    }
}

/// Stamp every sector of `buf` that has 8 bytes; `first` numbers the first sector.
#[inline]
fn stamp_range(buf: &mut [u8], base: u64, first: usize) {
    for (k, sector) in buf.chunks_mut(SECTOR).enumerate() {
        if let Some(head) = sector.get_mut(..8) {
            let v = base.wrapping_add(((first + k) as u64).wrapping_mul(GOLDEN));
            head.copy_from_slice(&v.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    const MIB: usize = 1 << 20;

    fn zero_share(buf: &[u8]) -> f64 {
        buf.iter().filter(|&&b| b == 0).count() as f64 / buf.len() as f64
    }

    #[test]
    fn deterministic_per_seed_and_block() {
        for content in [
            Content::Random,
            Content::Mixed {
                compress_pct: 50,
                dedupe_pct: 0,
            },
            Content::Mixed {
                compress_pct: 30,
                dedupe_pct: 40,
            },
        ] {
            let mut a = vec![0u8; 3 * UNIT + 100];
            let mut b = vec![1u8; 3 * UNIT + 100];
            fill(&mut a, content, 42, 7);
            fill(&mut b, content, 42, 7);
            assert_eq!(a, b, "{content:?}");
        }
        let mut a = vec![0u8; 8192];
        let mut b = vec![0u8; 8192];
        fill(&mut a, Content::Random, 42, 7);
        fill(&mut b, Content::Random, 42, 8);
        assert_ne!(a, b);
        fill(&mut b, Content::Random, 43, 7);
        assert_ne!(a, b);
        // A shorter buffer is a prefix of the longer one for Random.
        let mut c = vec![0u8; 1000];
        fill(&mut c, Content::Random, 42, 7);
        assert_eq!(&c[..], &a[..1000]);
    }

    #[test]
    fn prepared_bytes_match_a_chunked_fill() {
        let chunk = 3 * UNIT as u64 + 1000;
        let size = 3 * chunk + 777;
        for content in [
            Content::Random,
            Content::Zeros,
            Content::Mixed {
                compress_pct: 37,
                dedupe_pct: 0,
            },
            Content::Mixed {
                compress_pct: 10,
                dedupe_pct: 50,
            },
        ] {
            let mut whole = vec![0u8; size as usize];
            for (i, c) in whole.chunks_mut(chunk as usize).enumerate() {
                fill(c, content, 5, i as u64);
            }
            for (off, len) in [
                (0u64, 512usize),
                (13, 5000),
                (chunk - 3, 9),
                (size - 100, 300),
            ] {
                let mut out = vec![0xEEu8; len];
                let n = prepared_bytes(&mut out, content, 5, chunk, size, off);
                let end = (off as usize + len).min(size as usize);
                assert_eq!(n, end - off as usize);
                assert_eq!(&out[..n], &whole[off as usize..end], "{content:?} at {off}");
            }
        }
    }

    #[test]
    fn zeros_stay_zero_even_stamped() {
        let mut buf = vec![0xAAu8; 64 * 1024 + 3];
        fill(&mut buf, Content::Zeros, 1, 2);
        assert!(buf.iter().all(|&b| b == 0));
        stamp(&mut buf, Content::Zeros, 12345);
        assert!(buf.iter().all(|&b| b == 0));
    }

    #[test]
    fn random_is_incompressible_looking() {
        let mut buf = vec![0u8; MIB];
        fill(&mut buf, Content::Random, 9, 0);
        let z = zero_share(&buf);
        assert!(z < 0.01, "zero share {z}");
        let mut counts = [0u32; 256];
        for &b in &buf {
            counts[b as usize] += 1;
        }
        let expect = MIB as f64 / 256.0;
        assert!(
            counts
                .iter()
                .all(|&c| (c as f64 - expect).abs() < expect * 0.1)
        );
    }

    #[test]
    fn compress_share_is_zero_bytes() {
        for pct in [0u8, 25, 50, 75, 100] {
            let mut buf = vec![0xFFu8; MIB];
            fill(
                &mut buf,
                Content::Mixed {
                    compress_pct: pct,
                    dedupe_pct: 0,
                },
                5,
                3,
            );
            let z = zero_share(&buf);
            // Random bytes are zero 1/256 of the time.
            let expect = pct as f64 / 100.0 + (1.0 - pct as f64 / 100.0) / 256.0;
            assert!(
                (z - expect).abs() < 0.005,
                "pct {pct}: zero share {z}, expected {expect}"
            );
            // Stamping keeps the compressible share.
            stamp(
                &mut buf,
                Content::Mixed {
                    compress_pct: pct,
                    dedupe_pct: 0,
                },
                77,
            );
            let z2 = zero_share(&buf);
            assert!(
                (z2 - expect).abs() < 0.005,
                "pct {pct} stamped: zero share {z2}"
            );
            // Each 4 KiB unit ends with its zeros.
            let zeros = UNIT * pct as usize / 100;
            assert!(buf[UNIT - zeros..UNIT].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn dedupe_share_over_many_blocks() {
        let content = Content::Mixed {
            compress_pct: 0,
            dedupe_pct: 30,
        };
        let mut canon = None::<Vec<u8>>;
        let mut dup = 0;
        let n = 20_000u64;
        let mut buf = vec![0u8; 8192];
        for block in 0..n {
            fill(&mut buf, content, 11, block);
            if is_dedupe_block(11, block, 30) {
                dup += 1;
                match &canon {
                    None => canon = Some(buf.clone()),
                    Some(c) => assert_eq!(c, &buf, "block {block} should be canonical"),
                }
            } else if let Some(c) = &canon {
                assert_ne!(c, &buf);
            }
        }
        let share = dup as f64 / n as f64;
        assert!((share - 0.30).abs() < 0.02, "dedupe share {share}");
        // A shorter canonical block is the prefix of a longer one.
        let first = (0..n).find(|&b| is_dedupe_block(11, b, 30)).unwrap();
        let mut small = vec![0u8; UNIT];
        fill(&mut small, content, 11, first);
        assert_eq!(&small[..], &canon.unwrap()[..UNIT]);
        assert!(!(0..1000).any(|b| is_dedupe_block(11, b, 0)));
        assert!((0..1000).all(|b| is_dedupe_block(11, b, 100)));
    }

    #[test]
    fn stamp_makes_writes_unique() {
        let mut a = vec![0u8; 8192];
        fill(&mut a, Content::Random, 1, 1);
        let mut b = a.clone();
        stamp(&mut a, Content::Random, 1);
        stamp(&mut b, Content::Random, 2);
        assert_ne!(a, b);
        for s in 0..16 {
            assert_ne!(a[s * SECTOR..s * SECTOR + 8], b[s * SECTOR..s * SECTOR + 8]);
            assert_eq!(
                a[s * SECTOR + 8..(s + 1) * SECTOR],
                b[s * SECTOR + 8..(s + 1) * SECTOR]
            );
        }
        // Odd lengths do not panic.
        let mut odd = vec![0u8; 517];
        stamp(&mut odd, Content::Random, 3);
        stamp(&mut odd[..5], Content::Random, 3);
    }

    #[test]
    fn fill_one_mib_is_fast() {
        let mut buf = vec![0u8; MIB];
        let content = Content::Mixed {
            compress_pct: 40,
            dedupe_pct: 20,
        };
        // Warm up, then take the best of a few runs (debug builds are slower;
        // the budget here is loose, the release figure is printed).
        let mut best = std::time::Duration::MAX;
        for i in 0..8 {
            let t = Instant::now();
            fill(&mut buf, Content::Random, 1, i);
            fill(&mut buf, content, 1, i);
            best = best.min(t.elapsed() / 2);
        }
        println!("fill 1 MiB: {best:?}");
        let limit = if cfg!(debug_assertions) { 20 } else { 1 };
        assert!(
            best < std::time::Duration::from_millis(limit),
            "fill of 1 MiB took {best:?}"
        );
    }
}
