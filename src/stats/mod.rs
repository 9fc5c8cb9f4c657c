//! Statistics: latency histograms, interval snapshots, CPU sampling, derived metrics.
//!
//! The engine only records: each worker thread owns a [`Recorder`] and, once
//! per reporting interval, hands over a [`Snapshot`] of what completed in that
//! interval — per direction, the I/O, byte and error counts and a sparse
//! latency histogram ([`LatHist`]). A snapshot holds counts only.
//!
//! Snapshots merge by addition: `a + b` is their union, whether `a` and `b`
//! are two intervals of one worker or the same interval of two workers, and
//! the result is exactly what one recorder would have seen. Percentiles,
//! rates and CPU efficiency are derived only when read ([`Summary`]), never
//! stored or averaged.

/// The by-value and by-reference `+`, `+=` and `Sum` of a type whose
/// `AddAssign<&T>` is its merge: every form is that one merge.
macro_rules! addition_from_add_assign_ref {
    ($t:ty) => {
        impl std::ops::AddAssign for $t {
            fn add_assign(&mut self, rhs: $t) {
                *self += &rhs;
            }
        }

        impl std::ops::Add for $t {
            type Output = $t;
            fn add(mut self, rhs: $t) -> $t {
                self += &rhs;
                self
            }
        }

        impl std::ops::Add<&$t> for &$t {
            type Output = $t;
            fn add(self, rhs: &$t) -> $t {
                let mut out = self.clone();
                out += rhs;
                out
            }
        }

        impl std::iter::Sum for $t {
            fn sum<I: Iterator<Item = $t>>(iter: I) -> $t {
                iter.fold(<$t>::default(), |acc, x| acc + x)
            }
        }

        impl<'a> std::iter::Sum<&'a $t> for $t {
            fn sum<I: Iterator<Item = &'a $t>>(iter: I) -> $t {
                iter.fold(<$t>::default(), |mut acc, x| {
                    acc += x;
                    acc
                })
            }
        }
    };
}

pub mod cpu;
pub mod histogram;
pub mod snapshot;
pub mod summary;

pub use cpu::{CpuMeter, CpuSample, HostCpu, ProcCpu, ThreadsCpu, ThreadsUse};
pub use histogram::{Histogram, LatHist, SUB_BUCKET_BITS};
pub use snapshot::{DirStats, Recorder, Snapshot};
pub use summary::{CpuSummary, DirSummary, MS_HISTOGRAM_LIMIT, Summary};
