//! The order in which the measuring loop takes a job's load points: each
//! point `--repeat` times, and with a curve ([`crate::workload::curve`]) each
//! point's unthrottled runs first, then its open-loop runs at each percentage
//! of their mean IOPS, each `--repeat` times.

use super::Outcome;
use super::session::Session;
use crate::model::PointResult;
use crate::workload::curve::{self, Max};
use crate::workload::{Job, Spec};

/// The next point to measure.
#[derive(Debug)]
pub struct Next {
    /// The spec to run.
    pub spec: Spec,
    /// A second or later run of the same spec (`--repeat`).
    pub repetition: bool,
}

/// What a driver does next, from [`Points::step`].
#[derive(Debug)]
pub enum Step {
    /// Measure this point.
    Run(Box<Next>),
    /// The job has no more points.
    JobDone,
    /// Stop measuring: the session is stopping, or the curve failed (the
    /// failure is recorded in the session).
    Stop,
}

/// The points of one job in the order they are measured; results of
/// unthrottled curve runs are fed back with [`Points::measured`].
pub struct Points<'j> {
    job: &'j Job,
    repeat: u32,
    /// Index of the job's load point.
    point: usize,
    /// 0: the point itself (unthrottled with a curve); k: the k-th percentage.
    stage: usize,
    /// Repetition of the current stage.
    rep: u32,
    /// What the current point's unthrottled runs measured.
    max_runs: Vec<Max>,
    /// The last spec handed out was an unthrottled curve run.
    last_was_max: bool,
}

impl<'j> Points<'j> {
    /// The points of `job`, each run `repeat` times (at least once).
    pub fn new(job: &'j Job, repeat: u32) -> Self {
        Points {
            job,
            repeat: repeat.max(1),
            point: 0,
            stage: 0,
            rep: 0,
            max_runs: Vec::new(),
            last_was_max: false,
        }
    }

    fn stages(&self) -> usize {
        1 + self.job.curve.as_ref().map_or(0, |c| c.len())
    }

    /// The next spec to run; `Ok(None)` when the job is done; `Err` when a
    /// curve cannot go on (its unthrottled run completed no I/O).
    pub fn next_point(&mut self) -> Result<Option<Next>, String> {
        if self.rep >= self.repeat {
            self.rep = 0;
            self.stage += 1;
            if self.stage >= self.stages() {
                self.stage = 0;
                self.point += 1;
                self.max_runs.clear();
            }
        }
        let Some(base) = self.job.points.get(self.point) else {
            return Ok(None);
        };
        let several = self.job.points.len() > 1;
        let repetition = self.rep > 0;
        self.rep += 1;
        self.last_was_max = false;
        let spec = match (&self.job.curve, self.stage) {
            (None, _) => base.clone(),
            (Some(_), 0) => {
                self.last_was_max = true;
                curve::max_point(base, several)
            }
            (Some(pcts), k) => {
                let max = Max::mean(&self.max_runs);
                match max.and_then(|m| curve::fraction_point(base, several, pcts[k - 1], &m)) {
                    Some(s) => s,
                    None => {
                        return Err(format!(
                            "curve of load point {:?}: its unthrottled run completed no I/O, \
                             so there is no maximum rate to take percentages of",
                            base.label
                        ));
                    }
                }
            }
        };
        Ok(Some(Next { spec, repetition }))
    }

    /// [`Points::next_point`] for a driver with session `s`: a curve that cannot go
    /// on becomes the run's failure in `s`, and a stopping session stops.
    pub fn step(&mut self, s: &mut Session) -> Step {
        match self.next_point() {
            Ok(Some(_)) if s.stopping() => Step::Stop,
            Ok(Some(n)) => Step::Run(Box::new(n)),
            Ok(None) => Step::JobDone,
            Err(e) => {
                (s.record.error, s.code) = (Some(e), Outcome::Failed);
                Step::Stop
            }
        }
    }

    /// Feed back what the spec last handed out measured (needed after an
    /// unthrottled curve run; ignored otherwise).
    pub fn measured(&mut self, p: &PointResult) {
        if !self.last_was_max {
            return;
        }
        let ios_of = |name: &str| -> u64 {
            p.workers
                .iter()
                .filter(|w| w.id.group == name)
                .map(|w| w.stats.total_ios())
                .sum()
        };
        let per_group: Vec<u64> = p.spec.groups.iter().map(|g| ios_of(&g.name)).collect();
        let all: u64 = p.workers.iter().map(|w| w.stats.total_ios()).sum();
        let names_unique = p
            .spec
            .groups
            .iter()
            .enumerate()
            .all(|(i, g)| !p.spec.groups[..i].iter().any(|h| h.name == g.name));
        let group_shares = if all > 0 && names_unique && per_group.iter().sum::<u64>() == all {
            per_group.iter().map(|&n| n as f64 / all as f64).collect()
        } else {
            Vec::new()
        };
        self.max_runs.push(Max {
            iops: p.summary.total.iops,
            group_shares,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Rate, RateMode, jobfile};

    fn job(text: &str) -> Job {
        jobfile::parse(text, "c.toml").unwrap()
    }

    /// Run `points` with a fake measurement: unthrottled runs report `max` IOPS.
    fn labels(job: &Job, repeat: u32, max: f64) -> Vec<(String, bool, Option<Rate>)> {
        let mut pts = Points::new(job, repeat);
        let mut out = Vec::new();
        while let Some(n) = pts.next_point().unwrap() {
            let mut p = fake_result(&n.spec);
            p.summary.total.iops = max;
            pts.measured(&p);
            out.push((
                n.spec.label.clone(),
                n.repetition,
                n.spec.groups[0].access.rate,
            ));
        }
        out
    }

    fn fake_result(spec: &Spec) -> PointResult {
        serde_json::from_value(serde_json::json!({
            "label": spec.label,
            "spec": spec,
            "targets": ["null:"],
            "backend": "null",
            "threads": 1,
            "started_unix": 0.0,
            "prepared": [],
            "intervals": [],
            "workers": [],
            "measured": crate::stats::Snapshot::default(),
            "summary": crate::stats::Summary::default(),
            "interrupted": false,
            "error": null,
        }))
        .expect("a PointResult")
    }

    #[test]
    fn no_curve_is_each_point_repeated() {
        let j = job("[sweep]\niodepth = [1, 2]\n");
        let l = labels(&j, 2, 100.0);
        let names: Vec<(&str, bool)> = l.iter().map(|(n, r, _)| (n.as_str(), *r)).collect();
        assert_eq!(
            names,
            [
                ("iodepth=1", false),
                ("iodepth=1", true),
                ("iodepth=2", false),
                ("iodepth=2", true)
            ]
        );
    }

    #[test]
    fn curve_runs_max_then_percentages_of_the_mean() {
        let j = job("curve = [10, 100]\nnumjobs = 2\nrate_iops = 7\n");
        let l = labels(&j, 1, 1000.0);
        assert_eq!(
            l,
            [
                ("curve max".to_string(), false, None),
                ("curve 10%".into(), false, Some(Rate::Iops(50))),
                ("curve 100%".into(), false, Some(Rate::Iops(500))),
            ]
        );
        // Repeats: each stage twice, the fractions of the mean of both max runs.
        let mut pts = Points::new(&j, 2);
        let mut seen = Vec::new();
        let mut iops = [900.0, 1100.0].into_iter();
        while let Some(n) = pts.next_point().unwrap() {
            let mut p = fake_result(&n.spec);
            p.summary.total.iops = iops.next().unwrap_or(0.0);
            pts.measured(&p);
            assert_eq!(
                n.spec.latency_from_schedule(),
                !n.spec.label.ends_with("max")
            );
            if n.spec.latency_from_schedule() {
                assert_eq!(n.spec.groups[0].access.rate_mode, RateMode::Open);
            }
            seen.push((n.spec.label, n.repetition));
        }
        let want = [
            ("curve max", false),
            ("curve max", true),
            ("curve 10%", false),
            ("curve 10%", true),
            ("curve 100%", false),
            ("curve 100%", true),
        ];
        let seen: Vec<(&str, bool)> = seen.iter().map(|(l, r)| (l.as_str(), *r)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn sweep_points_each_get_their_curve_and_zero_max_is_an_error() {
        let j = job("curve = [50]\n[sweep]\niodepth = [1, 4]\n");
        let l: Vec<String> = labels(&j, 1, 10.0).into_iter().map(|x| x.0).collect();
        assert_eq!(
            l,
            [
                "iodepth=1 · curve max",
                "iodepth=1 · curve 50%",
                "iodepth=4 · curve max",
                "iodepth=4 · curve 50%"
            ]
        );
        let mut pts = Points::new(&j, 1);
        let first = pts.next_point().unwrap().unwrap();
        pts.measured(&fake_result(&first.spec));
        let e = pts.next_point().unwrap_err();
        assert!(e.contains("\"iodepth=1\"") && e.contains("no I/O"), "{e}");
    }
}
