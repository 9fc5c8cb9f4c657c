//! The agent protocol's messages, versioned and kept apart from the in-memory
//! types they carry (conversions at the bottom). HTTP/1.1 with JSON bodies:
//! every request is a `POST` to one of [`paths`] with headers
//! [`PROTOCOL_HEADER`], [`VERSION_HEADER`] and `Authorization: Bearer TOKEN`;
//! the agent checks the protocol version first, then the token, then the body.
//! A refusal is an HTTP error status with an [`ErrorReply`] body.
//!
//! Compatibility: any change to a message's meaning or shape bumps
//! [`PROTOCOL_VERSION`]; both sides refuse a peer of another version and say
//! both versions. The load point travels as the wire's own [`WireSpec`]
//! ([`spec`]), converted from and to `crate::workload::Spec`; snapshots
//! travel in their result-document form (`crate::stats::Snapshot`'s serde
//! shape, bucket bounds in ns). A test pins a digest of every message's JSON
//! schema to [`PROTOCOL_VERSION`], so a change to the JSON without a new
//! version fails it.

#[cfg(test)]
mod schema;
pub mod spec;

pub use spec::WireSpec;

use crate::model::PreparedFile;
use crate::runner::HostInterval;
use crate::stats::{CpuSample, Snapshot};
use serde::{Deserialize, Serialize};

/// The protocol version this build speaks. 3: the spec carries `disk_layout`,
/// `rate_mode`, `io_timeout`, `verify` and `journal` (an agent of version 2
/// would silently drop them and run another test). 4: verify mode on a fleet:
/// [`PrepareRequest::verify_run`], [`IntervalsReply::verify_maps`],
/// [`IntervalsReply::verify_map_error`] and [`IntervalsReply::verify_bad`].
/// 5: `--journal` on a fleet: an agent writes the spec's `journal` FILE as
/// its own `FILE.agent-NAME` (`crate::verify::agent_journal_path`) and
/// reports it in [`IntervalsReply::verify_journals`] (or why it failed in
/// [`IntervalsReply::verify_journal_error`]). 6: the spec carries `ioengine`
/// (an agent of version 5 would run psync's point on io_uring); since then
/// it is the wire's own [`WireSpec`], with the same JSON. 7: each access
/// carries its `distribution` (fio's `random_distribution`) and `think`
/// (thinktime and its burst); an agent of version 6 would run them uniform
/// and without pauses. 8: the spec carries `reconnect_timeout` and each
/// snapshot its `outages` (connections lost and won back) and `issue_lag`
/// (a trace replay's, which a fleet does not run yet); an agent of version
/// 7 would end the run at the first lost connection.
pub const PROTOCOL_VERSION: u32 = 8;
/// Request header carrying the sender's [`PROTOCOL_VERSION`].
pub const PROTOCOL_HEADER: &str = "X-Storlab-Protocol";
/// Request header carrying the sender's storlab version.
pub const VERSION_HEADER: &str = "X-Storlab-Version";
/// This build's storlab version.
pub const STORLAB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Request paths.
pub mod paths {
    /// [`super::HelloRequest`] → [`super::HelloReply`].
    pub const HELLO: &str = "/v1/hello";
    /// [`super::PrepareRequest`] → [`super::PrepareReply`].
    pub const PREPARE: &str = "/v1/prepare";
    /// [`super::StartRequest`] → [`super::StartReply`].
    pub const START: &str = "/v1/start";
    /// [`super::IntervalsRequest`] → [`super::IntervalsReply`] (long poll).
    pub const INTERVALS: &str = "/v1/intervals";
    /// [`super::StopRequest`] → [`super::StopReply`].
    pub const STOP: &str = "/v1/stop";
    /// [`super::ResultRequest`] → [`super::ResultReply`]; releases the run.
    pub const RESULT: &str = "/v1/result";
    /// `GET`: live counters in Prometheus text format (token required).
    pub const METRICS: &str = "/metrics";
}

/// Check a peer's protocol version; the error names both sides and both
/// versions (`us`: "this controller", `peer`: "agent h1:9000").
pub fn check_version(
    ours: u32,
    our_release: &str,
    theirs: u32,
    their_release: &str,
    us: &str,
    peer: &str,
) -> Result<(), String> {
    if ours == theirs {
        return Ok(());
    }
    Err(format!(
        "protocol version mismatch: {us} speaks protocol {ours} (storlab {our_release}), \
         {peer} speaks protocol {theirs} (storlab {their_release}); \
         run the same storlab release on the controller and every agent"
    ))
}

/// What the controller sends first: who it is, what it wants to touch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HelloRequest {
    /// The controller's protocol version.
    pub protocol: u32,
    /// The controller's storlab version.
    pub storlab_version: String,
    /// The controller's wall clock when it sent this, ns since the Unix epoch.
    pub controller_unix_ns: u64,
    /// Target URLs the run will use; the agent says which it refuses.
    pub targets: Vec<String>,
}

/// The agent's answer to [`HelloRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HelloReply {
    /// The agent's protocol version.
    pub protocol: u32,
    /// The agent's storlab version.
    pub storlab_version: String,
    /// The agent's name for itself.
    pub host: String,
    /// What it can do ("backend:null", "backend:file", ...).
    pub capabilities: Vec<String>,
    /// The agent's wall clock when it answered, ns since the Unix epoch.
    pub agent_unix_ns: u64,
    /// Its run state.
    pub state: RunState,
    /// Targets it refuses, each with the reason.
    pub refused_targets: Vec<String>,
}

/// An agent's run state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// No run.
    Idle,
    /// Preparing data files and opening backends.
    Preparing,
    /// Prepared, waiting for the start.
    Prepared,
    /// Running.
    Running,
    /// Finished; waiting for the controller to collect the result.
    Finished,
}

impl RunState {
    /// Every state, for metrics.
    pub const ALL: [RunState; 5] = [
        RunState::Idle,
        RunState::Preparing,
        RunState::Prepared,
        RunState::Running,
        RunState::Finished,
    ];

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            RunState::Idle => "idle",
            RunState::Preparing => "preparing",
            RunState::Prepared => "prepared",
            RunState::Running => "running",
            RunState::Finished => "finished",
        }
    }
}

/// The agent's share of a load point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrepareRequest {
    /// Run id chosen by the controller; later requests name it.
    pub run: u64,
    /// The whole load point.
    pub spec: WireSpec,
    /// VM numbers this agent runs.
    pub vms: Vec<u32>,
    /// Target URLs.
    pub targets: Vec<String>,
    /// Most engine threads; `None`: the agent's online CPUs.
    pub threads: Option<u32>,
    /// Permission to write into files storlab did not create.
    pub allow_overwrite: bool,
    /// The verify run id every host of this controller run writes into its
    /// verify headers (the controller's own; 0: the agent's).
    #[serde(default)]
    pub verify_run: u32,
}

/// One prepared file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WirePreparedFile {
    /// Path on the agent.
    pub path: String,
    /// Created by this run.
    pub created: bool,
    /// Bytes written to fill it.
    pub filled_bytes: u64,
}

/// What the agent prepared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrepareReply {
    /// Run id.
    pub run: u64,
    /// Backend and features.
    pub backend: String,
    /// Engine threads it will use.
    pub threads: u32,
    /// Files prepared.
    pub prepared: Vec<WirePreparedFile>,
    /// Notes for the user.
    pub notes: Vec<String>,
}

/// Start at a wall-clock instant (in the agent's clock: the controller has
/// already corrected for the offset it measured).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartRequest {
    /// Run id.
    pub run: u64,
    /// Start instant, ns since the Unix epoch, agent clock.
    pub at_unix_ns: u64,
}

/// The agent accepted the start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartReply {
    /// Run id.
    pub run: u64,
    /// Milliseconds until the start by the agent's clock (negative: late).
    pub starts_in_ms: i64,
}

/// Ask for intervals from number `from` on, waiting up to `wait_ms` for one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalsRequest {
    /// Run id.
    pub run: u64,
    /// Intervals already received (the next one wanted).
    pub from: u32,
    /// Longest wait for something new, ms.
    pub wait_ms: u32,
}

/// CPU over one interval on the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireCpu {
    /// User seconds of the agent process.
    pub proc_user_s: f64,
    /// System seconds of the agent process.
    pub proc_sys_s: f64,
    /// Busy share of the agent host's CPUs, 0..=100.
    pub host_busy_pct: f64,
    /// Online CPUs of the agent host.
    pub cores: u32,
    /// Context switches of the agent process (an older agent sends none: 0).
    #[serde(default)]
    pub ctx: u64,
}

/// One worker's snapshot in an interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireWorker {
    /// Worker index over the point.
    pub worker: u32,
    /// What it did.
    pub stats: Snapshot,
}

/// One interval of the agent, merged over its threads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireInterval {
    /// Interval number from 0.
    pub index: u32,
    /// Nanoseconds after the start at which its data ends.
    pub end_ns: u64,
    /// Sum over the agent's workers.
    pub stats: Snapshot,
    /// Each of the agent's workers: counters only (latency histograms per
    /// worker come once, in the final [`IntervalsReply::workers`]).
    pub workers: Vec<WireWorker>,
    /// The agent's CPU.
    pub cpu: WireCpu,
}

/// Intervals since `from`, and whether the run is over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalsReply {
    /// Run id.
    pub run: u64,
    /// Intervals `from ..`, in order.
    pub intervals: Vec<WireInterval>,
    /// The run ended and every interval was sent.
    pub done: bool,
    /// What failed, once done.
    pub error: Option<String>,
    /// Once done: each worker's measured totals with latency histograms.
    #[serde(default)]
    pub workers: Vec<WireWorker>,
    /// Once done, in verify mode: the maps the agent saved on its own disk.
    #[serde(default)]
    pub verify_maps: Vec<WireSavedMap>,
    /// Once done, in verify mode: why the agent could not save its map.
    #[serde(default)]
    pub verify_map_error: Option<String>,
    /// Once done, in verify mode: the bad blocks it printed in full (at most
    /// 20 per engine thread; all are counted in the intervals).
    #[serde(default)]
    pub verify_bad: Vec<String>,
    /// Once done, with `--journal`: the journal the agent wrote on its own
    /// disk, once per target it covers.
    #[serde(default)]
    pub verify_journals: Vec<WireSavedMap>,
    /// Once done, with `--journal`: why its journal failed (a write that
    /// could not be journaled).
    #[serde(default)]
    pub verify_journal_error: Option<String>,
}

/// A verify map (or durability journal) an agent saved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireSavedMap {
    /// The target URL it covers.
    pub target: String,
    /// The map (or journal) file, on the agent's host.
    pub path: String,
}

impl From<&crate::model::SavedMap> for WireSavedMap {
    fn from(m: &crate::model::SavedMap) -> Self {
        WireSavedMap {
            target: m.target.clone(),
            path: m.path.clone(),
        }
    }
}

impl From<WireSavedMap> for crate::model::SavedMap {
    fn from(m: WireSavedMap) -> Self {
        crate::model::SavedMap {
            target: m.target,
            path: m.path,
        }
    }
}

/// End the run early.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopRequest {
    /// Run id.
    pub run: u64,
    /// Why, for the agent's log.
    pub reason: String,
}

/// The agent is stopping.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopReply {
    /// Run id.
    pub run: u64,
    /// False when the run had already ended.
    pub stopping: bool,
}

/// Collect the final state and release the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRequest {
    /// Run id.
    pub run: u64,
}

/// The run's final state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultReply {
    /// Run id.
    pub run: u64,
    /// Intervals measured.
    pub intervals: u32,
    /// Whether it had ended (it is stopped and released either way).
    pub done: bool,
    /// What failed.
    pub error: Option<String>,
}

/// Why the agent refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Protocol version differs.
    Version,
    /// Missing or wrong token.
    Auth,
    /// A target outside the allow list.
    NotAllowed,
    /// Malformed request, unknown path, unknown run.
    BadRequest,
    /// Busy with another run.
    Busy,
    /// Preparing data files failed or was refused (bad input).
    Prepare,
    /// Opening the targets or starting failed.
    Failed,
}

/// The body of every refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// The agent's protocol version.
    pub protocol: u32,
    /// The agent's storlab version.
    pub storlab_version: String,
    /// The agent's name.
    pub host: String,
    /// Why.
    pub kind: ErrorKind,
    /// What, naming the thing.
    pub error: String,
}

impl From<&CpuSample> for WireCpu {
    fn from(c: &CpuSample) -> Self {
        WireCpu {
            proc_user_s: c.proc_user_s,
            proc_sys_s: c.proc_sys_s,
            host_busy_pct: c.host_busy_pct,
            cores: c.cores,
            ctx: c.ctx,
        }
    }
}

impl From<WireCpu> for CpuSample {
    fn from(c: WireCpu) -> Self {
        CpuSample {
            proc_user_s: c.proc_user_s,
            proc_sys_s: c.proc_sys_s,
            host_busy_pct: c.host_busy_pct,
            cores: c.cores,
            ctx: c.ctx,
        }
    }
}

impl From<&HostInterval> for WireInterval {
    fn from(h: &HostInterval) -> Self {
        WireInterval {
            index: h.index,
            end_ns: h.end_ns,
            stats: h.stats.clone(),
            workers: h
                .workers
                .iter()
                .map(|(w, s)| WireWorker {
                    worker: *w,
                    stats: s.counters_only(),
                })
                .collect(),
            cpu: (&h.cpu).into(),
        }
    }
}

impl From<WireInterval> for HostInterval {
    fn from(w: WireInterval) -> Self {
        HostInterval {
            index: w.index,
            end_ns: w.end_ns,
            stats: w.stats,
            workers: w.workers.into_iter().map(|w| (w.worker, w.stats)).collect(),
            cpu: w.cpu.into(),
        }
    }
}

impl From<&PreparedFile> for WirePreparedFile {
    fn from(p: &PreparedFile) -> Self {
        WirePreparedFile {
            path: p.path.clone(),
            created: p.created,
            filled_bytes: p.filled_bytes,
        }
    }
}

impl From<WirePreparedFile> for PreparedFile {
    fn from(p: WirePreparedFile) -> Self {
        PreparedFile {
            path: p.path,
            created: p.created,
            filled_bytes: p.filled_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Recorder;
    use crate::workload::Dir;
    use serde::de::DeserializeOwned;
    use std::fmt::Debug;

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: T) {
        let text = serde_json::to_string(&v).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v, "{text}");
    }

    fn snap(n: u64) -> Snapshot {
        let mut r = Recorder::new();
        for i in 0..n {
            r.record(Dir::Read, 4096, 1000 + i * 37);
            r.record(Dir::Write, 8192, 90_000 + i);
        }
        r.record_error(Dir::Write);
        r.take()
    }

    fn spec() -> WireSpec {
        crate::workload::catalogue::resolve("vsphere-oltp-8k", crate::workload::Profile::Quick)
            .ok()
            .and_then(|j| j.into_iter().next())
            .and_then(|j| j.points.into_iter().next())
            .map(|s| WireSpec::from(&s))
            .expect("a built-in workload")
    }

    #[test]
    fn hello_round_trips() {
        round_trip(HelloRequest {
            protocol: PROTOCOL_VERSION,
            storlab_version: STORLAB_VERSION.into(),
            controller_unix_ns: 1_700_000_000_123_456_789,
            targets: vec!["null:".into(), "file:/srv/x".into()],
        });
        round_trip(HelloReply {
            protocol: PROTOCOL_VERSION,
            storlab_version: STORLAB_VERSION.into(),
            host: "h1".into(),
            capabilities: vec!["backend:null".into()],
            agent_unix_ns: 1_700_000_000_223_456_789,
            state: RunState::Running,
            refused_targets: vec!["file:/etc: not under --allow".into()],
        });
    }

    #[test]
    fn prepare_round_trips() {
        round_trip(PrepareRequest {
            run: 7,
            spec: spec(),
            vms: vec![0, 3, 6],
            targets: vec!["null:".into()],
            threads: Some(2),
            allow_overwrite: false,
            verify_run: 0x1234_5678,
        });
        round_trip(PrepareReply {
            run: 7,
            backend: "null".into(),
            threads: 2,
            prepared: vec![WirePreparedFile {
                path: "/srv/a".into(),
                created: true,
                filled_bytes: 1 << 20,
            }],
            notes: vec!["prepared 1 data file(s)".into()],
        });
    }

    #[test]
    fn start_stop_result_round_trip() {
        round_trip(StartRequest {
            run: 7,
            at_unix_ns: u64::MAX - 1,
        });
        round_trip(StartReply {
            run: 7,
            starts_in_ms: -3,
        });
        round_trip(StopRequest {
            run: 7,
            reason: "user".into(),
        });
        round_trip(StopReply {
            run: 7,
            stopping: true,
        });
        round_trip(ResultRequest { run: 7 });
        round_trip(ResultReply {
            run: 7,
            intervals: 12,
            done: true,
            error: Some("I/O error on file:/x".into()),
        });
        round_trip(ErrorReply {
            protocol: PROTOCOL_VERSION,
            storlab_version: STORLAB_VERSION.into(),
            host: "h1".into(),
            kind: ErrorKind::NotAllowed,
            error: "target file:/etc is not under --allow".into(),
        });
    }

    #[test]
    fn intervals_round_trip_and_convert() {
        round_trip(IntervalsRequest {
            run: 7,
            from: 3,
            wait_ms: 1000,
        });
        let h = HostInterval {
            index: 3,
            end_ns: 4_000_000_000,
            stats: snap(50),
            workers: vec![(0, snap(20)), (5, snap(30))],
            cpu: CpuSample {
                proc_user_s: 0.25,
                proc_sys_s: 0.5,
                host_busy_pct: 12.5,
                cores: 2,
                ctx: 0,
            },
        };
        let w = WireInterval::from(&h);
        round_trip(IntervalsReply {
            run: 7,
            intervals: vec![w.clone()],
            done: true,
            error: None,
            workers: vec![WireWorker {
                worker: 5,
                stats: snap(30),
            }],
            verify_maps: vec![WireSavedMap {
                target: "file:/srv/a".into(),
                path: "/var/lib/storlab/verify/a.map".into(),
            }],
            verify_map_error: None,
            verify_bad: vec!["corrupt block (bad checksum) on file:/srv/a at offset 512: …".into()],
            verify_journals: vec![WireSavedMap {
                target: "file:/srv/a".into(),
                path: "/srv/j.agent-h1".into(),
            }],
            verify_journal_error: Some("journal /srv/j.agent-h1: No space left".into()),
        });
        // Per worker, an interval carries counters only; histograms come at the end.
        let back = HostInterval::from(w);
        assert_eq!(back.stats, h.stats);
        for ((wa, a), (wb, b)) in back.workers.iter().zip(&h.workers) {
            assert_eq!((wa, a), (wb, &b.counters_only()));
            assert_eq!(a.total_ios(), b.total_ios());
            assert!(a.total_lat().is_empty());
        }
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        assert!(check_version(1, "0.1.0", 1, "0.1.0", "this controller", "agent h1:9000").is_ok());
        let e =
            check_version(1, "0.1.0", 2, "0.2.0", "this controller", "agent h1:9000").unwrap_err();
        for part in [
            "protocol 1",
            "storlab 0.1.0",
            "protocol 2",
            "storlab 0.2.0",
            "h1:9000",
        ] {
            assert!(e.contains(part), "{part} missing in {e}");
        }
    }
}
