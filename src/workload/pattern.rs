//! Access-pattern generation: which disk region, offset, size and direction each I/O takes.

pub use super::rng::{Rng, splitmix64};
use super::skew::Skew;
use super::{Access, Dir};

/// One I/O to issue: direction, absolute byte offset on the disk, length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    /// Read or write.
    pub dir: Dir,
    /// Absolute offset on the disk, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub len: u32,
}

/// One entry of the block-size mix with everything the hot path needs precomputed,
/// so `next` never divides.
#[derive(Clone, Debug)]
struct Size {
    len: u32,
    /// Cumulative weight up to and including this entry.
    cum_weight: u64,
    /// Aligned start positions at which a block of this size fits in the region.
    slots: u64,
    /// How far the sequential cursor moves: `len` rounded up to the alignment,
    /// so the next sequential I/O stays aligned.
    advance: u64,
}

/// Iometer-style access pattern for one worker over its disks: each I/O is a
/// read with probability `read_pct`%, at a random aligned offset with
/// probability `random_pct`% and otherwise contiguous with the previous I/O on
/// the same disk, with its size drawn from the weighted mix.
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Rng,
    sizes: Vec<Size>,
    total_weight: u64,
    /// Read when the low 32 random bits are below this (2^32 = always).
    read_below: u64,
    /// Random offset when the high 32 random bits are below this.
    random_below: u64,
    align: u64,
    /// Size of every disk's region.
    size: u64,
    /// Per disk: its region's start and the next sequential position in it.
    disks: Vec<DiskCursor>,
    /// Where random offsets fall, in alignment units; `None`: uniformly
    /// (drawn here directly, as before distributions existed, so a seed
    /// gives the same offsets it always gave).
    skew: Option<Skew>,
}

/// One disk's region start and sequential cursor.
#[derive(Clone, Copy, Debug)]
struct DiskCursor {
    /// Absolute start of the disk's region, bytes.
    base: u64,
    /// Next sequential position, relative to `base`.
    next: u64,
}

impl Generator {
    /// `bases`: one entry per disk the worker spreads its I/O over, the start
    /// of its region on that disk; every region is `size` bytes, so I/O to
    /// disk `i` stays in `[bases[i], bases[i] + size)`. No bases means one disk
    /// with its region at 0.
    ///
    /// Expects a validated spec (size at least the largest block); a block
    /// larger than the region is issued at the region start rather than panicking.
    pub fn new(access: &Access, bases: &[u64], size: u64, seed: u64) -> Self {
        let align = access.alignment().max(1);
        let mut cum = 0u64;
        let sizes: Vec<Size> = access
            .bs
            .0
            .iter()
            .map(|&(bs, w)| {
                cum += w.max(1) as u64;
                let len = bs.clamp(1, u32::MAX as u64);
                Size {
                    len: len as u32,
                    cum_weight: cum,
                    slots: if size >= len {
                        (size - len) / align + 1
                    } else {
                        1
                    },
                    advance: len.div_ceil(align) * align,
                }
            })
            .collect();
        let sizes = if sizes.is_empty() {
            vec![Size {
                len: align as u32,
                cum_weight: 1,
                slots: 1,
                advance: align,
            }]
        } else {
            sizes
        };
        let threshold = |pct: u8| (pct.min(100) as u64 * (1u64 << 32)) / 100;
        // The distribution ranges over the smallest block's slots; a larger
        // block drawn past its own last slot starts at that slot.
        let units = sizes.iter().map(|s| s.slots).max().unwrap_or(1);
        let skew = Skew::new(&access.distribution, units, align);
        Generator {
            rng: Rng::new(seed),
            total_weight: sizes.last().map_or(1, |s| s.cum_weight),
            sizes,
            read_below: threshold(access.read_pct),
            random_below: threshold(access.random_pct),
            align,
            size,
            disks: if bases.is_empty() {
                vec![DiskCursor { base: 0, next: 0 }]
            } else {
                bases
                    .iter()
                    .map(|&base| DiskCursor { base, next: 0 })
                    .collect()
            },
            skew,
        }
    }

    /// The next I/O for disk `disk` (< disks).
    ///
    /// Written to be branch-free where the outcome is random (direction, size,
    /// random or sequential): those branches would mispredict half the time and
    /// cost more than drawing a random offset that is then not used.
    #[inline]
    pub fn next(&mut self, disk: usize) -> Io {
        let r = self.rng.next_u64();
        let dir = if (r & 0xFFFF_FFFF) < self.read_below {
            Dir::Read
        } else {
            Dir::Write
        };
        let random = (r >> 32) < self.random_below;
        let s = if self.sizes.len() == 1 {
            &self.sizes[0]
        } else {
            let w = self.rng.below(self.total_weight);
            // Counting the entries below `w` compiles to compares and adds, no branches.
            let i = self.sizes.iter().filter(|s| w >= s.cum_weight).count();
            &self.sizes[i.min(self.sizes.len() - 1)]
        };
        let (len, slots, advance) = (s.len, s.slots, s.advance);
        let random_pos = match &self.skew {
            None => self.rng.below(slots),
            // A skewed draw costs more than a uniform one: only when used.
            Some(k) if random => k.unit(&mut self.rng).min(slots - 1),
            Some(_) => 0,
        } * self.align;
        let d = &mut self.disks[disk];
        let seq_pos = if d.next + len as u64 <= self.size {
            d.next
        } else {
            0
        };
        let pos = if random { random_pos } else { seq_pos };
        d.next = pos + advance;
        Io {
            dir,
            offset: d.base + pos,
            len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BlockSizes, Dir};
    use super::*;

    fn access(bs: BlockSizes, read: u8, random: u8) -> Access {
        Access {
            bs,
            read_pct: read,
            random_pct: random,
            distribution: Default::default(),
            align: None,
            iodepth: 1,
            batch_complete_min: 1,
            submit_batch: 0,
            rate: None,
            rate_mode: Default::default(),
            think: None,
        }
    }

    const N: usize = 200_000;

    #[test]
    fn read_and_random_shares() {
        for (read, random) in [
            (75u8, 100u8),
            (60, 40),
            (0, 0),
            (100, 50),
            (50, 50),
            (25, 1),
        ] {
            let a = access(BlockSizes::one(4096), read, random);
            let size = 1 << 30;
            let mut g = Generator::new(&a, &[0, 0], size, 42);
            let mut reads = 0;
            let mut jumps = 0;
            let mut last_end = [0u64; 2];
            for i in 0..N {
                let d = i % 2;
                let io = g.next(d);
                if io.dir == Dir::Read {
                    reads += 1;
                }
                if io.offset != last_end[d] {
                    jumps += 1;
                }
                last_end[d] = io.offset + io.len as u64;
            }
            let pct = |n: usize| n as f64 * 100.0 / N as f64;
            assert!(
                (pct(reads) - read as f64).abs() <= 1.5,
                "read {read}: {}",
                pct(reads)
            );
            // A random offset equal to the sequential one is rare enough (1 in 2^18) not to matter.
            assert!(
                (pct(jumps) - random as f64).abs() <= 1.5,
                "random {random}: {}",
                pct(jumps)
            );
        }
    }

    #[test]
    fn aligned_and_inside() {
        let mix = BlockSizes(vec![(4096, 10), (8192, 20), (65536, 5), (1 << 20, 1)]);
        let mut a = access(mix, 50, 70);
        let (base, size) = (12_288u64, (3 << 20) + 4096 * 7);
        for align in [None, Some(512u64), Some(8192), Some(3 * 4096)] {
            a.align = align;
            let al = a.alignment();
            let mut g = Generator::new(&a, &[base; 3], size, 7);
            for i in 0..N {
                let io = g.next(i % 3);
                assert_eq!((io.offset - base) % al, 0, "align {al}: {io:?}");
                assert!(
                    io.offset >= base && io.offset + io.len as u64 <= base + size,
                    "{io:?}"
                );
            }
        }
    }

    #[test]
    fn sequential_is_contiguous_and_wraps() {
        let a = access(BlockSizes::one(4096), 100, 0);
        let (base, size) = (1 << 20, 10 * 4096 + 100);
        let mut g = Generator::new(&a, &[base, base], size, 1);
        for lap in 0..3 {
            for k in 0..10u64 {
                let io = g.next(0);
                assert_eq!(io.offset, base + k * 4096, "lap {lap}");
                assert_eq!(io.len, 4096);
            }
        }
        // The other disk has its own cursor.
        assert_eq!(g.next(1).offset, base);
        assert_eq!(g.next(0).offset, base);
    }

    #[test]
    fn sequential_mix_stays_aligned() {
        let mut a = access(BlockSizes(vec![(512, 1), (4096, 1)]), 0, 0);
        a.align = Some(4096);
        let mut g = Generator::new(&a, &[0], 1 << 20, 3);
        let mut expect = 0u64;
        for _ in 0..10_000 {
            let io = g.next(0);
            if expect + io.len as u64 > 1 << 20 {
                expect = 0;
            }
            assert_eq!(io.offset, expect);
            expect = io.offset + (io.len as u64).div_ceil(4096) * 4096;
        }
    }

    #[test]
    fn bs_mix_weights() {
        let mix = BlockSizes(vec![(4096, 50), (8192, 30), (65536, 20)]);
        let mut g = Generator::new(&access(mix.clone(), 50, 50), &[0], 1 << 30, 9);
        let mut counts = [0usize; 3];
        for _ in 0..N {
            let io = g.next(0);
            let i = mix.0.iter().position(|(s, _)| *s == io.len as u64).unwrap();
            counts[i] += 1;
        }
        for (i, (_, w)) in mix.0.iter().enumerate() {
            let pct = counts[i] as f64 * 100.0 / N as f64;
            assert!((pct - *w as f64).abs() <= 1.5, "{i}: {pct}");
        }
    }

    #[test]
    fn deterministic_per_seed() {
        let a = access(BlockSizes(vec![(4096, 1), (8192, 1)]), 60, 40);
        let run = |seed| {
            let mut g = Generator::new(&a, &[0, 0], 1 << 24, seed);
            (0..1000).map(|i| g.next(i % 2)).collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
    #[test]
    fn every_io_stays_in_its_disks_slice() {
        // Property-style: random slice layouts, sizes, mixes and alignments;
        // each I/O must lie wholly inside the slice of the disk it was drawn for.
        let mut r = Rng::new(2024);
        for case in 0..200 {
            let mut sizes = vec![512u64, 4096, 8192, 65536, 1 << 20];
            sizes.truncate(1 + r.below(5) as usize);
            let mix = BlockSizes(sizes.iter().map(|&s| (s, 1 + r.below(9) as u32)).collect());
            let mut a = access(mix, r.below(101) as u8, r.below(101) as u8);
            a.align = [None, Some(512), Some(4096)][r.below(3) as usize];
            let size = a.bs.max() + r.below(4 << 20);
            let disks = 1 + r.below(8) as usize;
            let offset = r.below(1 << 20) * 512;
            // Disk i of the worker is VM disk k_i of a shared target: the
            // slices of other workers sit in between.
            let bases: Vec<u64> = (0..disks)
                .map(|i| offset + (i as u64 * 3 + r.below(3)) * size)
                .collect();
            let mut g = Generator::new(&a, &bases, size, case);
            for i in 0..5_000 {
                let d = (i + (r.below(2) as usize)) % disks;
                let io = g.next(d);
                let (lo, hi) = (bases[d], bases[d] + size);
                assert!(
                    io.offset >= lo && io.offset + io.len as u64 <= hi,
                    "case {case}: disk {d} slice [{lo}, {hi}), got {io:?}"
                );
                assert_eq!((io.offset - lo) % a.alignment(), 0, "case {case}: {io:?}");
            }
        }
    }

    #[test]
    fn skewed_offsets_follow_the_distribution_and_stay_in_the_slice() {
        // zipf:1.2 over 1024 4 KiB positions: the hottest offset takes
        // 1 / H(1024, 1.2) of the random I/O; the sequential share is not skewed.
        let mut a = access(BlockSizes(vec![(4096, 3), (16384, 1)]), 100, 100);
        a.distribution = crate::workload::skew::Distribution::parse("x", "zipf:1.2").unwrap();
        let (base, size) = (1u64 << 20, 4u64 << 20);
        let mut g = Generator::new(&a, &[base], size, 11);
        let mut counts = std::collections::HashMap::<u64, u64>::new();
        for _ in 0..N {
            let io = g.next(0);
            assert!(
                io.offset >= base && io.offset + io.len as u64 <= base + size,
                "{io:?}"
            );
            assert_eq!(io.offset % 4096, 0);
            *counts.entry(io.offset).or_default() += 1;
        }
        let norm: f64 = (1..=1024u64).map(|k| (k as f64).powf(-1.2)).sum();
        let hottest = *counts.values().max().unwrap() as f64 / N as f64;
        assert!(
            (hottest - 1.0 / norm).abs() < 0.05 / norm,
            "{hottest} against {}",
            1.0 / norm
        );
    }
}
