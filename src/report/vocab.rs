//! One vocabulary: every figure storlab reports, defined once. A [`Metric`]
//! has its key (its name in the CSVs and the diff's JSON), its name (with its
//! unit, for titles, charts and the diff), its column (the short header of a
//! table), its [`Unit`], which way is better, how it is read from a
//! [`Summary`] and how it is written. The text summary, the live progress
//! line, the interval CSV, the comparison CSV, the diff (text, Markdown, CSV,
//! JSON), the HTML and Markdown reports and `storlab compare`'s tables all
//! name, read and write figures through it. (The run document's `summary`
//! keeps the field names of schema `storlab.run` v1: `p99_us` there is
//! `lat_p99_us` in the interval CSV; see docs/json-schema.md.)
//!
//! Units:
//! - Sizes are binary, like fio: 4 KiB = 4096 bytes. [`format_size`] is the
//!   one byte formatter ("512 B", "4 KiB", "1.5 MiB", "8 GiB").
//! - Throughput is decimal MB/s (10^6 bytes per second), the studies' unit,
//!   in every table, the progress line, both CSVs (`mb_s`) and the diff.
//!   MiB/s (2^20 bytes per second) is written only in the run document's
//!   summary (`mib_s`, beside `mb_s`). Link throughput is Gb/s (10^9 bits per
//!   second), and "% of link" compares it with the lab's shaped link rate.
//!   [`Unit::show`] is the one rate formatter ("16.30 MB/s", "1.000 Gb/s").
//! - Latency is in ms in tables and charts, in µs in the run document and the
//!   interval CSV (`lat_mean_us`).
//!
//! CPU per I/O is always named by its side:
//! - client: storlab's own process (user + system) over the measured
//!   intervals, per I/O (the run document's `cpu_s_per_mio`; key
//!   `cpu_us_per_io`, kept from before the sides were named);
//! - server: the server processes of a `storlab compare` target, measured
//!   around the whole point and so divided by every I/O of the point, ramp
//!   included; a local target has no server process ("–" on its own);
//! - both: client + server (for a local target, the client's alone: its
//!   "server" work is the client's system time).
//!
//! Server figures exist only for points of a `storlab compare` run.
//!
//! A `storlab meta` run's figures are read per operation type
//! ([`Metric::of_op`]): `ops` and `ops_s` are its own, and it shares
//! `errors`, `mb_s` (the copy) and the latency figures with block I/O.

use super::format::fmt_num;
use super::stats_ci::Estimate;
use crate::model::meta::OpRow;
use crate::model::{PointResult, ServerCpu};
use crate::stats::Summary;
use crate::stats::summary::{GBIT, MB};
pub use crate::workload::units::format_size;
use serde::{Serialize, Serializer};

/// The unit a figure is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count (I/Os, errors).
    Count,
    /// I/Os per second.
    Iops,
    /// Decimal megabytes (10^6 bytes) per second.
    MbS,
    /// Decimal gigabits (10^9 bits) per second.
    GbitS,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Seconds (of CPU).
    Seconds,
    /// Percent.
    Percent,
    /// Microseconds of CPU per I/O.
    UsPerIo,
    /// Microseconds of CPU per decimal megabyte moved.
    UsPerMb,
    /// I/Os per second per percent of host CPU busy.
    IopsPerCpuPct,
    /// File operations per second (`storlab meta`).
    OpsS,
}

impl Unit {
    /// The unit's symbol, as written after a value.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Iops => "IOPS",
            Unit::MbS => "MB/s",
            Unit::GbitS => "Gb/s",
            Unit::Ms => "ms",
            Unit::Us => "µs",
            Unit::Seconds => "s",
            Unit::Percent => "%",
            Unit::UsPerIo => "µs/IO",
            Unit::UsPerMb => "µs/MB",
            Unit::IopsPerCpuPct => "IOPS/CPU%",
            Unit::OpsS => "ops/s",
        }
    }

    /// A value in this unit, for people: counts whole, percentages to one
    /// decimal, everything else to about four significant digits.
    pub fn fmt(self, v: f64) -> String {
        match self {
            Unit::Count => format!("{v:.0}"),
            Unit::Percent => format!("{v:.1}"),
            _ => fmt_num(v),
        }
    }

    /// A value with its symbol: "16.30 MB/s", "1.000 Gb/s", "0.930 ms".
    pub fn show(self, v: f64) -> String {
        match self.symbol() {
            "" => self.fmt(v),
            "%" => format!("{}%", self.fmt(v)),
            s => format!("{} {s}", self.fmt(v)),
        }
    }

    /// Decimals of this unit in the interval CSV.
    pub fn csv_decimals(self) -> usize {
        match self {
            Unit::Count => 0,
            Unit::MbS | Unit::GbitS | Unit::Ms => 3,
            Unit::Seconds => 4,
            _ => 1,
        }
    }
}

/// Gb/s of a link rate given in bits per second.
pub fn gbit_s(bits_per_s: f64) -> f64 {
    bits_per_s / GBIT
}

/// What the servers of a `storlab compare` target spent on one point,
/// measured around the whole point (ramp included), with what the point
/// moved in that time.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerCost {
    /// Server processes measured (0: the target has none, a local target).
    pub processes: usize,
    /// Their CPU seconds (user + system), summed.
    pub cpu_s: f64,
    /// I/Os of every interval of the point, ramp included.
    pub ios: u64,
    /// Bytes of every interval of the point, ramp included.
    pub bytes: u64,
}

impl ServerCost {
    /// The servers' CPU around point `p`.
    pub fn of(p: &PointResult, servers: &[ServerCpu]) -> ServerCost {
        ServerCost {
            processes: servers.len(),
            cpu_s: servers.iter().map(|s| s.cpu_s).sum(),
            ios: p.intervals.iter().map(|r| r.stats.total_ios()).sum(),
            bytes: p.intervals.iter().map(|r| r.stats.total_bytes()).sum(),
        }
    }

    /// Server CPU µs per I/O; `None` without I/O.
    fn per_io(&self) -> Option<f64> {
        (self.ios > 0).then(|| self.cpu_s * 1e6 / self.ios as f64)
    }
}

/// What a figure is read from: the summary of a point, a host or one
/// interval, and what is known beside it.
#[derive(Clone, Debug)]
pub struct Figures<'a> {
    /// The derived figures.
    pub summary: &'a Summary,
    /// The servers' CPU (points of a `storlab compare` run only).
    pub server: Option<ServerCost>,
    /// The link's rate in bits per second, when the run recorded one.
    pub link_bps: Option<f64>,
}

impl<'a> Figures<'a> {
    /// The figures of a summary alone.
    pub fn of(summary: &'a Summary) -> Figures<'a> {
        Figures {
            summary,
            server: None,
            link_bps: None,
        }
    }
}

/// A figure storlab reports. See the module documentation for the units and
/// the sides of CPU per I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Completed I/Os per second, reads and writes.
    Iops,
    /// Completed reads per second.
    ReadIops,
    /// Completed writes per second.
    WriteIops,
    /// Throughput, MB/s.
    MbS,
    /// Best single interval's throughput, MB/s.
    PeakMbS,
    /// Throughput, Gb/s.
    Gbits,
    /// Best single interval's throughput, Gb/s.
    PeakGbits,
    /// Smallest latency, ms.
    LatMin,
    /// Mean latency, ms.
    LatMean,
    /// Median latency, ms.
    LatP50,
    /// 90th percentile latency, ms.
    LatP90,
    /// 99th percentile latency, ms.
    LatP99,
    /// 99.9th percentile latency, ms.
    LatP999,
    /// 99.99th percentile latency, ms.
    LatP9999,
    /// Largest latency, ms.
    LatMax,
    /// Mean latency, µs (the interval CSV).
    LatMeanUs,
    /// 99th percentile latency, µs (the interval CSV).
    LatP99Us,
    /// Largest latency, µs (the interval CSV).
    LatMaxUs,
    /// Failed I/Os.
    Errors,
    /// Client (storlab) CPU µs per I/O.
    ClientCpuPerIo,
    /// Server CPU µs per I/O.
    ServerCpuPerIo,
    /// Client + server CPU µs per I/O.
    BothCpuPerIo,
    /// Server CPU µs per MB moved.
    ServerCpuPerMb,
    /// Client (storlab) user CPU seconds.
    ClientUserS,
    /// Client (storlab) system CPU seconds.
    ClientSysS,
    /// Mean host CPU busy %.
    HostBusy,
    /// Busiest interval's host CPU busy %.
    HostBusyPeak,
    /// IOPS per host CPU busy % (Iometer's CPU effectiveness).
    IopsPerCpuPct,
    /// Throughput as % of the link rate.
    LinkPct,
    /// Best single interval's throughput as % of the link rate.
    LinkPctPeak,
    /// File operations done, of one type (`storlab meta`; blocks, for the copy).
    Ops,
    /// File operations per second, of one type (`storlab meta`; blocks per
    /// second, for the copy).
    OpsPerS,
}

/// The words of one metric.
struct Def {
    key: &'static str,
    name: &'static str,
    column: &'static str,
    unit: Unit,
    higher_is_better: bool,
}

const fn def(
    key: &'static str,
    name: &'static str,
    column: &'static str,
    unit: Unit,
    higher_is_better: bool,
) -> Def {
    Def {
        key,
        name,
        column,
        unit,
        higher_is_better,
    }
}

impl Metric {
    /// Latency from the smallest to the largest, ms (the text summary's
    /// latency table).
    pub const LATENCY_MS: [Metric; 8] = [
        Metric::LatMin,
        Metric::LatMean,
        Metric::LatP50,
        Metric::LatP90,
        Metric::LatP99,
        Metric::LatP999,
        Metric::LatP9999,
        Metric::LatMax,
    ];

    /// The definition: one line per metric.
    fn def(self) -> Def {
        use Unit::*;
        match self {
            Metric::Iops => def("iops", "IOPS", "IOPS", Iops, true),
            Metric::ReadIops => def("read_iops", "read IOPS", "read IOPS", Iops, true),
            Metric::WriteIops => def("write_iops", "write IOPS", "write IOPS", Iops, true),
            Metric::MbS => def("mb_s", "throughput (MB/s)", "MB/s", MbS, true),
            Metric::PeakMbS => def(
                "peak_mb_s",
                "peak throughput (MB/s)",
                "peak MB/s",
                MbS,
                true,
            ),
            Metric::Gbits => def("gbit_s", "throughput (Gb/s)", "Gb/s", GbitS, true),
            Metric::PeakGbits => def(
                "gbit_s_peak",
                "peak throughput (Gb/s)",
                "peak Gb/s",
                GbitS,
                true,
            ),
            Metric::LatMin => def("lat_min_ms", "min latency (ms)", "min ms", Ms, false),
            Metric::LatMean => def("lat_mean_ms", "mean latency (ms)", "mean ms", Ms, false),
            Metric::LatP50 => def("lat_p50_ms", "p50 latency (ms)", "p50 ms", Ms, false),
            Metric::LatP90 => def("lat_p90_ms", "p90 latency (ms)", "p90 ms", Ms, false),
            Metric::LatP99 => def("lat_p99_ms", "p99 latency (ms)", "p99 ms", Ms, false),
            Metric::LatP999 => def("lat_p999_ms", "p99.9 latency (ms)", "p99.9 ms", Ms, false),
            Metric::LatP9999 => def(
                "lat_p9999_ms",
                "p99.99 latency (ms)",
                "p99.99 ms",
                Ms,
                false,
            ),
            Metric::LatMax => def("lat_max_ms", "max latency (ms)", "max ms", Ms, false),
            Metric::LatMeanUs => def("lat_mean_us", "mean latency (µs)", "mean µs", Us, false),
            Metric::LatP99Us => def("lat_p99_us", "p99 latency (µs)", "p99 µs", Us, false),
            Metric::LatMaxUs => def("lat_max_us", "max latency (µs)", "max µs", Us, false),
            Metric::Errors => def("errors", "errors", "errors", Count, false),
            Metric::ClientCpuPerIo => def(
                "cpu_us_per_io",
                "client CPU per I/O (µs)",
                "client µs/IO",
                UsPerIo,
                false,
            ),
            Metric::ServerCpuPerIo => def(
                "server_cpu_us_per_io",
                "server CPU per I/O (µs)",
                "server µs/IO",
                UsPerIo,
                false,
            ),
            Metric::BothCpuPerIo => def(
                "both_cpu_us_per_io",
                "client + server CPU per I/O (µs)",
                "client+server µs/IO",
                UsPerIo,
                false,
            ),
            Metric::ServerCpuPerMb => def(
                "server_cpu_us_per_mb",
                "server CPU per MB (µs)",
                "server µs/MB",
                UsPerMb,
                false,
            ),
            Metric::ClientUserS => def(
                "proc_user_s",
                "client user CPU (s)",
                "user s",
                Seconds,
                false,
            ),
            Metric::ClientSysS => def(
                "proc_sys_s",
                "client system CPU (s)",
                "sys s",
                Seconds,
                false,
            ),
            Metric::HostBusy => def(
                "host_busy_pct",
                "host CPU busy (%)",
                "host CPU%",
                Percent,
                false,
            ),
            Metric::HostBusyPeak => def(
                "host_busy_peak_pct",
                "peak host CPU busy (%)",
                "peak host CPU%",
                Percent,
                false,
            ),
            Metric::IopsPerCpuPct => def(
                "iops_per_cpu_pct",
                "IOPS per host CPU %",
                "IOPS/CPU%",
                IopsPerCpuPct,
                true,
            ),
            Metric::LinkPct => def(
                "link_pct_avg",
                "throughput (% of link)",
                "% of link",
                Percent,
                true,
            ),
            Metric::LinkPctPeak => def(
                "link_pct_peak",
                "peak throughput (% of link)",
                "peak % of link",
                Percent,
                true,
            ),
            Metric::Ops => def("ops", "operations", "ops", Count, true),
            Metric::OpsPerS => def("ops_s", "operations per second", "ops/s", OpsS, true),
        }
    }

    /// Machine name: CSV columns and the `metric` field of the CSVs and the diff's JSON.
    pub fn key(self) -> &'static str {
        self.def().key
    }

    /// Name with unit, for titles, charts and the diff ("mean latency (ms)").
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// Short column header ("mean ms").
    pub fn column(self) -> &'static str {
        self.def().column
    }

    /// The unit.
    pub fn unit(self) -> Unit {
        self.def().unit
    }

    /// Whether more is better (the reader's arrow, the diff's verdict).
    pub fn higher_is_better(self) -> bool {
        self.def().higher_is_better
    }

    /// Whether the figure is an average over I/Os (latency, CPU per I/O),
    /// which has no value where nothing completed.
    fn per_io(self) -> bool {
        Metric::LATENCY_MS.contains(&self)
            || matches!(
                self,
                Metric::LatMeanUs
                    | Metric::LatP99Us
                    | Metric::LatMaxUs
                    | Metric::ClientCpuPerIo
                    | Metric::BothCpuPerIo
            )
    }

    /// Whether the figure is a total rather than a rate or an average over
    /// time, so it has a value even where no time was measured.
    fn total(self) -> bool {
        matches!(
            self,
            Metric::Errors
                | Metric::ClientUserS
                | Metric::ClientSysS
                | Metric::ServerCpuPerIo
                | Metric::ServerCpuPerMb
        )
    }

    /// The figure; `None` where it has no value: no time measured, no I/O
    /// completed for a per-I/O figure, no server or link known.
    pub fn value(self, f: &Figures) -> Option<f64> {
        let s = f.summary;
        let t = &s.total;
        if (s.seconds <= 0.0 && !self.total()) || (self.per_io() && t.ios == 0) {
            return None;
        }
        let server = || f.server.as_ref().filter(|c| c.processes > 0);
        let link = || f.link_bps.filter(|&r| r > 0.0).map(gbit_s);
        Some(match self {
            Metric::Iops => t.iops,
            Metric::ReadIops => s.read.iops,
            Metric::WriteIops => s.write.iops,
            Metric::MbS => t.mb_s,
            Metric::PeakMbS => s.peak_mb_s,
            Metric::Gbits => t.gbit_s,
            Metric::PeakGbits => s.peak_gbit_s,
            Metric::LatMin => t.lat_min_us / 1e3,
            Metric::LatMean => t.lat_mean_us / 1e3,
            Metric::LatP50 => t.p50_us / 1e3,
            Metric::LatP90 => t.p90_us / 1e3,
            Metric::LatP99 => t.p99_us / 1e3,
            Metric::LatP999 => t.p999_us / 1e3,
            Metric::LatP9999 => t.p9999_us / 1e3,
            Metric::LatMax => t.lat_max_us / 1e3,
            Metric::LatMeanUs => t.lat_mean_us,
            Metric::LatP99Us => t.p99_us,
            Metric::LatMaxUs => t.lat_max_us,
            Metric::Errors => t.errors as f64,
            Metric::ClientCpuPerIo => s.cpu.cpu_s_per_mio,
            Metric::ServerCpuPerIo => server()?.per_io()?,
            Metric::BothCpuPerIo => {
                let c = f.server.as_ref()?;
                s.cpu.cpu_s_per_mio + if c.processes > 0 { c.per_io()? } else { 0.0 }
            }
            Metric::ServerCpuPerMb => {
                let c = server()?;
                (c.bytes > 0).then(|| c.cpu_s * 1e6 / (c.bytes as f64 / MB))?
            }
            Metric::ClientUserS => s.cpu.proc_user_s,
            Metric::ClientSysS => s.cpu.proc_sys_s,
            Metric::HostBusy => s.cpu.host_busy_pct,
            Metric::HostBusyPeak => s.cpu.host_busy_peak_pct,
            Metric::IopsPerCpuPct => s.cpu.iops_per_cpu_pct,
            Metric::LinkPct => t.gbit_s / link()? * 100.0,
            Metric::LinkPctPeak => s.peak_gbit_s / link()? * 100.0,
            Metric::Ops | Metric::OpsPerS => return None,
        })
    }

    /// The figure of one operation type of a `storlab meta` run (one
    /// direction of the copy); `None` where it has none: a figure block I/O
    /// alone has, no time measured for a rate, nothing done for a latency,
    /// MB/s outside the copy.
    pub fn of_op(self, o: &OpRow) -> Option<f64> {
        let l = o.latency;
        let done = || (o.count > 0).then_some(());
        Some(match self {
            Metric::Ops => o.count as f64,
            Metric::Errors => o.errors as f64,
            Metric::OpsPerS => {
                (o.seconds > 0.0).then_some(())?;
                o.ops_per_s
            }
            Metric::MbS => o.mb_per_s.filter(|_| o.seconds > 0.0)?,
            Metric::LatMean => done().map(|_| l.mean_us / 1e3)?,
            Metric::LatP50 => done().map(|_| l.p50_us / 1e3)?,
            Metric::LatP90 => done().map(|_| l.p90_us / 1e3)?,
            Metric::LatP99 => done().map(|_| l.p99_us / 1e3)?,
            Metric::LatP999 => done().map(|_| l.p999_us / 1e3)?,
            Metric::LatMax => done().map(|_| l.max_us / 1e3)?,
            _ => return None,
        })
    }

    /// [`Metric::of_op`] for people; "–" where it has no value.
    pub fn op_cell(self, o: &OpRow) -> String {
        self.of_op(o).map_or_else(|| "–".into(), |v| self.fmt(v))
    }

    /// A value of this figure, for people (see [`Unit::fmt`]).
    pub fn fmt(self, v: f64) -> String {
        self.unit().fmt(v)
    }

    /// The figure of `f` for people; "–" where it has no value.
    pub fn cell(self, f: &Figures) -> String {
        self.value(f).map_or_else(|| "–".into(), |v| self.fmt(v))
    }

    /// Repeated values of this figure: "mean ±ci" (the interval only with two or more).
    pub fn fmt_estimate(self, e: &Estimate) -> String {
        match e.ci95 {
            Some(ci) => format!("{} ±{}", self.fmt(e.mean), self.fmt(ci)),
            None => self.fmt(e.mean),
        }
    }
}

/// The diff's JSON names a metric by its key, as its CSV does.
impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric.
    fn all() -> Vec<Metric> {
        use Metric::*;
        let mut v = vec![Iops, ReadIops, WriteIops, MbS, PeakMbS, Gbits, PeakGbits];
        v.extend(Metric::LATENCY_MS);
        v.extend([LatMeanUs, LatP99Us, LatMaxUs, Errors, ClientCpuPerIo]);
        v.extend([ServerCpuPerIo, BothCpuPerIo, ServerCpuPerMb, ClientUserS]);
        v.extend([ClientSysS, HostBusy, HostBusyPeak, IopsPerCpuPct, LinkPct]);
        v.extend([LinkPctPeak, Ops, OpsPerS]);
        v
    }

    #[test]
    fn keys_names_and_columns_are_unique() {
        let all = all();
        assert_eq!(all.len(), 32);
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.key(), b.key(), "{a:?} and {b:?}");
                assert_ne!(a.name(), b.name(), "{a:?} and {b:?}");
                assert_ne!(a.column(), b.column(), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn cpu_per_io_is_named_by_side() {
        for (m, side) in [
            (Metric::ClientCpuPerIo, "client "),
            (Metric::ServerCpuPerIo, "server "),
            (Metric::BothCpuPerIo, "client + server "),
        ] {
            assert!(m.name().starts_with(side), "{}", m.name());
            assert!(m.name().ends_with("CPU per I/O (µs)"), "{}", m.name());
        }
    }

    #[test]
    fn server_sides_need_a_server_and_both_adds_them() {
        let s = Summary {
            seconds: 1.0,
            total: crate::stats::DirSummary {
                ios: 1000,
                ..Default::default()
            },
            cpu: crate::stats::CpuSummary {
                cpu_s_per_mio: 20.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut f = Figures::of(&s);
        assert_eq!(Metric::ClientCpuPerIo.value(&f), Some(20.0));
        assert_eq!(Metric::ServerCpuPerIo.value(&f), None);
        assert_eq!(Metric::BothCpuPerIo.value(&f), None);
        assert_eq!(Metric::ServerCpuPerIo.cell(&f), "–");
        // A local target: no server process, "both" is the client's alone.
        f.server = Some(ServerCost {
            processes: 0,
            cpu_s: 0.0,
            ios: 2000,
            bytes: 2000 * 4096,
        });
        assert_eq!(Metric::ServerCpuPerIo.value(&f), None);
        assert_eq!(Metric::BothCpuPerIo.value(&f), Some(20.0));
        // 0.03 s over 2000 I/Os (ramp included) = 15 µs per I/O.
        f.server = Some(ServerCost {
            processes: 1,
            cpu_s: 0.03,
            ..f.server.unwrap()
        });
        assert!((Metric::ServerCpuPerIo.value(&f).unwrap() - 15.0).abs() < 1e-9);
        assert!((Metric::BothCpuPerIo.value(&f).unwrap() - 35.0).abs() < 1e-9);
        let per_mb = Metric::ServerCpuPerMb.value(&f).unwrap();
        assert!((per_mb - 0.03e6 / (2000.0 * 4096.0 / 1e6)).abs() < 1e-6);
    }

    #[test]
    fn no_io_and_no_time_have_no_figure() {
        let s = Summary {
            seconds: 1.0,
            ..Default::default()
        };
        let f = Figures::of(&s);
        assert_eq!(Metric::Iops.value(&f), Some(0.0));
        assert_eq!(Metric::LatMean.value(&f), None);
        assert_eq!(Metric::LinkPct.value(&f), None);
        let none = Summary::default();
        assert_eq!(Metric::Iops.value(&Figures::of(&none)), None);
    }

    #[test]
    fn units_write_rates_and_sizes() {
        assert_eq!(Unit::MbS.show(16.3), "16.30 MB/s");
        assert_eq!(Unit::GbitS.show(gbit_s(1e9)), "1.000 Gb/s");
        assert_eq!(Unit::Percent.show(12.345), "12.3%");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(8 << 30), "8 GiB");
        let e = Estimate::of(&[1.0, 2.0, 3.0]);
        assert!(Metric::Iops.fmt_estimate(&e).starts_with("2.000 ±"));
    }
}
