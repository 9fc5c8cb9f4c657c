//! The aggregator: drives every host through check, prepare and one common
//! start, merges their intervals by addition (never averaging percentiles) and
//! keeps each host's own series. A lost host is noticed, named, and either
//! stops the point or is left out of the intervals that follow.

use super::local::{intervals_in, total_intervals};
use super::merge::Merger;
use super::share;
use super::{HostEvent, HostInterval, HostPlan, HostRunner, Observer, RunError};
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
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    assert_eq!(hosts.len(), plans.len(), "one plan per host");
    if hosts.is_empty() {
        return Err(RunError::Setup("no host to run on".into()));
    }
    let result = run_started(spec, hosts, plans, on_loss, stop, obs);
    for h in hosts.iter_mut() {
        h.finish();
    }
    result
}

fn run_started(
    spec: &Spec,
    hosts: &mut [Box<dyn HostRunner>],
    plans: &[HostPlan],
    on_loss: HostLoss,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    let checks = each_host(hosts, plans, |h, p| h.check(p));
    let mut offsets = Vec::new();
    let mut errors = Vec::new();
    for c in checks {
        match c {
            Ok(c) => offsets.push(c.clock_offset_ns),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(first_error(errors));
    }
    let prepared = each_host(hosts, plans, |h, p| h.prepare(p, stop));
    let mut preps = Vec::new();
    for p in prepared {
        match p {
            Ok(p) => preps.push(p),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(first_error(errors));
    }
    for p in &preps {
        for n in &p.notes {
            obs.note(n);
        }
    }

    let interval_ns = spec.interval.as_nanos() as u64;
    let ramp_intervals = intervals_in(spec.ramp, spec.interval);
    let total_intervals = total_intervals(spec);
    // Far enough ahead for every start request to arrive in time.
    let lead = hosts.iter().map(|h| h.lead()).max().unwrap_or_default()
        + Duration::from_micros(500) * (hosts.len() as u32 - 1);
    let now_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let at_unix_ns = now_unix + lead.as_nanos() as u64;
    let (tx, rx) = mpsc::channel::<HostEvent>();
    let n = hosts.len();
    let mut merger: Merger<(Snapshot, Vec<CpuSample>)> = Merger::new(n);
    let mut host_series: Vec<Vec<IntervalRecord>> = vec![Vec::new(); n];
    let mut host_errors: Vec<Option<String>> = vec![None; n];
    let mut host_maps: Vec<(Vec<SavedMap>, Vec<SavedMap>)> = vec![Default::default(); n];
    let mut lost = vec![false; n];
    let mut errors: Vec<String> = Vec::new();
    for (i, h) in hosts.iter_mut().enumerate() {
        if let Err(e) = h.start(at_unix_ns, i, tx.clone()) {
            // Hosts already started are stopped; what they measure is kept.
            let msg = format!("host {} did not start: {e}", h.name());
            host_errors[i] = Some(msg.clone());
            errors.push(msg);
            merger.end(i);
        }
    }
    drop(tx);
    if !errors.is_empty() {
        for h in hosts.iter_mut() {
            h.stop();
        }
    }
    obs.point_started(spec, total_intervals);

    let nworkers = spec.total_workers() as usize;
    let mut per_worker = vec![Snapshot::default(); nworkers];
    let mut intervals: Vec<IntervalRecord> = Vec::new();
    let mut interrupted = false;
    let mut stopping = !errors.is_empty();
    let record = |index: u32, stats: Snapshot, end_ns: u64, cpu: CpuSample| {
        let start_ns = index as u64 * interval_ns;
        IntervalRecord {
            index,
            phase: if index < ramp_intervals {
                Phase::Ramp
            } else {
                Phase::Measure
            },
            start_s: start_ns as f64 / 1e9,
            seconds: end_ns.saturating_sub(start_ns) as f64 / 1e9,
            stats,
            cpu,
        }
    };

    loop {
        if stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            for h in hosts.iter_mut() {
                h.stop();
            }
        }
        let mut stop_all = false;
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(HostEvent::Interval { host, interval }) => {
                if !merger.is_alive(host) {
                    continue;
                }
                let HostInterval {
                    index,
                    end_ns,
                    stats,
                    workers,
                    cpu,
                } = *interval;
                if index >= ramp_intervals {
                    for (w, s) in &workers {
                        if let Some(pw) = per_worker.get_mut(*w as usize) {
                            *pw += s;
                        }
                    }
                }
                let rec = record(index, stats, end_ns, cpu);
                obs.host_interval(hosts[host].name(), &rec);
                merger.add(host, index, end_ns, |acc| {
                    acc.0 += &rec.stats;
                    acc.1.push(rec.cpu.clone());
                });
                host_series[host].push(rec);
            }
            Ok(HostEvent::Done {
                host,
                error,
                workers,
                verify,
            }) => {
                merger.end(host);
                host_maps[host] = verify_maps_of(hosts[host].name(), verify, obs);
                for (w, s) in workers.into_iter().flatten() {
                    if let Some(pw) = per_worker.get_mut(w as usize) {
                        *pw = s;
                    }
                }
                if let Some(e) = error {
                    let e = if n > 1 {
                        format!("host {}: {e}", hosts[host].name())
                    } else {
                        e
                    };
                    host_errors[host] = Some(e.clone());
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                    // An I/O error ends the point everywhere, as on one host.
                    stop_all = true;
                }
            }
            Ok(HostEvent::Lost { host, reason }) => {
                merger.end(host);
                lost[host] = true;
                host_errors[host] = Some(reason.clone());
                match on_loss {
                    HostLoss::Stop => {
                        errors.push(format!("{reason}; point stopped (--on-host-loss stop)"));
                        stop_all = true;
                    }
                    HostLoss::Continue => {
                        obs.note(&format!(
                            "{reason}; going on without it (--on-host-loss continue)"
                        ));
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if stop_all && !stopping {
            stopping = true;
            for h in hosts.iter_mut() {
                h.stop();
            }
        }
        while let Some((index, (stats, cpus), end)) = merger.pop_ready() {
            let rec = record(index, stats, end, cpu_of_hosts(&cpus));
            obs.interval(spec, &rec, total_intervals);
            intervals.push(rec);
        }
        if merger.is_done() {
            break;
        }
    }
    while let Some((index, (stats, cpus), end)) = merger.pop_any() {
        let rec = record(index, stats, end, cpu_of_hosts(&cpus));
        obs.interval(spec, &rec, total_intervals);
        intervals.push(rec);
    }

    let (measured, summary) = summarize(&intervals);
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
        .zip(per_worker)
        .map(|(id, stats)| WorkerResult { id, stats })
        .collect();
    let mut host_maps = host_maps.into_iter();
    let host_results = hosts
        .iter()
        .zip(plans)
        .zip(preps.iter().zip(offsets))
        .zip(host_series.into_iter().zip(host_errors).zip(lost))
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
    Ok(PointResult {
        label: spec.label.clone(),
        spec: spec.clone(),
        targets,
        backend: backends.join("; "),
        threads: preps.iter().map(|p| p.threads).sum(),
        started_unix: at_unix_ns as f64 / 1e9,
        prepared: preps.into_iter().flat_map(|p| p.prepared).collect(),
        intervals,
        workers,
        measured,
        summary,
        interrupted,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        hosts: host_results,
    })
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
        };
        assert_eq!(cpu_of_hosts(std::slice::from_ref(&a)), a);
        let b = CpuSample {
            proc_user_s: 2.0,
            proc_sys_s: 0.0,
            host_busy_pct: 20.0,
            cores: 8,
        };
        let c = cpu_of_hosts(&[a, b]);
        assert_eq!(c.cores, 10);
        assert_eq!(c.proc_user_s, 3.0);
        assert!((c.host_busy_pct - 26.0).abs() < 1e-9);
    }
}
