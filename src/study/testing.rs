//! Synthetic study results for the renderers' tests: points whose figures
//! follow a scale, in compare run documents shaped as `storlab study` makes
//! them (every job on one target, then the next).

use super::{LabRun, Results, Study};
use crate::model::test_point;
use crate::model::{CompareInfo, IntervalRecord, JobRecord, Phase, PointResult, RunRecord};
use crate::stats::{CpuSample, DirStats, Snapshot};
use crate::workload::{BlockSizes, Profile};

/// A point `label` on `target` whose figures follow `scale`: 1000·scale
/// IOPS of 8 KiB, 1/scale ms mean latency (min a tenth, max ten times),
/// 10/scale µs of client CPU per I/O, host CPU 50% (peak 60%) and one
/// measured second, whose interval holds the I/Os.
pub fn point(label: &str, target: &str, scale: f64) -> PointResult {
    let mut p = test_point();
    p.label = label.to_string();
    p.targets = vec![target.to_string()];
    let s = &mut p.summary;
    s.seconds = 1.0;
    let t = &mut s.total;
    t.ios = (1000.0 * scale) as u64;
    t.iops = 1000.0 * scale;
    t.bytes = t.ios * 8192;
    t.mb_s = t.iops * 8192.0 / 1e6;
    t.gbit_s = t.mb_s * 8.0 / 1e3;
    t.lat_mean_us = 1000.0 / scale;
    t.lat_min_us = 100.0 / scale;
    t.lat_max_us = 10_000.0 / scale;
    s.peak_mb_s = t.mb_s * 1.2;
    s.peak_gbit_s = t.gbit_s * 1.2;
    s.cpu.cpu_s_per_mio = 10.0 / scale;
    s.cpu.host_busy_pct = 50.0;
    s.cpu.host_busy_peak_pct = 60.0;
    let ios = s.total.ios;
    // One interval holding the I/Os, so server CPU divides by them.
    p.intervals.push(IntervalRecord {
        index: 0,
        phase: Phase::Measure,
        start_s: 0.0,
        seconds: 1.0,
        stats: Snapshot {
            read: DirStats {
                ios,
                bytes: ios * 8192,
                ..DirStats::default()
            },
            ..Snapshot::default()
        },
        cpu: CpuSample::default(),
        net: Vec::new(),
    });
    p
}

/// `p` with one block size of `bytes`.
pub fn with_bs(mut p: PointResult, bytes: u64) -> PointResult {
    for g in &mut p.spec.groups {
        g.access.bs = BlockSizes::one(bytes);
    }
    p
}

/// A compare run of `points`, each `(job, point)`, in that order; the
/// targets are named by the points' targets.
pub fn run_with(points: Vec<(&str, PointResult)>) -> LabRun {
    let mut run = RunRecord::new(vec!["storlab".into(), "study".into()]);
    let mut info = CompareInfo {
        baseline: "local".into(),
        ..CompareInfo::default()
    };
    for (job, p) in points {
        let t = p.targets[0].clone();
        if !info.targets.iter().any(|(n, _)| *n == t) {
            info.targets.push((t.clone(), t));
        }
        match run.jobs.last_mut() {
            Some(j) if j.name == job && j.points[0].targets == p.targets => j.points.push(p),
            _ => run.jobs.push(JobRecord {
                name: job.to_string(),
                description: String::new(),
                profile: Some(Profile::Quick),
                points: vec![p],
            }),
        }
    }
    run.compare = Some(info);
    run.complete = true;
    LabRun {
        lab: "lab".into(),
        medium: None,
        scale: 1,
        run,
    }
}

/// A job of [`run_of`]: its name, its load points' labels, and each target
/// with its scale.
pub type JobOf<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, f64)]);

/// A compare run of `jobs`, each `(name, labels, [(target, scale)])`: every
/// job on the first target, then on the next, each point from [`point`].
pub fn run_of(jobs: &[JobOf]) -> LabRun {
    let mut targets: Vec<(&str, f64)> = Vec::new();
    for (_, _, ts) in jobs {
        for t in ts.iter() {
            if !targets.iter().any(|x| x.0 == t.0) {
                targets.push(*t);
            }
        }
    }
    let mut points = Vec::new();
    for (target, _) in &targets {
        for (job, labels, ts) in jobs {
            let Some((_, scale)) = ts.iter().find(|x| x.0 == *target) else {
                continue;
            };
            points.extend(labels.iter().map(|l| (*job, point(l, target, *scale))));
        }
    }
    run_with(points)
}

/// The results of `study` from `runs`, relative to "local", quick profile.
pub fn results(study: &Study, runs: Vec<LabRun>) -> Results<'_> {
    Results {
        study,
        baseline: "local".into(),
        profile: Profile::Quick,
        runs,
    }
}
