//! The aggregator: drives every host through check, prepare and one common
//! start, merges their intervals by addition (never averaging percentiles) and
//! keeps each host's own series. A lost host is noticed, named, and either
//! stops the point or is left out of the intervals that follow.

use super::local::{intervals_in, total_intervals};
use super::merge::Merger;
use super::share;
use super::steady::Gate;
use super::ticks::ProbeTicks;
use super::{
    HostEvent, HostInterval, HostPlan, HostPrepared, HostRunner, Observer, Probe, RunError,
};
use crate::model::{
    HostResult, HostVerify, IntervalRecord, Phase, PointResult, SavedMap, WorkerResult,
};
use crate::stats::{CpuSample, Snapshot, Summary};
use crate::workload::Spec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a point does when a host is lost mid-run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HostLoss {
    /// End the point: stop every other host, keep what was measured, fail.
    #[default]
    Stop,
    /// Go on with the others; the lost host's completed intervals are kept.
    Continue,
}

/// Folds CPU samples of several hosts over one interval: seconds add, busy %
/// is weighted by cores, cores add.
fn cpu_of_hosts(samples: &[CpuSample]) -> CpuSample {
    if let [one] = samples {
        return one.clone();
    }
    let cores: u32 = samples.iter().map(|s| s.cores).sum();
    let busy: f64 = samples
        .iter()
        .map(|s| s.host_busy_pct * s.cores as f64)
        .sum();
    CpuSample {
        proc_user_s: samples.iter().map(|s| s.proc_user_s).sum(),
        proc_sys_s: samples.iter().map(|s| s.proc_sys_s).sum(),
        host_busy_pct: if cores > 0 { busy / cores as f64 } else { 0.0 },
        cores,
        ctx: samples.iter().map(|s| s.ctx).sum(),
    }
}

/// The summary and measured sum of a series of intervals.
fn summarize(intervals: &[IntervalRecord]) -> (Snapshot, Summary) {
    let measured: Vec<(Snapshot, f64, CpuSample)> = intervals
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .map(|r| (r.stats.clone(), r.seconds, r.cpu.clone()))
        .collect();
    let summary = Summary::compute(&measured);
    (measured.into_iter().map(|(s, _, _)| s).sum(), summary)
}

/// Run every host in parallel through `f`, collecting the errors.
fn each_host<T: Send>(
    hosts: &mut [Box<dyn HostRunner>],
    plans: &[HostPlan],
    f: impl Fn(&mut dyn HostRunner, &HostPlan) -> Result<T, RunError> + Sync,
) -> Vec<Result<T, RunError>> {
    if hosts.len() == 1 {
        return vec![f(hosts[0].as_mut(), &plans[0])];
    }
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = hosts
            .iter_mut()
            .zip(plans)
            .map(|(h, p)| s.spawn(move || f(h.as_mut(), p)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(RunError::Host("a host thread panicked".into())))
            })
            .collect()
    })
}

/// Join the errors of several hosts into one, keeping the most telling kind.
fn first_error(results: Vec<RunError>) -> RunError {
    let kind_rank = |e: &RunError| match e {
        RunError::Refused(_) => 0,
        RunError::Setup(_) => 1,
        RunError::Prepare(_) => 2,
        RunError::Storage(_) => 3,
        RunError::Open(_) => 4,
        RunError::Host(_) => 5,
        RunError::Stopped(_) => 6,
    };
    let msg = results
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ");
    match results.iter().min_by_key(|e| kind_rank(e)) {
        Some(RunError::Refused(_)) => RunError::Refused(msg),
        Some(RunError::Setup(_)) | None => RunError::Setup(msg),
        Some(RunError::Prepare(_)) => RunError::Prepare(msg),
        Some(RunError::Storage(_)) => RunError::Storage(msg),
        Some(RunError::Stopped(_)) => RunError::Stopped(msg),
        Some(RunError::Open(_)) => RunError::Open(msg),
        Some(RunError::Host(_)) => RunError::Host(msg),
    }
}

/// Run one load point over `hosts`, host `i` running `plans[i]`.
///
/// Every host is checked, then prepared (an error in either ends the point
/// before anything runs, naming each failing host), then all start at one
/// wall-clock instant. Intervals are merged by addition as they stream in.
/// `Err` only when nothing was measured; a lost host or an I/O error returns
/// `Ok` with `error` set (a host lost under [`HostLoss::Continue`] is named in
/// its own [`HostResult`] only).
pub fn run_hosts(
    spec: &Spec,
    hosts: &mut [Box<dyn HostRunner>],
    plans: &[HostPlan],
    on_loss: HostLoss,
    stop: &AtomicBool,
    probe: Option<&dyn Probe>,
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    assert_eq!(hosts.len(), plans.len(), "one plan per host");
    if hosts.is_empty() {
        return Err(RunError::Setup("no host to run on".into()));
    }
    // Every host is finished however the point ends, after an error too.
    let mut finishing = Finishing(hosts);
    let hosts: &mut [Box<dyn HostRunner>] = &mut finishing;
    let (offsets, preps) = check_and_prepare(hosts, plans, stop, obs)?;
    let at_unix_ns = start_instant(hosts);
    let (tx, rx) = mpsc::channel::<HostEvent>();
    let names = hosts.iter().map(|h| h.name().to_string()).collect();
    let ticks = probe.map(|p| ProbeTicks::new(p, at_unix_ns, spec.interval));
    let mut c = Collector::new(spec, names, on_loss, ticks.as_ref());
    c.start_all(hosts, at_unix_ns, tx);
    obs.point_started(spec, c.total_intervals);
    std::thread::scope(|scope| {
        if let Some(t) = &ticks {
            scope.spawn(|| t.run());
        }
        collect(&mut c, hosts, stop, &rx, obs);
        if let Some(t) = &ticks {
            t.finish();
        }
    });
    c.emit_final(true, obs);
    c.observer_failed(hosts, obs);
    Ok(c.into_result(hosts, plans, preps, offsets, at_unix_ns))
}

/// When every host starts, ns since the Unix epoch: far enough ahead for
/// every start request to arrive in time.
fn start_instant(hosts: &[Box<dyn HostRunner>]) -> u64 {
    let lead = hosts.iter().map(|h| h.lead()).max().unwrap_or_default()
        + Duration::from_micros(500) * (hosts.len() as u32 - 1);
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    now_unix + lead.as_nanos() as u64
}

/// Take the hosts' events until every host is done, stopping them all on
/// an interrupt, an error, a lost host (as `on_loss` says) or a gated
/// point's end.
fn collect(
    c: &mut Collector,
    hosts: &mut [Box<dyn HostRunner>],
    stop: &AtomicBool,
    rx: &mpsc::Receiver<HostEvent>,
    obs: &mut dyn Observer,
) {
    loop {
        if stop.load(Ordering::Relaxed) && !c.interrupted {
            c.interrupted = true;
            stop_hosts(hosts);
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(ev) => {
                if c.event(ev, hosts, obs) {
                    // An I/O error or a lost host ends the point everywhere.
                    c.stop_all(hosts);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if c.emit_final(false, obs) {
            // The gated point measured its full runtime after an early ramp.
            c.stop_all(hosts);
        }
        c.observer_failed(hosts, obs);
        if c.merger.is_done() {
            break;
        }
    }
}

/// Ask every host to stop.
fn stop_hosts(hosts: &mut [Box<dyn HostRunner>]) {
    for h in hosts.iter_mut() {
        h.stop();
    }
}

/// Finishes every host when dropped (releases threads, the agents' runs).
struct Finishing<'a>(&'a mut [Box<dyn HostRunner>]);

impl std::ops::Deref for Finishing<'_> {
    type Target = [Box<dyn HostRunner>];
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl std::ops::DerefMut for Finishing<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0
    }
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        for h in self.0.iter_mut() {
            h.finish();
        }
    }
}

/// Check every host, then prepare every host; an error in either ends the
/// point before anything runs, naming each failing host. Returns each host's
/// clock offset and what it prepared, and tells the observer the notes.
fn check_and_prepare(
    hosts: &mut [Box<dyn HostRunner>],
    plans: &[HostPlan],
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<(Vec<i64>, Vec<HostPrepared>), RunError> {
    let offsets = all_or_errors(each_host(hosts, plans, |h, p| h.check(p)))?
        .into_iter()
        .map(|c| c.clock_offset_ns)
        .collect();
    let preps = all_or_errors(each_host(hosts, plans, |h, p| h.prepare(p, stop)))?;
    for n in preps.iter().flat_map(|p| &p.notes) {
        obs.note(n);
    }
    Ok((offsets, preps))
}

/// Every host's value, or the joined errors of those that failed.
fn all_or_errors<T>(results: Vec<Result<T, RunError>>) -> Result<Vec<T>, RunError> {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(v) => ok.push(v),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(ok)
    } else {
        Err(first_error(errors))
    }
}

/// What a started point accumulates from its hosts' events: the merger of
/// their intervals, each host's own series, errors and saved maps, and the
/// per-worker totals.
struct Collector<'a> {
    spec: &'a Spec,
    on_loss: HostLoss,
    ticks: Option<&'a ProbeTicks<'a>>,
    interval_ns: u64,
    ramp_intervals: u32,
    total_intervals: u32,
    host_names: Vec<String>,
    /// The steady-state gate, when the spec has one: it may end the ramp early.
    gate: Option<Gate>,
    /// The first interval past the measured period (the point's end).
    end_index: u32,
    /// Per-worker snapshots of ramp intervals, kept until the gate decides
    /// whether they are measured.
    ramp_workers: Vec<(u32, Vec<(u32, Snapshot)>)>,
    merger: Merger<(Snapshot, Vec<CpuSample>)>,
    host_series: Vec<Vec<IntervalRecord>>,
    host_errors: Vec<Option<String>>,
    host_maps: Vec<(Vec<SavedMap>, Vec<SavedMap>)>,
    lost: Vec<bool>,
    errors: Vec<String>,
    per_worker: Vec<Snapshot>,
    intervals: Vec<IntervalRecord>,
    interrupted: bool,
    stopping: bool,
}

impl<'a> Collector<'a> {
    fn new(
        spec: &'a Spec,
        host_names: Vec<String>,
        on_loss: HostLoss,
        ticks: Option<&'a ProbeTicks<'a>>,
    ) -> Self {
        let n = host_names.len();
        Collector {
            host_names,
            spec,
            on_loss,
            ticks,
            interval_ns: spec.interval.as_nanos() as u64,
            ramp_intervals: intervals_in(spec.ramp, spec.interval),
            total_intervals: total_intervals(spec),
            gate: spec.steady.map(|g| {
                let ramp = intervals_in(spec.ramp, spec.interval);
                Gate::new(g, ramp, spec.interval.as_secs_f64())
            }),
            end_index: total_intervals(spec),
            ramp_workers: Vec::new(),
            merger: Merger::new(n),
            host_series: vec![Vec::new(); n],
            host_errors: vec![None; n],
            host_maps: vec![Default::default(); n],
            lost: vec![false; n],
            errors: Vec::new(),
            per_worker: vec![Snapshot::default(); spec.total_workers() as usize],
            intervals: Vec::new(),
            interrupted: false,
            stopping: false,
        }
    }

    /// Start every host at `at_unix_ns`, each sending its events on `tx`; a
    /// host that does not start is named, and the others are stopped (what
    /// they measure is kept).
    fn start_all(
        &mut self,
        hosts: &mut [Box<dyn HostRunner>],
        at_unix_ns: u64,
        tx: mpsc::Sender<HostEvent>,
    ) {
        for (i, h) in hosts.iter_mut().enumerate() {
            if let Err(e) = h.start(at_unix_ns, i, tx.clone()) {
                let msg = format!("host {} did not start: {e}", h.name());
                self.host_errors[i] = Some(msg.clone());
                self.errors.push(msg);
                self.merger.end(i);
            }
        }
        if !self.errors.is_empty() {
            self.stop_all(hosts);
        }
    }

    /// An observer that could not keep what it was given ends the point
    /// everywhere, with its reason as an error ([`Observer::failure`]).
    fn observer_failed(&mut self, hosts: &mut [Box<dyn HostRunner>], obs: &mut dyn Observer) {
        if let Some(why) = obs.failure() {
            self.errors.push(why);
            self.stop_all(hosts);
        }
    }

    /// Stop every host, once.
    fn stop_all(&mut self, hosts: &mut [Box<dyn HostRunner>]) {
        if !self.stopping {
            self.stopping = true;
            stop_hosts(hosts);
        }
    }

    /// The first measured interval: the gate's choice, or after the ramp.
    fn measure_from(&self) -> u32 {
        self.gate
            .as_ref()
            .map_or(self.ramp_intervals, |g| g.measure_from())
    }

    /// The record of interval `index`, ending `end_ns` after the start.
    fn record(&self, index: u32, stats: Snapshot, end_ns: u64, cpu: CpuSample) -> IntervalRecord {
        let start_ns = index as u64 * self.interval_ns;
        IntervalRecord {
            index,
            phase: if index < self.measure_from() {
                Phase::Ramp
            } else {
                Phase::Measure
            },
            start_s: start_ns as f64 / 1e9,
            seconds: end_ns.saturating_sub(start_ns) as f64 / 1e9,
            stats,
            cpu,
            net: Vec::new(),
        }
    }

    /// Take one host event; true when it must stop every host.
    fn event(
        &mut self,
        ev: HostEvent,
        hosts: &[Box<dyn HostRunner>],
        obs: &mut dyn Observer,
    ) -> bool {
        match ev {
            HostEvent::Interval { host, interval } => {
                self.host_interval(host, *interval, hosts[host].name(), obs);
                false
            }
            HostEvent::Done {
                host,
                error,
                workers,
                verify,
            } => {
                self.merger.end(host);
                self.host_maps[host] = verify_maps_of(hosts[host].name(), verify, obs);
                // A host's own totals start after the full ramp; a gated point
                // sums its intervals' instead.
                let workers = workers.filter(|_| self.gate.is_none());
                for (w, s) in workers.into_iter().flatten() {
                    if let Some(pw) = self.per_worker.get_mut(w as usize) {
                        *pw = s;
                    }
                }
                let Some(e) = error else { return false };
                self.host_failed(host, e, hosts);
                true
            }
            HostEvent::Lost { host, reason } => self.host_lost(host, reason, obs),
        }
    }

    /// Host `host` ended with error `e` (named by host when there are several).
    fn host_failed(&mut self, host: usize, e: String, hosts: &[Box<dyn HostRunner>]) {
        let e = if hosts.len() > 1 {
            format!("host {}: {e}", hosts[host].name())
        } else {
            e
        };
        self.host_errors[host] = Some(e.clone());
        if !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    /// Host `host` was lost for `reason`; true when that stops the point
    /// (`--on-host-loss stop`).
    fn host_lost(&mut self, host: usize, reason: String, obs: &mut dyn Observer) -> bool {
        self.merger.end(host);
        self.lost[host] = true;
        self.host_errors[host] = Some(reason.clone());
        match self.on_loss {
            HostLoss::Stop => {
                let why = format!("{reason}; point stopped (--on-host-loss stop)");
                self.errors.push(why);
                true
            }
            HostLoss::Continue => {
                obs.note(&format!(
                    "{reason}; going on without it (--on-host-loss continue)"
                ));
                false
            }
        }
    }

    /// One host's interval: into its own series, the per-worker totals and
    /// the merger.
    fn host_interval(
        &mut self,
        host: usize,
        interval: HostInterval,
        name: &str,
        obs: &mut dyn Observer,
    ) {
        if !self.merger.is_alive(host) {
            return;
        }
        let HostInterval {
            index,
            end_ns,
            stats,
            workers,
            cpu,
        } = interval;
        if index >= self.end_index {
            return; // past a gated point's measured period
        }
        if index >= self.measure_from() {
            self.add_workers(&workers);
        } else if self.gate.is_some() {
            self.ramp_workers.push((index, workers));
        }
        let rec = self.record(index, stats, end_ns, cpu);
        if self.gate.is_none() {
            obs.host_interval(name, &rec);
        }
        self.merger.add(host, index, end_ns, |acc| {
            acc.0 += &rec.stats;
            acc.1.push(rec.cpu.clone());
        });
        self.host_series[host].push(rec);
    }

    fn add_workers(&mut self, workers: &[(u32, Snapshot)]) {
        for (w, s) in workers {
            if let Some(pw) = self.per_worker.get_mut(*w as usize) {
                *pw += s;
            }
        }
    }

    /// Hand the observer every interval that is final (`all`: every one
    /// left, at the end of the point); true once a gated point has measured
    /// its full runtime and must stop.
    fn emit_final(&mut self, all: bool, obs: &mut dyn Observer) -> bool {
        loop {
            let next = if all {
                self.merger.pop_any()
            } else {
                self.merger.pop_ready()
            };
            let Some((index, (stats, cpus), end)) = next else {
                return self.gate.is_some()
                    && self
                        .intervals
                        .last()
                        .is_some_and(|r| r.index + 1 >= self.end_index);
            };
            if index >= self.end_index {
                continue;
            }
            let mut rec = self.record(index, stats, end, cpu_of_hosts(&cpus));
            if let Some(t) = self.ticks {
                rec.net = t.take(index);
            }
            self.gate_take(&rec, obs);
            obs.interval(self.spec, &rec, self.total_intervals);
            self.intervals.push(rec);
        }
    }

    /// Show the gate a final interval; when the ramp ends with it, the
    /// measured period and its end move, the ramp's later per-worker
    /// snapshots count as measured, and each host's interval is told now
    /// that its phase is known.
    fn gate_take(&mut self, rec: &IntervalRecord, obs: &mut dyn Observer) {
        let Some(g) = self.gate.as_mut() else { return };
        let end_s = rec.start_s + rec.seconds;
        if g.take(rec.index, end_s, &rec.stats, rec.seconds) {
            let from = g.measure_from();
            if !self.spec.runtime.is_zero() {
                let measure = intervals_in(self.spec.runtime, self.spec.interval);
                self.end_index = from.saturating_add(measure);
            }
            obs.note(&format!(
                "steady state ({}) after {:.1} s: ramp ended, measuring {} s",
                self.spec.steady.map(|s| s.to_string()).unwrap_or_default(),
                end_s,
                self.spec.runtime.as_secs_f64()
            ));
            let later: Vec<_> = std::mem::take(&mut self.ramp_workers)
                .into_iter()
                .filter(|(i, _)| *i >= from)
                .collect();
            for (_, w) in later {
                self.add_workers(&w);
            }
        }
        let from = self.measure_from();
        for (series, host) in self.host_series.iter_mut().zip(0..) {
            if let Some(r) = series.iter_mut().rev().find(|r| r.index == rec.index) {
                r.phase = if r.index < from {
                    Phase::Ramp
                } else {
                    Phase::Measure
                };
                obs.host_interval(&self.host_names[host], r);
            }
        }
    }

    /// The point's result: the fleet's intervals and summary, per-worker
    /// totals, and each host's own series.
    fn into_result(
        self,
        hosts: &[Box<dyn HostRunner>],
        plans: &[HostPlan],
        preps: Vec<HostPrepared>,
        offsets: Vec<i64>,
        at_unix_ns: u64,
    ) -> PointResult {
        let spec = self.spec;
        let (measured, summary) = summarize(&self.intervals);
        let mut backends: Vec<String> = preps.iter().map(|p| p.backend.clone()).collect();
        backends.sort();
        backends.dedup();
        let workers = share::worker_ids(spec)
            .into_iter()
            .zip(self.per_worker)
            .map(|(id, stats)| WorkerResult { id, stats })
            .collect();
        let mut host_maps = self.host_maps.into_iter();
        let host_results = hosts
            .iter()
            .zip(plans)
            .zip(preps.iter().zip(offsets))
            .zip(
                self.host_series
                    .into_iter()
                    .zip(self.host_errors)
                    .zip(self.lost),
            )
            .map(|(((h, p), (prep, off)), ((series, error), lost))| {
                let (measured, summary) = summarize(&series);
                let (verify_maps, verify_journals) = host_maps.next().unwrap_or_default();
                HostResult {
                    host: h.name().to_string(),
                    vms: p.vms.clone(),
                    threads: prep.threads,
                    backend: prep.backend.clone(),
                    clock_offset_ms: off as f64 / 1e6,
                    intervals: series,
                    measured,
                    summary,
                    lost,
                    error,
                    verify_maps,
                    verify_journals,
                }
            })
            .collect();
        PointResult {
            label: spec.label.clone(),
            spec: spec.clone(),
            targets: distinct_targets(plans),
            backend: backends.join("; "),
            threads: preps.iter().map(|p| p.threads).sum(),
            started_unix: at_unix_ns as f64 / 1e9,
            prepared: preps.into_iter().flat_map(|p| p.prepared).collect(),
            intervals: self.intervals,
            workers,
            measured,
            summary,
            interrupted: self.interrupted,
            error: (!self.errors.is_empty()).then(|| self.errors.join("; ")),
            hosts: host_results,
            steady: self
                .gate
                .as_ref()
                .map(|g| g.outcome(spec.interval.as_secs_f64())),
            bound: None,
        }
    }
}

/// The plans' target URLs, each once, in order of first use.
fn distinct_targets(plans: &[HostPlan]) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for t in plans.iter().flat_map(|p| &p.targets) {
        let t = t.to_string();
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    targets
}

/// Print the bad blocks host `name` found (as a local run prints its own),
/// tell the user where it saved its verify maps and how to re-check them
/// there (or why it could not save them), and the same for its durability
/// journal; returns the maps and the journals.
fn verify_maps_of(
    name: &str,
    verify: Option<HostVerify>,
    obs: &mut dyn Observer,
) -> (Vec<SavedMap>, Vec<SavedMap>) {
    let Some(v) = verify else {
        return Default::default();
    };
    let journals = note_saved(
        obs,
        v.journals,
        |e| format!("host {name}: journal: {e}"),
        |j| {
            format!(
                "host {name}: journal of {} written on that host at {}; check it there with: {}",
                j.target,
                j.path,
                j.recheck_journal()
            )
        },
    );
    for b in &v.bad {
        eprintln!("storlab: verify: {b} (host {name})");
    }
    let maps = note_saved(
        obs,
        v.maps,
        |e| format!("host {name}: verify: could not save its map: {e}"),
        |m| {
            format!(
                "host {name}: verify map of {} saved on that host at {}; re-check there with: {}",
                m.target,
                m.path,
                m.recheck()
            )
        },
    );
    (maps, journals)
}

/// Note each file a host saved with `each`, or why it saved none with
/// `failed`; returns what it saved.
fn note_saved(
    obs: &mut dyn Observer,
    saved: Result<Vec<SavedMap>, String>,
    failed: impl FnOnce(String) -> String,
    each: impl Fn(&SavedMap) -> String,
) -> Vec<SavedMap> {
    match saved {
        Err(e) => {
            obs.note(&failed(e));
            Vec::new()
        }
        Ok(saved) => {
            for m in &saved {
                obs.note(&each(m));
            }
            saved
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_of_one_host_is_its_own_and_of_many_is_weighted() {
        let a = CpuSample {
            proc_user_s: 1.0,
            proc_sys_s: 0.5,
            host_busy_pct: 50.0,
            cores: 2,
            ctx: 0,
        };
        assert_eq!(cpu_of_hosts(std::slice::from_ref(&a)), a);
        let b = CpuSample {
            proc_user_s: 2.0,
            proc_sys_s: 0.0,
            host_busy_pct: 20.0,
            cores: 8,
            ctx: 0,
        };
        let c = cpu_of_hosts(&[a, b]);
        assert_eq!(c.cores, 10);
        assert_eq!(c.proc_user_s, 3.0);
        assert!((c.host_busy_pct - 26.0).abs() < 1e-9);
    }
}
