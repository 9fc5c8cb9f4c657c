//! The aggregator: drives every host through check, prepare and one common
//! start, merges their intervals by addition (never averaging percentiles) and
//! keeps each host's own series. A lost host is noticed, named, and either
//! stops the point or is left out of the intervals that follow.

use super::local::{intervals_in, total_intervals};
use super::merge::Merger;
use super::share;
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
    // Far enough ahead for every start request to arrive in time.
    let lead = hosts.iter().map(|h| h.lead()).max().unwrap_or_default()
        + Duration::from_micros(500) * (hosts.len() as u32 - 1);
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let at_unix_ns = now_unix + lead.as_nanos() as u64;
    let (tx, rx) = mpsc::channel::<HostEvent>();
    let mut c = Collector::new(spec, hosts.len(), on_loss, probe);
    for (i, h) in hosts.iter_mut().enumerate() {
        if let Err(e) = h.start(at_unix_ns, i, tx.clone()) {
            // Hosts already started are stopped; what they measure is kept.
            let msg = format!("host {} did not start: {e}", h.name());
            c.host_errors[i] = Some(msg.clone());
            c.errors.push(msg);
            c.merger.end(i);
        }
    }
    drop(tx);
    if !c.errors.is_empty() {
        c.stopping = true;
        for h in hosts.iter_mut() {
            h.stop();
        }
    }
    if let Some(p) = probe {
        p.start();
    }
    obs.point_started(spec, c.total_intervals);
    loop {
        if stop.load(Ordering::Relaxed) && !c.interrupted {
            c.interrupted = true;
            for h in hosts.iter_mut() {
                h.stop();
            }
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(ev) => {
                if c.event(ev, hosts, obs) && !c.stopping {
                    // An I/O error or a lost host ends the point everywhere.
                    c.stopping = true;
                    for h in hosts.iter_mut() {
                        h.stop();
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        c.emit_final(false, obs);
        if c.merger.is_done() {
            break;
        }
    }
    c.emit_final(true, obs);
    Ok(c.into_result(hosts, plans, preps, offsets, at_unix_ns))
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
    probe: Option<&'a dyn Probe>,
    interval_ns: u64,
    ramp_intervals: u32,
    total_intervals: u32,
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
    fn new(spec: &'a Spec, n: usize, on_loss: HostLoss, probe: Option<&'a dyn Probe>) -> Self {
        Collector {
            spec,
            on_loss,
            probe,
            interval_ns: spec.interval.as_nanos() as u64,
            ramp_intervals: intervals_in(spec.ramp, spec.interval),
            total_intervals: total_intervals(spec),
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

    /// The record of interval `index`, ending `end_ns` after the start.
    fn record(&self, index: u32, stats: Snapshot, end_ns: u64, cpu: CpuSample) -> IntervalRecord {
        let start_ns = index as u64 * self.interval_ns;
        IntervalRecord {
            index,
            phase: if index < self.ramp_intervals {
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
                for (w, s) in workers.into_iter().flatten() {
                    if let Some(pw) = self.per_worker.get_mut(w as usize) {
                        *pw = s;
                    }
                }
                let Some(e) = error else { return false };
                let e = if hosts.len() > 1 {
                    format!("host {}: {e}", hosts[host].name())
                } else {
                    e
                };
                self.host_errors[host] = Some(e.clone());
                if !self.errors.contains(&e) {
                    self.errors.push(e);
                }
                true
            }
            HostEvent::Lost { host, reason } => {
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
        if index >= self.ramp_intervals {
            for (w, s) in &workers {
                if let Some(pw) = self.per_worker.get_mut(*w as usize) {
                    *pw += s;
                }
            }
        }
        let rec = self.record(index, stats, end_ns, cpu);
        obs.host_interval(name, &rec);
        self.merger.add(host, index, end_ns, |acc| {
            acc.0 += &rec.stats;
            acc.1.push(rec.cpu.clone());
        });
        self.host_series[host].push(rec);
    }

    /// Hand the observer every interval that is final (`all`: every one
    /// left, at the end of the point).
    fn emit_final(&mut self, all: bool, obs: &mut dyn Observer) {
        loop {
            let next = if all {
                self.merger.pop_any()
            } else {
                self.merger.pop_ready()
            };
            let Some((index, (stats, cpus), end)) = next else {
                return;
            };
            let mut rec = self.record(index, stats, end, cpu_of_hosts(&cpus));
            if let Some(p) = self.probe {
                rec.net = p.sample();
            }
            obs.interval(self.spec, &rec, self.total_intervals);
            self.intervals.push(rec);
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
        let mut targets: Vec<String> = Vec::new();
        for t in plans.iter().flat_map(|p| &p.targets) {
            let t = t.to_string();
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
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
            targets,
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
        }
    }
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
    let journals = match v.journals {
        Err(e) => {
            obs.note(&format!("host {name}: journal: {e}"));
            Vec::new()
        }
        Ok(journals) => {
            for j in &journals {
                obs.note(&format!(
                    "host {name}: journal of {} written on that host at {}; check it there with: {}",
                    j.target,
                    j.path,
                    j.recheck_journal()
                ));
            }
            journals
        }
    };
    for b in &v.bad {
        eprintln!("storlab: verify: {b} (host {name})");
    }
    match v.maps {
        Err(e) => {
            obs.note(&format!("host {name}: verify: could not save its map: {e}"));
            (Vec::new(), journals)
        }
        Ok(maps) => {
            for m in &maps {
                obs.note(&format!(
                    "host {name}: verify map of {} saved on that host at {}; re-check there with: {}",
                    m.target,
                    m.path,
                    m.recheck()
                ));
            }
            (maps, journals)
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
