//! Interval snapshots (the mergeable unit of measurement) and the per-worker
//! [`Recorder`] that produces them.

use super::histogram::{Histogram, LatHist};
use crate::workload::Dir;
use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Counters and latency histogram for one direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    /// Completed I/Os (successful only; failed ones are in `errors`).
    pub ios: u64,
    /// Bytes moved by the completed I/Os.
    pub bytes: u64,
    /// Failed I/Os; they contribute no bytes and no latency sample.
    pub errors: u64,
    /// Latency of the completed I/Os.
    pub lat: LatHist,
}

impl DirStats {
    /// True when nothing completed or failed.
    pub fn is_empty(&self) -> bool {
        self.ios == 0 && self.errors == 0 && self.lat.is_empty()
    }
}

impl AddAssign<&DirStats> for DirStats {
    fn add_assign(&mut self, rhs: &DirStats) {
        self.ios += rhs.ios;
        self.bytes += rhs.bytes;
        self.errors += rhs.errors;
        self.lat += &rhs.lat;
    }
}

addition_from_add_assign_ref!(DirStats);

/// What one worker (or a set of workers) did during one interval (or a set of
/// intervals). `a + b` is the union: the stats of both intervals or workers
/// as if they had been recorded together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Verify blocks (512 B) that read back wrong in verify mode (docs/verify.md).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_errors: u64,
    /// How late each replayed I/O was issued after its due time (a trace
    /// replay's only, `crate::workload::replay`; empty otherwise).
    #[serde(default, skip_serializing_if = "LatHist::is_empty")]
    pub issue_lag: LatHist,
    /// Lost connections the backend rode through (`--reconnect-timeout`),
    /// counted in the interval each ended in.
    #[serde(default, skip_serializing_if = "Outages::is_none")]
    pub outages: Outages,
}

/// The outages of an interval ([`crate::io::Outage`]), summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outages {
    /// Outages that ended.
    pub count: u64,
    /// Their lengths, summed: nanoseconds from the loss to the reconnect.
    pub ns: u64,
    /// Requests sent again after them.
    pub retried: u64,
}

impl Outages {
    /// No outage.
    pub fn is_none(&self) -> bool {
        self.count == 0
    }
}

impl AddAssign<&Outages> for Outages {
    fn add_assign(&mut self, rhs: &Outages) {
        self.count += rhs.count;
        self.ns += rhs.ns;
        self.retried += rhs.retried;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Snapshot {
    /// The same counters without the latency histograms (what a fleet agent
    /// sends per worker and interval; the histograms come once at the end).
    pub fn counters_only(&self) -> Snapshot {
        let strip = |d: &DirStats| DirStats {
            ios: d.ios,
            bytes: d.bytes,
            errors: d.errors,
            lat: Default::default(),
        };
        Snapshot {
            read: strip(&self.read),
            write: strip(&self.write),
            verify_errors: self.verify_errors,
            outages: self.outages,
            issue_lag: Default::default(),
        }
    }

    /// The stats for one direction.
    pub fn dir(&self, dir: Dir) -> &DirStats {
        match dir {
            Dir::Read => &self.read,
            Dir::Write => &self.write,
        }
    }

    /// Completed reads plus writes.
    pub fn total_ios(&self) -> u64 {
        self.read.ios + self.write.ios
    }

    /// Bytes read plus written.
    pub fn total_bytes(&self) -> u64 {
        self.read.bytes + self.write.bytes
    }

    /// Failed reads plus writes.
    pub fn total_errors(&self) -> u64 {
        self.read.errors + self.write.errors
    }

    /// True when nothing completed or failed in either direction.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty()
            && self.write.is_empty()
            && self.verify_errors == 0
            && self.outages.is_none()
    }

    /// Latency of reads and writes together.
    pub fn total_lat(&self) -> LatHist {
        &self.read.lat + &self.write.lat
    }

    /// Reads and writes folded into one direction-less `DirStats`.
    pub fn total(&self) -> DirStats {
        &self.read + &self.write
    }
}

impl AddAssign<&Snapshot> for Snapshot {
    fn add_assign(&mut self, rhs: &Snapshot) {
        self.read += &rhs.read;
        self.write += &rhs.write;
        self.verify_errors += rhs.verify_errors;
        self.outages += &rhs.outages;
        self.issue_lag += &rhs.issue_lag;
    }
}

addition_from_add_assign_ref!(Snapshot);

/// Hot-path state for one direction.
#[derive(Clone, Debug, Default)]
struct DirRecorder {
    ios: u64,
    bytes: u64,
    errors: u64,
    hist: Histogram,
}

impl DirRecorder {
    fn take(&mut self) -> DirStats {
        let out = DirStats {
            ios: self.ios,
            bytes: self.bytes,
            errors: self.errors,
            lat: self.hist.take(),
        };
        self.ios = 0;
        self.bytes = 0;
        self.errors = 0;
        out
    }
}

/// The per-worker recorder an engine thread owns and writes on every
/// completion; the runner periodically calls [`Recorder::take`] to cut an
/// interval. Not shared between threads, so no atomics on the hot path.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    read: DirRecorder,
    write: DirRecorder,
    verify_errors: u64,
    outages: Outages,
    issue_lag: Histogram,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    fn side(&mut self, dir: Dir) -> &mut DirRecorder {
        match dir {
            Dir::Read => &mut self.read,
            Dir::Write => &mut self.write,
        }
    }

    /// Records one completed I/O.
    #[inline]
    pub fn record(&mut self, dir: Dir, bytes: u64, lat_ns: u64) {
        let s = self.side(dir);
        s.ios += 1;
        s.bytes += bytes;
        s.hist.record(lat_ns);
    }

    /// Records `n` verify blocks that read back wrong.
    #[inline]
    pub fn record_verify_errors(&mut self, n: u64) {
        self.verify_errors += n;
    }

    /// Records one outage of `ns` nanoseconds after which `retried`
    /// requests were sent again.
    pub fn record_outage(&mut self, ns: u64, retried: u64) {
        self.outages += &Outages {
            count: 1,
            ns,
            retried,
        };
    }

    /// Records how late a replayed I/O was issued after its due time.
    #[inline]
    pub fn record_issue_lag(&mut self, lag_ns: u64) {
        self.issue_lag.record(lag_ns);
    }

    /// Records one failed I/O.
    #[inline]
    pub fn record_error(&mut self, dir: Dir) {
        self.side(dir).errors += 1;
    }

    /// True when nothing was recorded since the last `take`.
    pub fn is_empty(&self) -> bool {
        self.read.ios == 0
            && self.read.errors == 0
            && self.write.ios == 0
            && self.write.errors == 0
            && self.verify_errors == 0
            && self.outages.is_none()
    }

    /// This interval's snapshot; the recorder starts a new interval. Only
    /// histogram buckets that were touched are scanned and cleared.
    pub fn take(&mut self) -> Snapshot {
        Snapshot {
            read: self.read.take(),
            write: self.write.take(),
            verify_errors: std::mem::take(&mut self.verify_errors),
            outages: std::mem::take(&mut self.outages),
            issue_lag: self.issue_lag.take(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_take_resets() {
        let mut r = Recorder::new();
        assert!(r.is_empty());
        r.record(Dir::Read, 4096, 100_000);
        r.record(Dir::Read, 4096, 300_000);
        r.record(Dir::Write, 8192, 2_000_000);
        r.record_error(Dir::Write);
        assert!(!r.is_empty());
        let s = r.take();
        assert_eq!(s.read.ios, 2);
        assert_eq!(s.read.bytes, 8192);
        assert_eq!(s.read.lat.count(), 2);
        assert_eq!(s.read.lat.min_ns(), 100_000);
        assert_eq!(s.write.ios, 1);
        assert_eq!(s.write.errors, 1);
        assert_eq!(s.dir(Dir::Write).bytes, 8192);
        assert_eq!(s.total_ios(), 3);
        assert_eq!(s.total_bytes(), 16384);
        assert_eq!(s.total_errors(), 1);
        assert_eq!(s.total_lat().count(), 3);
        assert_eq!(s.total_lat().max_ns(), 2_000_000);
        assert_eq!(s.total().ios, 3);

        assert!(r.is_empty());
        let empty = r.take();
        assert!(empty.is_empty());
        assert_eq!(empty, Snapshot::default());

        r.record(Dir::Read, 512, 7);
        let s = r.take();
        assert_eq!(s.read.lat.min_ns(), 7);
        assert_eq!(s.read.lat.max_ns(), 7);
        assert!(s.write.is_empty());
    }

    fn workload(seed: u64, n: usize) -> Vec<(Dir, u64, u64)> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let dir = if x & 1 == 0 { Dir::Read } else { Dir::Write };
                (dir, 512 << (x % 5), (x >> 20) % 50_000_000)
            })
            .collect()
    }

    #[test]
    fn addition_matches_recording_into_one_and_is_associative() {
        let ops = workload(42, 30_000);
        let mut all = Recorder::new();
        let mut parts = [Recorder::new(), Recorder::new(), Recorder::new()];
        for (i, &(d, b, l)) in ops.iter().enumerate() {
            all.record(d, b, l);
            parts[i % 3].record(d, b, l);
            if i % 101 == 0 {
                all.record_error(d);
                parts[(i + 1) % 3].record_error(d);
            }
        }
        all.record_verify_errors(3);
        parts[2].record_verify_errors(1);
        parts[0].record_verify_errors(2);
        let [a, b, c] = parts.map(|mut r| r.take());
        assert_eq!(a.verify_errors + c.verify_errors, 3);
        let whole = all.take();
        assert_eq!((a.clone() + b.clone()) + c.clone(), whole);
        assert_eq!(a.clone() + (b.clone() + c.clone()), whole);
        assert_eq!(&(&c + &a) + &b, whole);
        assert_eq!([a.clone(), b, c].iter().sum::<Snapshot>(), whole);
        assert_eq!(a.clone() + Snapshot::default(), a);
    }

    #[test]
    fn json_round_trip() {
        let mut r = Recorder::new();
        for (d, b, l) in workload(7, 1000) {
            r.record(d, b, l);
        }
        let s = r.take();
        let back: Snapshot = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
