//! fio's latency bins (`stat.h`, json+ output): values below 128 ns each
//! have a bin; above, every power of two `[2^k, 2^(k+1))` is split into 64
//! bins of width `2^(k-6)`, in 29 groups (1856 bins, up to about 17 s; fio
//! counts anything longer in the last bin). json+ names a bin by its
//! midpoint in ns.
//!
//! storlab's histogram ([`crate::stats::histogram`]) is exact below 256 ns
//! and splits every power of two into 128 buckets above, so each of its
//! buckets lies wholly inside one fio bin (fio's bin edges are storlab
//! bucket edges): moving storlab's counts into fio's bins loses nothing fio
//! itself would have kept. Counts beyond fio's range go to its last bin, as
//! fio does.

use crate::stats::histogram::LatHist;

/// Bits of the sub-bin index per group (fio's `FIO_IO_U_PLAT_BITS`).
const PLAT_BITS: u32 = 6;
/// Bins per group (`FIO_IO_U_PLAT_VAL`).
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Number of bins (`FIO_IO_U_PLAT_NR`: 29 groups of 64).
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's bin index of a latency in ns (`plat_val_to_idx`).
pub fn index(ns: u64) -> usize {
    let msb = if ns == 0 { 0 } else { 63 - ns.leading_zeros() };
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as u64 + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value json+ names bin `idx` by (`plat_idx_to_val`): the bin's
/// midpoint, exact below 128 ns.
pub fn value(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < PLAT_VAL << 1 {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    // base + (k + 0.5) * 2^error_bits, exact: error_bits >= 1 here.
    base + (k << error_bits) + (1 << (error_bits - 1))
}

/// `hist`'s counts in fio's bins, `(bin value in ns, count)`, ascending,
/// nonzero only.
pub fn bins(hist: &LatHist) -> Vec<(u64, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    for (lo, _, count) in hist.iter() {
        let idx = index(lo);
        match out.last_mut() {
            Some((last, c)) if *last == idx => *c += count,
            _ => out.push((idx, count)),
        }
    }
    out.into_iter().map(|(i, c)| (value(i), c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram::Histogram;

    #[test]
    fn index_and_value_agree_with_fio() {
        // fio's own edges: exact below 128, width 2 from 128, 4 from 256.
        assert_eq!(
            (index(127), index(128), index(129), index(130)),
            (127, 128, 128, 129)
        );
        assert_eq!((value(128), value(129), value(191)), (129, 131, 255));
        assert_eq!((index(256), value(index(256))), (192, 258));
        assert_eq!(index(u64::MAX), PLAT_NR - 1);
        for idx in 0..PLAT_NR - 1 {
            assert_eq!(index(value(idx)), idx, "bin {idx}");
        }
    }

    #[test]
    fn every_storlab_bucket_lies_inside_one_fio_bin() {
        let mut h = Histogram::new();
        let mut v = 1u64;
        while v < 1 << 36 {
            for d in 0..300 {
                h.record(v + d * (v / 97 + 1));
            }
            v = v * 3 / 2 + 1;
        }
        let snap = h.snapshot();
        let mut buckets = 0;
        for (lo, hi, _) in snap.iter() {
            if index(hi - 1) < PLAT_NR - 1 {
                assert_eq!(index(lo), index(hi - 1), "bucket [{lo}, {hi})");
            }
            buckets += 1;
        }
        assert!(buckets > 2000);
        let total: u64 = bins(&snap).iter().map(|(_, c)| c).sum();
        assert_eq!(total, snap.count());
    }
}
