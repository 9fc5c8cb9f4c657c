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

pub mod cpu;
pub mod histogram;
pub mod snapshot;
pub mod summary;

pub use cpu::{CpuMeter, CpuSample, HostCpu, ProcCpu};
pub use histogram::{Histogram, LatHist, SUB_BUCKET_BITS};
pub use snapshot::{DirStats, Recorder, Snapshot};
pub use summary::{CpuSummary, DirSummary, MS_HISTOGRAM_LIMIT, Summary};
