//! Log-linear (HDR-style) latency histogram in nanoseconds.
//!
//! # Bucket layout and error bound
//!
//! Values below 2^[`SUB_BUCKET_BITS`] (256 ns) each get their own bucket, so
//! they are recorded exactly. Every power-of-two range above that,
//! `[2^k, 2^(k+1))` for `k >= 8`, is split into 128 equal sub-buckets of width
//! `2^(k-7)`. A bucket's width is therefore at most 1/128 of its lower bound,
//! and a percentile reported as the bucket midpoint is within ±1/256 (about
//! ±0.4%) of the true sample value.
//!
//! Values at or above 2^40 ns (about 18 minutes) are clamped into the last
//! bucket; `min`, `max` and `sum` are kept from the unclamped values, so they
//! stay exact, and a percentile landing in that open-ended bucket reports the
//! max rather than a made-up midpoint.
//!
//! # Two forms
//!
//! [`Histogram`] is the dense form the engine writes on its hot path: a flat
//! array of counts indexed by a few integer instructions. [`LatHist`] is the
//! sparse form that is stored, serialized and merged: only nonzero buckets.
//! Both hold counts only; percentiles are computed when read.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Values below `2^SUB_BUCKET_BITS` ns are exact; above, each power of two is
/// split into `2^(SUB_BUCKET_BITS - 1)` sub-buckets.
pub const SUB_BUCKET_BITS: u32 = 8;

/// Sub-buckets per power of two above the exact range.
const HALF: u64 = 1 << (SUB_BUCKET_BITS - 1);
/// log2 of the first value that no longer gets its own bucket.
const MAX_BITS: u32 = 40;
/// The largest value that still lands in its own bucket.
const MAX_TRACKED: u64 = (1 << MAX_BITS) - 1;
/// Number of dense buckets: the exact range plus 128 per power of two up to 2^40.
pub(crate) const BUCKETS: usize = bucket_index(MAX_TRACKED) + 1;

/// Bucket index of `v`, which must be at most [`MAX_TRACKED`].
///
/// OR-ing in bit 7 makes every value below 256 look like it is in the range
/// `[128, 256)`, whose shift is 0, so the exact range needs no branch.
#[inline(always)]
const fn bucket_index(v: u64) -> usize {
    let shift = (63 - SUB_BUCKET_BITS + 1) - (v | HALF).leading_zeros();
    ((shift as u64) * HALF + (v >> shift)) as usize
}

/// Bucket index of `v` with out-of-range values clamped into the last bucket.
#[inline(always)]
fn clamped_index(v: u64) -> usize {
    bucket_index(v.min(MAX_TRACKED))
}

/// The half-open value range `[lo, hi)` covered by bucket `idx`.
const fn bucket_bounds(idx: usize) -> (u64, u64) {
    let idx = idx as u64;
    if idx < 2 * HALF {
        return (idx, idx + 1);
    }
    let shift = idx / HALF - 1;
    let mantissa = idx % HALF + HALF;
    (mantissa << shift, (mantissa + 1) << shift)
}

/// The dense, hot-path histogram one engine thread records into.
///
/// Recording is a handful of integer instructions with no floating point and
/// no allocation. `reset` and `snapshot` only touch the buckets between the
/// smallest and largest recorded values, so a mostly-idle interval is cheap.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    min: u64,
    max: u64,
    /// u128 so a long, deep run cannot overflow (u64 would wrap after ~584
    /// years of summed latency, reachable at millions of IOPS over days).
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram (allocates its ~34 KiB of buckets once).
    pub fn new() -> Self {
        let counts: Box<[u64; BUCKETS]> = vec![0u64; BUCKETS]
            .into_boxed_slice()
            .try_into()
            .expect("length is BUCKETS");
        Histogram {
            counts,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Records one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[clamped_index(ns)] += 1;
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128;
    }

    /// Records `n` latencies of `ns` nanoseconds each.
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[clamped_index(ns)] += n;
        self.count += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * n as u128;
    }

    /// True when nothing has been recorded since the last reset.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The index range that can hold nonzero counts, derived from min/max so
    /// the hot path does not have to track it separately.
    fn touched(&self) -> std::ops::RangeInclusive<usize> {
        clamped_index(self.min)..=clamped_index(self.max)
    }

    /// Clears all counts; only the touched range is written.
    pub fn reset(&mut self) {
        if self.count == 0 {
            return;
        }
        let range = self.touched();
        self.counts[range].fill(0);
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
    }

    /// The sparse, mergeable copy of the current contents.
    pub fn snapshot(&self) -> LatHist {
        if self.count == 0 {
            return LatHist::default();
        }
        let range = self.touched();
        let start = *range.start();
        let buckets = self.counts[range]
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != 0)
            .map(|(i, &c)| ((start + i) as u32, c))
            .collect();
        LatHist {
            count: self.count,
            min_ns: self.min,
            max_ns: self.max,
            sum_ns: self.sum,
            buckets,
        }
    }

    /// Snapshot followed by reset: what one reporting interval hands over.
    pub fn take(&mut self) -> LatHist {
        let snap = self.snapshot();
        self.reset();
        snap
    }
}

/// Sparse latency histogram: the stored, serialized and mergeable form.
///
/// Holds counts only. Two `LatHist`s add to the histogram of the union of
/// their samples; percentiles are derived on demand and never stored.
///
/// JSON form (self-describing, bucket lower bounds in ns rather than indices):
/// `{"sub_bucket_bits":8,"count":3,"min_ns":90,"max_ns":1000,"sum_ns":1190,
/// "buckets":[[90,1],[100,1],[1000,1]]}`. `sum_ns` is a u128; it fits in a
/// JSON number exactly but readers that parse numbers as doubles may round it.
/// Deserialization rejects another `sub_bucket_bits`, a lower bound that is
/// not a bucket boundary, unsorted buckets and counts that do not add up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LatHistWire", into = "LatHistWire")]
pub struct LatHist {
    count: u64,
    /// Meaningless (0) when `count == 0`; merging checks emptiness first.
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    /// Sorted by index, nonzero counts only.
    buckets: Vec<(u32, u64)>,
}

impl LatHist {
    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Smallest sample (exact), 0 when empty.
    pub fn min_ns(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min_ns }
    }

    /// Largest sample (exact), 0 when empty.
    pub fn max_ns(&self) -> u64 {
        if self.count == 0 { 0 } else { self.max_ns }
    }

    /// Sum of all samples (exact).
    pub fn sum_ns(&self) -> u128 {
        self.sum_ns
    }

    /// Arithmetic mean (exact up to f64 rounding), 0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The value reported for bucket `idx`: its midpoint, pulled into
    /// `[min, max]` so edge buckets (and the clamped last one) never report a
    /// value outside what was actually seen. The last bucket is open-ended
    /// (it absorbs everything clamped), so its only meaningful value is the max.
    fn representative(&self, idx: u32) -> u64 {
        if idx as usize == BUCKETS - 1 {
            return self.max_ns;
        }
        let (lo, hi) = bucket_bounds(idx as usize);
        (lo + (hi - lo) / 2).clamp(self.min_ns, self.max_ns)
    }

    /// The `q`-th percentile (`q` in 0..=100) in ns; 0 when empty.
    ///
    /// Uses the nearest-rank definition: the smallest sample with at least
    /// `q`% of samples at or below it. The result is that sample's bucket
    /// midpoint (within ±0.4%, see the module docs) clamped into `[min, max]`;
    /// `q <= 0` gives the exact min and `q >= 100` the exact max. A percentile
    /// that falls among values clamped above 2^40 ns reports the max.
    pub fn percentile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        if q.is_nan() || q <= 0.0 {
            return self.min_ns;
        }
        if q >= 100.0 {
            return self.max_ns;
        }
        let rank = ((q / 100.0) * self.count as f64).ceil() as u64;
        let rank = rank.clamp(1, self.count);
        let mut seen = 0u64;
        for &(idx, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return self.representative(idx);
            }
        }
        self.max_ns
    }

    /// SQLIO-style latency histogram: counts in 1 ms buckets `0..limit_ms`
    /// plus a final "`limit_ms`+" bucket, so `limit_ms + 1` entries.
    ///
    /// A histogram bucket that straddles a millisecond boundary is attributed
    /// wholly to the millisecond containing its midpoint (at 1 ms a bucket is
    /// 8.2 µs wide, so at most that much of the distribution can shift).
    pub fn ms_buckets(&self, limit_ms: u32) -> Vec<u64> {
        let mut out = vec![0u64; limit_ms as usize + 1];
        for &(idx, c) in &self.buckets {
            let ms = self.representative(idx) / 1_000_000;
            let slot = ms.min(limit_ms as u64) as usize;
            out[slot] += c;
        }
        out
    }

    /// Points of the cumulative distribution for plotting: for each nonzero
    /// bucket, `(x_ns, fraction of samples <= x_ns)`, where `x_ns` is the
    /// bucket's largest value (clamped to the max). The fractions are exact
    /// at those points and the last one is 1.0. Empty for an empty histogram.
    pub fn cdf_points(&self) -> Vec<(u64, f64)> {
        let total = self.count as f64;
        let mut seen = 0u64;
        self.buckets
            .iter()
            .map(|&(idx, c)| {
                seen += c;
                let (_, hi) = bucket_bounds(idx as usize);
                let x = (hi - 1).min(self.max_ns);
                (x, seen as f64 / total)
            })
            .collect()
    }

    /// Nonzero buckets in ascending order as `(lo_ns, hi_ns, count)`, with
    /// `hi_ns` exclusive.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.buckets.iter().map(|&(idx, c)| {
            let (lo, hi) = bucket_bounds(idx as usize);
            (lo, hi, c)
        })
    }

    /// Merges `other` into `self`: counts add, min of mins, max of maxes.
    fn merge(&mut self, other: &LatHist) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let mut merged = Vec::with_capacity(self.buckets.len().max(other.buckets.len()));
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&(ia, ca)), Some(&&(ib, cb))) => {
                    if ia < ib {
                        a.next();
                        (ia, ca)
                    } else if ib < ia {
                        b.next();
                        (ib, cb)
                    } else {
                        a.next();
                        b.next();
                        (ia, ca + cb)
                    }
                }
                (Some(&&x), None) => {
                    a.next();
                    x
                }
                (None, Some(&&x)) => {
                    b.next();
                    x
                }
                (None, None) => break,
            };
            merged.push(next);
        }
        self.buckets = merged;
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }
}

impl AddAssign<&LatHist> for LatHist {
    fn add_assign(&mut self, rhs: &LatHist) {
        self.merge(rhs);
    }
}

addition_from_add_assign_ref!(LatHist);

/// The on-disk shape of [`LatHist`]: bucket lower bounds in ns instead of
/// indices, so a reader needs no knowledge of the index function.
#[derive(Serialize, Deserialize)]
struct LatHistWire {
    sub_bucket_bits: u32,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    buckets: Vec<(u64, u64)>,
}

impl From<LatHist> for LatHistWire {
    fn from(h: LatHist) -> Self {
        LatHistWire {
            sub_bucket_bits: SUB_BUCKET_BITS,
            count: h.count,
            min_ns: h.min_ns(),
            max_ns: h.max_ns(),
            sum_ns: h.sum_ns,
            buckets: h
                .buckets
                .iter()
                .map(|&(idx, c)| (bucket_bounds(idx as usize).0, c))
                .collect(),
        }
    }
}

impl TryFrom<LatHistWire> for LatHist {
    type Error = String;

    fn try_from(w: LatHistWire) -> Result<Self, String> {
        if w.sub_bucket_bits != SUB_BUCKET_BITS {
            return Err(format!(
                "latency histogram has sub_bucket_bits {}, this build reads only {}",
                w.sub_bucket_bits, SUB_BUCKET_BITS
            ));
        }
        let mut buckets = Vec::with_capacity(w.buckets.len());
        let mut total = 0u64;
        for &(lo, c) in &w.buckets {
            let idx = clamped_index(lo);
            if bucket_bounds(idx).0 != lo {
                return Err(format!(
                    "latency histogram bucket lower bound {lo} ns is not a bucket boundary \
                     (sub_bucket_bits {SUB_BUCKET_BITS})"
                ));
            }
            let idx = idx as u32;
            if buckets.last().is_some_and(|&(prev, _)| prev >= idx) {
                return Err(format!(
                    "latency histogram buckets are not in strictly ascending order at {lo} ns"
                ));
            }
            if c != 0 {
                buckets.push((idx, c));
            }
            total = total
                .checked_add(c)
                .ok_or("latency histogram bucket counts overflow u64")?;
        }
        if total != w.count {
            return Err(format!(
                "latency histogram bucket counts add up to {total} but count is {}",
                w.count
            ));
        }
        if w.count > 0 && w.min_ns > w.max_ns {
            return Err(format!(
                "latency histogram min_ns {} exceeds max_ns {}",
                w.min_ns, w.max_ns
            ));
        }
        Ok(LatHist {
            count: w.count,
            min_ns: if w.count == 0 { 0 } else { w.min_ns },
            max_ns: if w.count == 0 { 0 } else { w.max_ns },
            sum_ns: w.sum_ns,
            buckets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A histogram that recorded `values`.
    fn recorded(values: impl IntoIterator<Item = u64>) -> Histogram {
        let mut h = Histogram::new();
        for v in values {
            h.record(v);
        }
        h
    }

    /// Deterministic spread of values over the whole tracked range.
    fn sample_values() -> Vec<u64> {
        let mut v: Vec<u64> = (0..5000).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x >> (x % 64).max(24) as u32);
        }
        for k in 8..MAX_BITS {
            let p = 1u64 << k;
            v.extend([p - 1, p, p + 1]);
        }
        v.push(MAX_TRACKED);
        v
    }

    #[test]
    fn bucket_count_and_last_bucket() {
        assert_eq!(BUCKETS, 4352);
        assert_eq!(clamped_index(u64::MAX), BUCKETS - 1);
        assert_eq!(clamped_index(1 << MAX_BITS), BUCKETS - 1);
        assert_eq!(bucket_bounds(BUCKETS - 1).1, 1 << MAX_BITS);
    }

    #[test]
    fn every_value_falls_inside_its_bucket() {
        for v in sample_values() {
            let idx = bucket_index(v);
            assert!(idx < BUCKETS, "{v}");
            let (lo, hi) = bucket_bounds(idx);
            assert!(lo <= v && v < hi, "{v} not in [{lo},{hi}) idx {idx}");
            assert_eq!(bucket_index(lo), idx);
            assert_eq!(bucket_index(hi - 1), idx);
        }
    }

    #[test]
    fn buckets_are_contiguous_and_relative_width_bounded() {
        let mut prev_hi = 0;
        for idx in 0..BUCKETS {
            let (lo, hi) = bucket_bounds(idx);
            assert_eq!(lo, prev_hi, "gap before bucket {idx}");
            assert!(hi > lo);
            if lo >= 256 {
                assert!((hi - lo) * 128 <= lo, "bucket {idx} [{lo},{hi}) too wide");
            }
            prev_hi = hi;
        }
    }

    #[test]
    fn small_values_are_exact() {
        for v in 0..256u64 {
            assert_eq!(bucket_bounds(bucket_index(v)), (v, v + 1));
            let s = recorded([v]).snapshot();
            for q in [0.0, 50.0, 99.9, 100.0] {
                assert_eq!(s.percentile(q), v);
            }
        }
    }

    #[test]
    fn reset_and_take() {
        let mut h = recorded([5, 1_000_000]);
        let s = h.take();
        assert_eq!(s.count(), 2);
        assert!(h.is_empty());
        assert!(h.counts.iter().all(|&c| c == 0));
        assert_eq!(h.snapshot(), LatHist::default());
        h.record(7);
        assert_eq!(h.snapshot().min_ns(), 7);
        assert_eq!(h.snapshot().max_ns(), 7);
    }

    #[test]
    fn huge_values_clamp_but_stats_stay_exact() {
        let s = recorded([u64::MAX / 4, 10]).snapshot();
        assert_eq!(s.max_ns(), u64::MAX / 4);
        assert_eq!(s.sum_ns(), (u64::MAX / 4) as u128 + 10);
        assert_eq!(s.percentile(100.0), u64::MAX / 4);
        assert_eq!(s.percentile(99.0), u64::MAX / 4);
        assert_eq!(s.iter().last().unwrap().1, 1 << MAX_BITS);
    }

    #[test]
    fn merge_equals_recording_into_one() {
        let values = sample_values();
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for (i, &v) in values.iter().enumerate() {
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        let merged = a.snapshot() + b.snapshot();
        assert_eq!(merged, all.snapshot());
        assert_eq!(&b.snapshot() + &a.snapshot(), all.snapshot());
        assert_eq!(merged.count(), values.len() as u64);
        assert_eq!(merged.min_ns(), 0);
        assert_eq!(merged.max_ns(), *values.iter().max().unwrap());
        assert_eq!(
            merged.sum_ns(),
            values.iter().map(|&v| v as u128).sum::<u128>()
        );
    }

    #[test]
    fn merge_with_empty() {
        let s = recorded([500, 900]).snapshot();
        assert_eq!(s.clone() + LatHist::default(), s);
        assert_eq!(LatHist::default() + s.clone(), s);
        assert_eq!((LatHist::default() + s.clone()).min_ns(), 500);
        let mut e = LatHist::default();
        e += LatHist::default();
        assert!(e.is_empty());
        assert_eq!(e.min_ns(), 0);
        let summed: LatHist = [LatHist::default(), s.clone(), LatHist::default()]
            .iter()
            .sum();
        assert_eq!(summed, s);
    }

    #[test]
    fn record_n_matches_repeated_record() {
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        a.record_n(12345, 7);
        a.record_n(99, 0);
        for _ in 0..7 {
            b.record(12345);
        }
        assert_eq!(a.snapshot(), b.snapshot());
    }

    fn within(got: u64, want: f64, rel: f64) -> bool {
        ((got as f64) - want).abs() <= want * rel
    }

    #[test]
    fn percentiles_uniform() {
        let s = recorded(1..=100_000u64).snapshot();
        assert!(
            within(s.percentile(50.0), 50_000.0, 0.005),
            "{}",
            s.percentile(50.0)
        );
        assert!(
            within(s.percentile(99.0), 99_000.0, 0.005),
            "{}",
            s.percentile(99.0)
        );
        assert!(within(s.percentile(90.0), 90_000.0, 0.005));
        assert_eq!(s.percentile(0.0), 1);
        assert_eq!(s.percentile(100.0), 100_000);
        assert!((s.mean_ns() - 50_000.5).abs() < 1e-6);
        let mut prev = 0;
        for q in 0..=1000 {
            let p = s.percentile(q as f64 / 10.0);
            assert!(p >= prev, "percentiles must be monotonic");
            prev = p;
        }
    }

    #[test]
    fn percentiles_single_and_two_values() {
        let mut h = recorded([123_456]);
        let s = h.snapshot();
        for q in [0.0, 1.0, 50.0, 99.99, 100.0] {
            assert_eq!(s.percentile(q), 123_456, "q={q}");
        }
        h.record(1_000_000);
        let s = h.snapshot();
        assert!(within(s.percentile(50.0), 123_456.0, 0.004));
        assert_eq!(s.percentile(50.1), 1_000_000);
        assert_eq!(s.percentile(99.0), 1_000_000);
        assert_eq!(LatHist::default().percentile(50.0), 0);
        assert_eq!(LatHist::default().mean_ns(), 0.0);
    }

    #[test]
    fn ms_buckets_synthetic() {
        let mut h = Histogram::new();
        h.record_n(200_000, 10); // 0.2 ms
        h.record_n(1_500_000, 5); // 1.5 ms
        h.record_n(23_900_000, 2); // 23.9 ms
        h.record_n(24_000_000, 3); // exactly 24 ms: overflow slot
        h.record_n(5_000_000_000, 1); // 5 s
        let b = h.snapshot().ms_buckets(24);
        assert_eq!(b.len(), 25);
        assert_eq!(b[0], 10);
        assert_eq!(b[1], 5);
        assert_eq!(b[23], 2);
        assert_eq!(b[24], 4);
        assert_eq!(b.iter().sum::<u64>(), 21);
        assert_eq!(LatHist::default().ms_buckets(3), vec![0; 4]);
    }

    #[test]
    fn cdf_points_end_at_one() {
        let pts = recorded([10, 20, 20, 1000]).snapshot().cdf_points();
        assert_eq!(pts, vec![(10, 0.25), (20, 0.75), (1000, 1.0)]);
        assert!(LatHist::default().cdf_points().is_empty());
    }

    #[test]
    fn json_round_trip() {
        let mut h = recorded(sample_values().into_iter().step_by(97));
        h.record(u64::MAX);
        let s = h.snapshot();
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.starts_with("{\"sub_bucket_bits\":8,"), "{json}");
        let back: LatHist = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let empty = serde_json::to_string(&LatHist::default()).unwrap();
        assert_eq!(
            empty,
            r#"{"sub_bucket_bits":8,"count":0,"min_ns":0,"max_ns":0,"sum_ns":0,"buckets":[]}"#
        );
        assert_eq!(
            serde_json::from_str::<LatHist>(&empty).unwrap(),
            LatHist::default()
        );
    }

    #[test]
    fn json_shows_lower_bounds() {
        let json = serde_json::to_string(&recorded([90, 1000]).snapshot()).unwrap();
        assert_eq!(
            json,
            r#"{"sub_bucket_bits":8,"count":2,"min_ns":90,"max_ns":1000,"sum_ns":1090,"buckets":[[90,1],[1000,1]]}"#
        );
    }

    #[test]
    fn json_rejects_bogus_input() {
        // Each document, and what its error must say ("" where any error will do).
        let cases = [
            (
                r#"{"sub_bucket_bits":8,"count":1,"min_ns":257,"max_ns":257,"sum_ns":257,"buckets":[[257,1]]}"#,
                "257 ns is not a bucket boundary",
            ),
            (
                r#"{"sub_bucket_bits":7,"count":0,"min_ns":0,"max_ns":0,"sum_ns":0,"buckets":[]}"#,
                "sub_bucket_bits 7",
            ),
            // A count that does not match the buckets.
            (
                r#"{"sub_bucket_bits":8,"count":3,"min_ns":1,"max_ns":1,"sum_ns":1,"buckets":[[1,1]]}"#,
                "",
            ),
            // Buckets out of order.
            (
                r#"{"sub_bucket_bits":8,"count":2,"min_ns":1,"max_ns":2,"sum_ns":3,"buckets":[[2,1],[1,1]]}"#,
                "",
            ),
            // A bound beyond the largest bucket.
            (
                r#"{"sub_bucket_bits":8,"count":1,"min_ns":1,"max_ns":1,"sum_ns":1,"buckets":[[1099511627776,1]]}"#,
                "",
            ),
        ];
        for (json, says) in cases {
            let err = serde_json::from_str::<LatHist>(json)
                .expect_err(json)
                .to_string();
            assert!(err.contains(says), "{json}: {err}");
        }
    }
}
