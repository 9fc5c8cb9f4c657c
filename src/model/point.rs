//! One load point's results: every interval, per-worker and per-host totals
//! and the summary, as a runner returns them and as the run document, the
//! results database and the reports read them.

use crate::plan::WorkerId;
use crate::stats::{CpuSample, Snapshot, Summary};
use crate::workload::Spec;
use serde::{Deserialize, Serialize};

/// Whether an interval counts in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Ramp-up: recorded, excluded from the summary.
    Ramp,
    /// Measured.
    Measure,
}

/// One interval of a point, merged over every worker (of a host, or of the fleet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Interval number from 0.
    pub index: u32,
    /// Ramp or measure.
    pub phase: Phase,
    /// Start, seconds since the point's start.
    pub start_s: f64,
    /// Length in seconds (shorter for a final partial interval).
    pub seconds: f64,
    /// Counters and histograms.
    pub stats: Snapshot,
    /// CPU over the interval.
    pub cpu: CpuSample,
    /// What the lab's links carried over the interval, one entry per network
    /// namespace of the lab (empty when the targets are no lab's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetSample>,
}

impl IntervalRecord {
    /// This interval's own derived figures: its rates over its length, its
    /// latency percentiles, its CPU (what the live progress line, the
    /// interval CSV and the per-interval charts show).
    pub fn summary(&self) -> Summary {
        Summary::compute(&[(self.stats.clone(), self.seconds, self.cpu.clone())])
    }
}

/// One worker's measured totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Which worker.
    pub id: WorkerId,
    /// Sum of its measured intervals.
    pub stats: Snapshot,
}

/// What preparing one file did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreparedFile {
    /// The file.
    pub path: String,
    /// Created by this run.
    pub created: bool,
    /// Bytes written to fill it.
    pub filled_bytes: u64,
}

/// One host's own series within a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostResult {
    /// The host as the user named it (`HOST:PORT` of an agent; this machine's
    /// name for a local run).
    pub host: String,
    /// VM numbers this host ran.
    pub vms: Vec<u32>,
    /// Engine threads it used.
    pub threads: usize,
    /// Its backend and features.
    pub backend: String,
    /// Its clock minus the controller's, ms, measured at check time.
    pub clock_offset_ms: f64,
    /// Its intervals, as it shipped them.
    pub intervals: Vec<IntervalRecord>,
    /// Sum of its measured intervals.
    pub measured: Snapshot,
    /// Derived metrics over its measured intervals.
    pub summary: Summary,
    /// Lost mid-run (died, cut off): `error` says how; its intervals up to
    /// the loss are kept.
    pub lost: bool,
    /// What failed on (or about) this host.
    pub error: Option<String>,
    /// The verify maps it saved on its own disk (a fleet host in verify mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_maps: Vec<SavedMap>,
    /// The durability journal it wrote on its own disk, once per target (a
    /// fleet host with `--journal`; check it there with `storlab verify
    /// TARGET --journal PATH`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_journals: Vec<SavedMap>,
}

/// The result of one load point: every interval, per-worker totals and the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The load point's label.
    pub label: String,
    /// The spec that ran.
    pub spec: Spec,
    /// Targets used.
    pub targets: Vec<String>,
    /// Backend and its features ("file: io_uring, registered files ...").
    pub backend: String,
    /// Engine threads used (over every host).
    pub threads: usize,
    /// Unix time the measurement started, seconds.
    pub started_unix: f64,
    /// Files prepared for this point.
    pub prepared: Vec<PreparedFile>,
    /// Every interval, ramp included, summed over every host.
    pub intervals: Vec<IntervalRecord>,
    /// Per-worker measured totals.
    pub workers: Vec<WorkerResult>,
    /// Counters and merged latency histograms of the measured intervals (the
    /// sum of every measured interval; percentiles derive from these).
    pub measured: Snapshot,
    /// Derived metrics over the measured intervals.
    pub summary: Summary,
    /// Ended early by the user.
    pub interrupted: bool,
    /// What ended the point early, if anything failed.
    pub error: Option<String>,
    /// Each host's own series (one entry for a local run).
    #[serde(default)]
    pub hosts: Vec<HostResult>,
    /// What the steady-state gate found, when the point had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyOutcome>,
    /// What bound the point's figures (`None`: not judged, as in runs
    /// recorded before storlab named it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<super::Bound>,
}

/// What the steady-state gate found: when the ramp ended and whether the
/// measured period stayed steady.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyOutcome {
    /// The gate, as set ("iops:5% over 5 s").
    pub gate: String,
    /// When the figure settled (the ramp's end, seconds from the start);
    /// none: it never settled and the full ramp was used.
    pub settled_at_s: Option<f64>,
    /// The ramp the point used, seconds.
    pub ramp_s: f64,
    /// The watched figure's mean over the window that settled (or the last
    /// window of the ramp), as shown.
    pub steady_value: String,
    /// Measured intervals that left the band, a measured slope past the
    /// limit, or the ramp that never settled; empty: steady throughout.
    pub flags: Vec<String>,
}

/// One saved verify map or journal: the target it covers and the file on the
/// host that wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedMap {
    /// The target URL, as `storlab verify TARGET` takes it.
    pub target: String,
    /// The map file.
    pub path: String,
}

impl SavedMap {
    /// The command that re-checks this map (run on the host that saved it).
    pub fn recheck(&self) -> String {
        format!("storlab verify {} --map {}", self.target, self.path)
    }

    /// The command that checks this journal (`path` is a journal; run on the
    /// host that wrote it).
    pub fn recheck_journal(&self) -> String {
        format!("storlab verify {} --journal {}", self.target, self.path)
    }
}

/// What verify mode (or any point hooks) left on one host when its share ended: where its maps
/// were saved (`Err`: why not) and the bad blocks it printed in full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostVerify {
    /// The maps saved.
    pub maps: Result<Vec<SavedMap>, String>,
    /// Bad blocks printed in full (a bounded number per engine thread).
    pub bad: Vec<String>,
    /// The durability journal it wrote, once per target it covers (empty
    /// without `--journal`); `Err`: the journal failed (why).
    pub journals: Result<Vec<SavedMap>, String>,
}

/// What one network namespace of a lab saw over one interval: its interfaces
/// on the lab's links and its TCP counters, read inside that namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetSample {
    /// The namespace (`storlab0`, `storlab0-h1`; `root` for the controller's own).
    pub namespace: String,
    /// Its role on the path: `client`, `storage`, or `host N`.
    pub role: String,
    /// Its interfaces on the lab's links (`lo` for a loopback lab).
    pub interfaces: Vec<IfCounters>,
    /// Its TCP counters (every connection of the namespace).
    pub tcp: TcpCounters,
}

/// An interface's counters over an interval (/proc/net/dev).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfCounters {
    /// Interface name.
    pub name: String,
    /// Bytes received (IP packets with their Ethernet header, as the kernel counts).
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets dropped, either way.
    pub dropped: u64,
}

/// TCP counters of a namespace over an interval (/proc/net/snmp).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// Segments received.
    pub in_segs: u64,
    /// Segments sent (retransmissions not counted).
    pub out_segs: u64,
    /// Segments retransmitted.
    pub retrans_segs: u64,
}

/// An empty point of a small spec, for tests.
#[cfg(test)]
pub(crate) fn test_point() -> PointResult {
    PointResult {
        label: "t".into(),
        spec: crate::workload::test_spec(1, 1, 1),
        targets: vec!["null:".into()],
        backend: "null".into(),
        threads: 1,
        started_unix: 0.0,
        prepared: Vec::new(),
        intervals: Vec::new(),
        workers: Vec::new(),
        measured: Snapshot::default(),
        summary: Summary::default(),
        interrupted: false,
        error: None,
        hosts: Vec::new(),
        steady: None,
        bound: None,
    }
}
