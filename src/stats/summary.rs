//! Derived metrics (rates, percentiles, CPU efficiency), computed only when a
//! run's intervals are read. Nothing here is merged: merge the [`Snapshot`]s
//! and compute a new `Summary`.

use super::cpu::CpuSample;
use super::histogram::LatHist;
use super::snapshot::{DirStats, Snapshot};
use serde::{Deserialize, Serialize};

/// Upper limit of the SQLIO-style millisecond histogram in [`Summary`].
pub const MS_HISTOGRAM_LIMIT: u32 = 24;

/// Bytes in a decimal megabyte: MB/s, the studies' throughput unit.
pub const MB: f64 = 1e6;
/// Bytes in a binary mebibyte: MiB/s (`mib_s`).
pub const MIB: f64 = 1024.0 * 1024.0;
/// Bits in a decimal gigabit: Gb/s, the unit of network links.
pub const GBIT: f64 = 1e9;

/// `num / den`, or 0 when the quotient would not be a finite number, so a
/// zero-length or empty run reports zeros rather than NaN or infinity.
fn ratio(num: f64, den: f64) -> f64 {
    let r = num / den;
    if r.is_finite() { r } else { 0.0 }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Rates and latency figures for one direction (or both together).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirSummary {
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Failed I/Os.
    pub errors: u64,
    /// Completed I/Os per second.
    pub iops: f64,
    /// Decimal megabytes (10^6 bytes) per second.
    pub mb_s: f64,
    /// Binary mebibytes (2^20 bytes) per second.
    pub mib_s: f64,
    /// Gigabits (10^9 bits) per second.
    pub gbit_s: f64,
    /// Smallest latency, µs (exact).
    pub lat_min_us: f64,
    /// Mean latency, µs (exact).
    pub lat_mean_us: f64,
    /// Largest latency, µs (exact).
    pub lat_max_us: f64,
    /// Median latency, µs (±0.4%).
    pub p50_us: f64,
    /// 90th percentile latency, µs (±0.4%).
    pub p90_us: f64,
    /// 99th percentile latency, µs (±0.4%).
    pub p99_us: f64,
    /// 99.9th percentile latency, µs (±0.4%).
    pub p999_us: f64,
    /// 99.99th percentile latency, µs (±0.4%).
    pub p9999_us: f64,
}

impl DirSummary {
    /// Rates of `stats` over `seconds`; all rates are 0 if `seconds <= 0`.
    pub fn from_stats(stats: &DirStats, seconds: f64) -> DirSummary {
        let lat: &LatHist = &stats.lat;
        let bytes = stats.bytes as f64;
        DirSummary {
            ios: stats.ios,
            bytes: stats.bytes,
            errors: stats.errors,
            iops: ratio(stats.ios as f64, seconds),
            mb_s: ratio(bytes / MB, seconds),
            mib_s: ratio(bytes / MIB, seconds),
            gbit_s: ratio(bytes * 8.0 / GBIT, seconds),
            lat_min_us: us(lat.min_ns()),
            lat_mean_us: lat.mean_ns() / 1e3,
            lat_max_us: us(lat.max_ns()),
            p50_us: us(lat.percentile(50.0)),
            p90_us: us(lat.percentile(90.0)),
            p99_us: us(lat.percentile(99.0)),
            p999_us: us(lat.percentile(99.9)),
            p9999_us: us(lat.percentile(99.99)),
        }
    }
}

/// CPU cost of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// User seconds of the benchmark process.
    pub proc_user_s: f64,
    /// System seconds of the benchmark process.
    pub proc_sys_s: f64,
    /// Process CPU seconds (user + system) per million completed I/Os.
    pub cpu_s_per_mio: f64,
    /// Mean host busy %, 0..=100.
    pub host_busy_pct: f64,
    /// Busiest interval's host busy %.
    pub host_busy_peak_pct: f64,
    /// Iometer's "CPU effectiveness": total IOPS per host busy percent; 0 when
    /// the host was never busy.
    pub iops_per_cpu_pct: f64,
}

/// Everything a report shows about one run (or one load point).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Measured seconds (sum of interval lengths).
    pub seconds: f64,
    /// Reads.
    pub read: DirSummary,
    /// Writes.
    pub write: DirSummary,
    /// Reads and writes together.
    pub total: DirSummary,
    /// Best single interval's total IOPS.
    pub peak_iops: f64,
    /// Best single interval's total MB/s (10^6 bytes).
    pub peak_mb_s: f64,
    /// Best single interval's total Gb/s (the same interval as `peak_mb_s`).
    pub peak_gbit_s: f64,
    /// Reads and writes per 1 ms of latency, `0..24` ms plus a final "24 ms+"
    /// entry (25 entries); see [`LatHist::ms_buckets`].
    pub ms_histogram: Vec<u64>,
    /// CPU cost.
    pub cpu: CpuSummary,
    /// How late a trace replay issued its I/Os after their due times
    /// (`crate::workload::replay`); none unless a trace was replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_lag: Option<LagSummary>,
}

/// How far issue times strayed from a trace's: each I/O's issue time less its
/// due time (its trace time scaled by the replay speed), µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    /// I/Os issued.
    pub ios: u64,
    /// Mean lag, µs.
    pub mean_us: f64,
    /// Median lag, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Largest lag, µs.
    pub max_us: f64,
}

impl LagSummary {
    /// The figures of `lag`; `None` when it is empty.
    pub fn of(lag: &LatHist) -> Option<LagSummary> {
        (!lag.is_empty()).then(|| LagSummary {
            ios: lag.count(),
            mean_us: lag.mean_ns() / 1e3,
            p50_us: us(lag.percentile(50.0)),
            p99_us: us(lag.percentile(99.0)),
            p999_us: us(lag.percentile(99.9)),
            max_us: us(lag.max_ns()),
        })
    }
}

impl Summary {
    /// Summarises consecutive intervals `(what happened, its length in
    /// seconds, its CPU cost)`: snapshots are added, rates use the summed
    /// length, peaks are the best single interval. Empty input gives zeros.
    pub fn compute(intervals: &[(Snapshot, f64, CpuSample)]) -> Summary {
        let all: Snapshot = intervals.iter().map(|(s, _, _)| s).sum();
        let seconds: f64 = intervals.iter().map(|(_, t, _)| t.max(0.0)).sum();
        let total = all.total();

        let (mut peak_iops, mut peak_bytes_s) = (0.0f64, 0.0f64);
        for (snap, secs, _) in intervals {
            peak_iops = peak_iops.max(ratio(snap.total_ios() as f64, *secs));
            peak_bytes_s = peak_bytes_s.max(ratio(snap.total_bytes() as f64, *secs));
        }

        let samples: Vec<CpuSample> = intervals.iter().map(|(_, _, c)| c.clone()).collect();
        let cpu = CpuSample::combine(&samples);
        let busy_peak = samples.iter().map(|c| c.host_busy_pct).fold(0.0, f64::max);
        let total_summary = DirSummary::from_stats(&total, seconds);
        let cpu = CpuSummary {
            proc_user_s: cpu.proc_user_s,
            proc_sys_s: cpu.proc_sys_s,
            cpu_s_per_mio: ratio(cpu.proc_user_s + cpu.proc_sys_s, total.ios as f64 / 1e6),
            host_busy_pct: cpu.host_busy_pct,
            host_busy_peak_pct: busy_peak,
            iops_per_cpu_pct: ratio(total_summary.iops, cpu.host_busy_pct),
        };

        Summary {
            seconds,
            read: DirSummary::from_stats(&all.read, seconds),
            write: DirSummary::from_stats(&all.write, seconds),
            total: total_summary,
            peak_iops,
            peak_mb_s: peak_bytes_s / MB,
            peak_gbit_s: peak_bytes_s * 8.0 / GBIT,
            ms_histogram: total.lat.ms_buckets(MS_HISTOGRAM_LIMIT),
            cpu,
            issue_lag: LagSummary::of(&all.issue_lag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::snapshot::Recorder;
    use crate::workload::Dir;

    fn all_floats(s: &Summary) -> Vec<f64> {
        let mut v = vec![s.seconds, s.peak_iops, s.peak_mb_s, s.peak_gbit_s];
        for d in [&s.read, &s.write, &s.total] {
            v.extend([
                d.iops,
                d.mb_s,
                d.mib_s,
                d.gbit_s,
                d.lat_min_us,
                d.lat_mean_us,
                d.lat_max_us,
                d.p50_us,
                d.p90_us,
                d.p99_us,
                d.p999_us,
                d.p9999_us,
            ]);
        }
        let c = &s.cpu;
        v.extend([
            c.proc_user_s,
            c.proc_sys_s,
            c.cpu_s_per_mio,
            c.host_busy_pct,
            c.host_busy_peak_pct,
            c.iops_per_cpu_pct,
        ]);
        v
    }

    fn interval(reads: u64, writes: u64, bs: u64, lat_ns: u64) -> Snapshot {
        let mut r = Recorder::new();
        for _ in 0..reads {
            r.record(Dir::Read, bs, lat_ns);
        }
        for _ in 0..writes {
            r.record(Dir::Write, bs, lat_ns * 2);
        }
        r.take()
    }

    fn cpu(user: f64, busy: f64) -> CpuSample {
        CpuSample {
            proc_user_s: user,
            proc_sys_s: user / 2.0,
            host_busy_pct: busy,
            cores: 4,
            ctx: 0,
        }
    }

    #[test]
    fn rates_from_block_size() {
        // 100k 8 KiB reads in 2 s -> 50k IOPS, 409.6 MB/s, 3.2768 Gb/s.
        let s = Summary::compute(&[(interval(100_000, 0, 8192, 100_000), 2.0, cpu(1.0, 50.0))]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        assert!(close(s.read.iops, 50_000.0));
        assert!(close(s.read.mb_s, 409.6));
        assert!(close(s.read.mib_s, 390.625));
        assert!(close(s.read.gbit_s, 3.2768));
        assert_eq!(s.write, DirSummary::default());
        assert!(close(s.total.mb_s, 409.6));
        assert_eq!(s.read.p50_us, 100.0);
        assert_eq!(s.read.p9999_us, 100.0);
        assert_eq!(s.read.lat_min_us, 100.0);
        assert_eq!(s.read.lat_max_us, 100.0);
        assert_eq!(s.ms_histogram.len(), 25);
        assert_eq!(s.ms_histogram[0], 100_000);
        assert!(close(s.cpu.cpu_s_per_mio, 15.0));
        assert!(close(s.cpu.iops_per_cpu_pct, 1000.0));
    }

    #[test]
    fn peak_is_best_interval() {
        let ivs = [
            (interval(1000, 1000, 4096, 1_000_000), 1.0, cpu(0.1, 10.0)),
            (interval(3000, 1000, 4096, 1_500_000), 1.0, cpu(0.2, 30.0)),
            (interval(3000, 0, 4096, 500_000), 2.0, cpu(0.1, 20.0)),
        ];
        let s = Summary::compute(&ivs);
        assert_eq!(s.seconds, 4.0);
        assert_eq!(s.total.ios, 9000);
        assert_eq!(s.total.iops, 2250.0);
        assert_eq!(s.read.ios, 7000);
        assert_eq!(s.write.ios, 2000);
        assert_eq!(s.peak_iops, 4000.0);
        assert!((s.peak_mb_s - 4000.0 * 4096.0 / 1e6).abs() < 1e-9);
        assert!((s.peak_gbit_s - 4000.0 * 4096.0 * 8.0 / 1e9).abs() < 1e-12);
        assert_eq!(s.cpu.host_busy_pct, 20.0);
        assert_eq!(s.cpu.host_busy_peak_pct, 30.0);
        assert_eq!(s.ms_histogram[0], 3000);
        assert_eq!(s.ms_histogram[1], 1000 + 3000);
        assert_eq!(s.ms_histogram[2], 1000);
        assert_eq!(s.ms_histogram[3], 1000);
        assert_eq!(s.ms_histogram.iter().sum::<u64>(), 9000);
        assert!(all_floats(&s).iter().all(|f| f.is_finite()));
    }

    #[test]
    fn empty_input_is_all_zero_and_finite() {
        for s in [
            Summary::compute(&[]),
            Summary::compute(&[(Snapshot::default(), 0.0, CpuSample::default())]),
            Summary::compute(&[(Snapshot::default(), 1.0, CpuSample::default())]),
        ] {
            assert!(
                all_floats(&s).iter().all(|f| f.is_finite() && *f >= 0.0),
                "{s:?}"
            );
            assert_eq!(s.total, DirSummary::default());
            assert_eq!(s.peak_iops, 0.0);
            assert_eq!(s.ms_histogram, vec![0; 25]);
            assert_eq!(s.cpu.iops_per_cpu_pct, 0.0);
            assert_eq!(s.cpu.cpu_s_per_mio, 0.0);
        }
        // I/Os in a zero-length interval: rates are 0 rather than infinite.
        let s = Summary::compute(&[(interval(10, 0, 512, 1000), 0.0, cpu(1.0, 0.0))]);
        assert!(all_floats(&s).iter().all(|f| f.is_finite()));
        assert_eq!(s.total.iops, 0.0);
        assert_eq!(s.cpu.iops_per_cpu_pct, 0.0);
    }

    #[test]
    fn json_round_trip() {
        let s = Summary::compute(&[(interval(10, 5, 4096, 250_000), 1.0, cpu(0.5, 12.5))]);
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
