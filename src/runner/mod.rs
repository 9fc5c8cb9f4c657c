//! Runners: one load point run by one or more hosts behind one interface.
//!
//! A [`HostRunner`] runs one host's share of a point: [`LocalRunner`] on engine
//! threads in this process, or a remote agent (`crate::fleet`) over the wire,
//! with the same lifecycle and the same interval stream. [`run_hosts`] checks,
//! prepares and starts every host at one instant and merges their intervals by
//! addition, exactly as a host merges its threads; [`run_point`] is that same
//! path with one in-process host.
//!
//! Every thread opens its backend first; only when every host is ready is one
//! start instant fixed for all of them, so ramp and measurement windows line
//! up. An interval is final when every live thread (or host) has shipped it.

mod aggregate;
mod local;
mod merge;
pub mod share;
pub mod steady;
mod ticks;

pub use aggregate::{HostLoss, run_hosts};
pub use local::LocalRunner;

use crate::engine::hooks::PointHooks;
use crate::model::{HostVerify, IntervalRecord, NetSample, PointResult, PreparedFile};
use crate::plan::Plan;
use crate::stats::{CpuSample, Snapshot};
use crate::target::Target;
use crate::workload::Spec;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// Options of a run that are not part of the workload.
pub struct RunOptions<'a> {
    /// Most engine threads to use.
    pub threads: usize,
    /// The user's explicit permission to write into files storlab did not create.
    pub allow_overwrite: bool,
    /// The targets are a running lab's store (filled at `lab up`, restored
    /// between tests by `compare`): file disks on it are not prepared, as
    /// protocol targets never are. Only for targets a lab resolved.
    pub lab_store: bool,
    /// Set from outside (Ctrl-C) to end the run early; what was measured is kept.
    pub stop: &'a AtomicBool,
    /// Where each point's I/O hooks come from (verify mode); `None`: none.
    pub hooks: Option<Arc<dyn RunHooks>>,
    /// Counters read beside the I/O once per interval (the lab's links).
    pub probe: Option<Arc<dyn Probe>>,
}

/// Counters read beside the I/O, once per fleet interval, as each interval
/// becomes final (the lab's network links: `crate::lab`'s counters).
///
/// Contract: `start` is called once when the point's hosts start and takes
/// the first reading; each `sample` returns what the counters moved since the
/// previous reading. Readings are taken on the point's own clock, at the
/// start and at each interval's end (and once more when the point ends
/// early), from a thread of their own, so a sample covers the same span as
/// the interval's I/O however late a host's report arrives. A probe that cannot read returns
/// nothing for that interval; it never fails the point.
pub trait Probe: Send + Sync {
    /// The point starts: take the first reading.
    fn start(&self);
    /// What the counters moved since the last reading.
    fn sample(&self) -> Vec<NetSample>;
}

/// A source of I/O hooks for each point a local runner runs (verify mode is
/// one, `crate::verify::Verify`): the runner asks once per point, after its
/// files are prepared, and finishes the hooks when the point ends, however it
/// ends.
pub trait RunHooks: Send + Sync {
    /// The hooks for `spec` on this host's `plan`, or `None` when the point
    /// needs none. `identities` holds, per disk of the plan, what its
    /// storage said it is ([`crate::io::Backend::identity`]; `None` where it
    /// said nothing): the backends are open when the hooks start. An error
    /// refuses the point before anything runs.
    fn start(
        &self,
        spec: &Spec,
        plan: &Plan,
        identities: &[Option<String>],
    ) -> Result<Option<Arc<dyn PointHooks>>, RunError>;
}

/// Receives intervals as they are measured (live progress, results store).
///
/// Contract: the callbacks cannot fail the runner directly, so an observer
/// that keeps what it is given (the results database) and fails to keep it
/// says so through [`Observer::failure`], which the runner asks after every
/// callback that hands it data. The runner then ends the point at once on
/// every host, as after an I/O error, with that reason as the point's error,
/// and returns what was measured up to then, so its caller can save it
/// elsewhere (the run's JSON) and stop the run. A failure is never dropped:
/// an observer holds it until asked, and reports it once.
pub trait Observer {
    /// Called before a point starts measuring.
    fn point_started(&mut self, _spec: &Spec, _intervals: u32) {}
    /// Called for every interval as soon as it is final (summed over hosts).
    fn interval(&mut self, _spec: &Spec, _rec: &IntervalRecord, _intervals: u32) {}
    /// Called for every interval of one host as soon as that host shipped it,
    /// before the fleet interval it belongs to is final.
    fn host_interval(&mut self, _host: &str, _rec: &IntervalRecord) {}
    /// A note worth telling the user (prepare progress, a lost host).
    fn note(&mut self, _msg: &str) {}
    /// Why this observer could not keep what it was given, once: the first
    /// call after the failure returns it, later calls `None`. Observers that
    /// keep nothing (progress lines) never fail: the default.
    fn failure(&mut self) -> Option<String> {
        None
    }
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// A failure before anything was measured.
#[derive(Debug)]
pub enum RunError {
    /// The targets or spec cannot run (mixed backends, nothing to run).
    Setup(String),
    /// Preparing a data file was refused or cannot work as asked (not
    /// storlab's, too small, no such directory): the user must change the command.
    Prepare(String),
    /// The storage or the system failed while preparing (no space left, an
    /// I/O error, permission denied): the command was fine.
    Storage(String),
    /// The user's stop (SIGINT/SIGTERM) arrived before the start.
    Stopped(String),
    /// A backend could not open its disks.
    Open(String),
    /// A host refused the run (token, protocol version, target not allowed).
    Refused(String),
    /// A host could not be reached or failed before the start.
    Host(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Setup(m)
            | RunError::Prepare(m)
            | RunError::Storage(m)
            | RunError::Stopped(m)
            | RunError::Open(m)
            | RunError::Refused(m)
            | RunError::Host(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// One host's share of a load point: the same for a local and a remote host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPlan {
    /// The whole load point (worker numbers and seeds are global).
    pub spec: Spec,
    /// VM numbers this host runs, ascending.
    pub vms: Vec<u32>,
    /// Targets, as the host sees them.
    pub targets: Vec<Target>,
    /// Most engine threads; `None` lets the host use its online CPUs.
    pub threads: Option<usize>,
    /// The user's permission to write into files storlab did not create.
    pub allow_overwrite: bool,
    /// The targets are a running lab's store: see [`RunOptions::lab_store`].
    pub lab_store: bool,
}

/// What a host said when checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostCheck {
    /// Its clock minus ours, ns (0 for this process).
    pub clock_offset_ns: i64,
    /// Its storlab version.
    pub version: String,
}

/// What a host prepared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostPrepared {
    /// Backend and features.
    pub backend: String,
    /// Engine threads it will use.
    pub threads: usize,
    /// Files prepared.
    pub prepared: Vec<PreparedFile>,
    /// Notes for the user (what preparing did).
    pub notes: Vec<String>,
}

/// One interval of one host, merged over its threads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostInterval {
    /// Interval number from 0.
    pub index: u32,
    /// Nanoseconds after the start at which the interval's data ends.
    pub end_ns: u64,
    /// Sum over the host's workers.
    pub stats: Snapshot,
    /// (worker index over the point, its snapshot) for each of the host's workers.
    pub workers: Vec<(u32, Snapshot)>,
    /// The host's CPU over the interval.
    pub cpu: CpuSample,
}

/// What a started host reports, in order: intervals (ascending, from 0, none
/// skipped), then exactly one `Done` or `Lost`.
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent {
    /// An interval is final on the host.
    Interval {
        /// Index of the host in [`run_hosts`]' list.
        host: usize,
        /// The interval (boxed: it carries every worker's histograms).
        interval: Box<HostInterval>,
    },
    /// The host finished its share; `error` names what failed (an I/O error).
    Done {
        /// Index of the host.
        host: usize,
        /// What failed, if anything.
        error: Option<String>,
        /// Per-worker measured totals with their latency histograms, when the
        /// host sends them once at the end (a remote agent, whose intervals
        /// carry per-worker counters only); they replace what the intervals summed.
        workers: Option<Vec<(u32, Snapshot)>>,
        /// Where a remote host saved its verify maps and the bad blocks it
        /// printed; `None` when it did not verify, and for this process (which
        /// prints bad blocks as found and saves its map after `Done`, where
        /// docs/verify.md says).
        verify: Option<HostVerify>,
    },
    /// The host can no longer be reached; no more events come from it.
    Lost {
        /// Index of the host.
        host: usize,
        /// Why it counts as lost, naming the host.
        reason: String,
    },
}

/// One host's share of a point, local or remote (elbencho's shared worker
/// interface): the controller drives every host the same way.
///
/// Lifecycle: `check` → `prepare` → `start` → events → `finish`. Contract:
/// * `check` does nothing to storage; an `Err` names the host and why
///   (unreachable, wrong token, protocol version, target not allowed).
/// * `prepare` creates and fills data files and opens every backend, so that
///   `start` only has to wait for the instant. `stop` is polled between files.
/// * `start` returns at once; the host begins at `at_unix_ns` (the
///   controller's wall clock; a remote runner corrects by the clock offset it
///   measured) and sends [`HostEvent`]s tagged `host` until one `Done` or `Lost`.
/// * `stop` asks a started host to end early (idempotent); it still sends
///   what it measured and then `Done`.
/// * `finish` releases everything (threads, the agent's run); it is called
///   once for every host, after any error in an earlier step too.
pub trait HostRunner: Send {
    /// The host's name in results and messages.
    fn name(&self) -> &str;
    /// Check the host can run `plan` (reachable, version, allowed targets, clock).
    fn check(&mut self, plan: &HostPlan) -> Result<HostCheck, RunError>;
    /// Prepare data files and open backends for `plan`.
    fn prepare(&mut self, plan: &HostPlan, stop: &AtomicBool) -> Result<HostPrepared, RunError>;
    /// How long before the start instant `start` must be called.
    fn lead(&self) -> Duration {
        Duration::from_millis(5)
    }
    /// Start at `at_unix_ns`, streaming events tagged `host` into `events`.
    fn start(
        &mut self,
        at_unix_ns: u64,
        host: usize,
        events: Sender<HostEvent>,
    ) -> Result<(), RunError>;
    /// Ask a started host to end early.
    fn stop(&mut self);
    /// Release the host's resources.
    fn finish(&mut self);
}

/// Run one load point on `targets` in this process: the fleet path with one
/// local host.
///
/// Returns `Err` only when nothing could be measured (bad targets, prepare
/// refused, a backend that would not open). An I/O error or an interruption
/// during the run still returns `Ok` with every completed interval and `error`
/// or `interrupted` set.
pub fn run_point(
    spec: &Spec,
    targets: &[Target],
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    let plan = HostPlan {
        spec: spec.clone(),
        vms: share::all_vms(spec),
        targets: targets.to_vec(),
        threads: Some(opts.threads),
        allow_overwrite: opts.allow_overwrite,
        lab_store: opts.lab_store,
    };
    let mut hosts: Vec<Box<dyn HostRunner>> =
        vec![Box::new(LocalRunner::new(local_name(), opts.hooks.clone()))];
    let probe = opts.probe.as_deref();
    run_hosts(
        spec,
        &mut hosts,
        &[plan],
        HostLoss::Stop,
        opts.stop,
        probe,
        obs,
    )
}

/// This machine's name, for the one host of a local run.
pub fn local_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "local".to_string())
}
