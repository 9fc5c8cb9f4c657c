//! The loop itself: every job on each contender in turn, each job's points
//! in [`Points`]' order, every point kept and saved before the next.

use super::bound::Watch;
use super::lab::restore;
use super::points::{Points, Step};
use super::session::{Outputs, Session};
use super::{Error, Outcome, Runner};
use crate::compare::{self, Contender};
use crate::fleet::progress::FleetProgress;
use crate::lab;
use crate::model::{CompareInfo, PointServerCpu, RunRecord};
use crate::runner::Observer;
use crate::store::{Store, Tee};
use crate::workload::Job;

/// A run being measured: one contender (`storlab run`) or several in turn
/// (`storlab compare`, a study's lab), locally or on a fleet.
pub struct Bench<'s> {
    /// The run, saved after every point.
    s: Session<'s>,
    runner: Runner,
    /// The comparison being measured; `None`: a plain run (no server CPU and
    /// no comparison in its record).
    info: Option<CompareInfo>,
    repeat: u32,
    /// The lab's media layer, reset with every restore of its store.
    media: Option<lab::media::MediaInfo>,
    /// The fleet's progress lines (per host), in place of the session's.
    fleet_progress: Option<FleetProgress>,
}

impl<'s> Bench<'s> {
    /// Start a run of `contender` (a run's targets), each point `repeat` times.
    pub fn run(
        out: Outputs,
        store: Option<&'s Store>,
        argv: Vec<String>,
        contender: &Contender,
        mut runner: Runner,
    ) -> Result<Bench<'s>, Error> {
        let names = contender.urls();
        // On a lab's targets, the lab's link counters go beside every interval.
        if runner.opts.probe.is_none() {
            runner.opts.probe = lab::registry::lab_of(&names).as_ref().and_then(lab_probe);
        }
        let quiet = out.quiet;
        let s = Session::new(out, store, argv, names)?;
        Ok(Bench {
            s,
            fleet_progress: runner.fleet.as_ref().map(|_| FleetProgress::new("", quiet)),
            repeat: runner.repeat,
            runner,
            info: None,
            media: None,
        })
    }

    /// Start the run of a comparison of `contenders` (every target it will
    /// measure), relative to `baseline`, on `lab` when the targets are a lab's.
    pub fn compare(
        out: Outputs,
        store: Option<&'s Store>,
        argv: Vec<String>,
        contenders: &[Contender],
        lab_state: Option<&lab::LabState>,
        baseline: &str,
        mut runner: Runner,
    ) -> Result<Bench<'s>, Error> {
        let quiet = out.quiet;
        let mut s = Session::new(out, store, argv, Vec::new())?;
        let urls: Vec<String> = contenders.iter().flat_map(Contender::urls).collect();
        s.record.environment.network = lab_state
            .filter(|_| contenders.iter().any(|c| c.backing.is_some()))
            .map(lab::LabState::network)
            .or_else(|| lab::registry::network_of(&urls));
        // On a lab, the lab's link counters go beside every interval.
        runner.opts.probe = match lab_state {
            Some(l) => lab_probe(l),
            None => lab::registry::lab_of(&urls).as_ref().and_then(lab_probe),
        };
        let info = CompareInfo {
            baseline: baseline.to_string(),
            targets: contenders
                .iter()
                .map(|c| (c.name.clone(), c.urls().join(",")))
                .collect(),
            lab: lab_state.and_then(|l| serde_json::to_value(l).ok()),
            ..CompareInfo::default()
        };
        Ok(Bench {
            s,
            fleet_progress: runner.fleet.as_ref().map(|_| FleetProgress::new("", quiet)),
            repeat: runner.repeat,
            runner,
            info: Some(info),
            media: lab_state.and_then(|l| l.media.clone()),
        })
    }

    /// Run every job on each of `contenders` in turn (all jobs on one, then
    /// the next), restoring the backing store before a point that follows a
    /// write (and once more at the end) and resetting the lab's medium before
    /// every point. Returns whether the run goes on (false:
    /// interrupted, or a point failed; the session holds why).
    /// The store is restored at the end however the points ended, after a
    /// failed save too.
    pub fn measure(&mut self, jobs: &[Job], contenders: &[Contender]) -> Result<bool, Error> {
        let mut dirty = false; // the backing store was written since its last restore
        let measured = self.measure_points(jobs, contenders, &mut dirty);
        if dirty && let Some(c) = contenders.iter().find(|c| c.backing.is_some()) {
            let restored = restore(c, &mut self.s, self.media.as_ref());
            match (&measured, restored) {
                (Ok(_), r) => r?,
                (Err(_), Err(e)) => eprintln!("storlab: {e}"),
                (Err(_), Ok(())) => {}
            }
        }
        measured
    }

    /// [`Bench::measure`]'s points, noting in `dirty` whether the store was
    /// written since its last restore.
    fn measure_points(
        &mut self,
        jobs: &[Job],
        contenders: &[Contender],
        dirty: &mut bool,
    ) -> Result<bool, Error> {
        let s = &mut self.s;
        let comparing = self.info.is_some();
        let mut go_on = true;
        'targets: for c in contenders {
            s.set_targets(c.urls());
            // Every target starts on the medium as `lab up` left it.
            if c.backing.is_some()
                && let Some(m) = &self.media
            {
                m.reset()
                    .map_err(|e| Error::failed(format!("resetting the lab's medium: {e}")))?;
            }
            // The medium is as `lab up` left it until a point runs on it.
            let mut fresh = true;
            for job in jobs {
                let shown = if comparing {
                    format!("{} on {}", job.name, c.name)
                } else {
                    job.name.clone()
                };
                s.begin_job(job, &job.name)?;
                s.progress.set_job(&shown);
                if let Some(l) = &s.live {
                    l.set_job(&job.name, &c.name);
                }
                if let Some(f) = &mut self.fleet_progress {
                    f.set_job(&shown);
                }
                let mut points = Points::new(job, self.repeat);
                loop {
                    let next = match points.step(s) {
                        Step::Run(n) => n,
                        Step::JobDone => break,
                        Step::Stop => {
                            go_on = false;
                            break 'targets;
                        }
                    };
                    let spec = &next.spec;
                    // Every point is a test of its own (a repetition too): it
                    // starts from the initial store, on the medium as `lab up`
                    // left it (idle, caches empty), so no point inherits a
                    // cache or a queue of writes the one before it filled.
                    if *dirty {
                        restore(c, s, self.media.as_ref())?;
                        *dirty = false;
                    } else if !fresh
                        && c.backing.is_some()
                        && let Some(m) = &self.media
                    {
                        m.reset().map_err(|e| {
                            Error::failed(format!("resetting the lab's medium: {e}"))
                        })?;
                    }
                    fresh = false;
                    let mut servers = Vec::new();
                    if comparing {
                        // The lab's own store is the lab's to fill (see RunOptions::lab_store).
                        self.runner.opts.lab_store = c.backing.is_some();
                    }
                    let runner = &self.runner;
                    let own = self.fleet_progress.as_mut().map(|f| f as &mut dyn Observer);
                    let media = self.media.as_ref().filter(|_| c.backing.is_some());
                    let mut watch = Watch::new(&c.servers, media, runner.fleet.is_none());
                    let point = s.measure(own, |obs| {
                        let mut both = Tee(obs, &mut watch);
                        compare::run_measured(c, spec, &mut |spec, t| {
                            runner.run_point(spec, t, &mut both)
                        })
                        .map(|(p, cpu)| {
                            servers = cpu;
                            p
                        })
                    });
                    let net = s.record.environment.network.as_ref();
                    let point = point.map(|mut p| {
                        p.bound = Some(watch.bound(&p, &c.targets, net));
                        p
                    });
                    *dirty |= spec.writes();
                    if let Ok(p) = &point {
                        points.measured(p);
                        warn_lost_hosts(p);
                        if let Some(info) = &mut self.info {
                            info.server_cpu.push(PointServerCpu {
                                target: c.name.clone(),
                                job: job.name.clone(),
                                point: p.label.clone(),
                                servers,
                            });
                        }
                    }
                    go_on = s.keep(point)?;
                    if let Some(info) = &self.info {
                        s.record.compare = Some(info.clone());
                        s.save()?;
                    }
                    if !go_on {
                        break 'targets;
                    }
                }
            }
        }
        Ok(go_on)
    }

    /// The run so far, with its comparison.
    pub fn record(&self) -> RunRecord {
        let mut run = self.s.record.clone();
        if let Some(info) = &self.info {
            run.compare = Some(info.clone());
        }
        run
    }

    /// End the run: save and record it, hand it to `summary` (what the
    /// command prints of it), and give back the run as it was saved with its
    /// outcome.
    pub fn finish(
        mut self,
        summary: impl FnOnce(&RunRecord),
    ) -> (RunRecord, Result<Outcome, Error>) {
        if let Some(info) = self.info.take() {
            self.s.record.compare = Some(info);
        }
        self.s.finish(summary)
    }
}

/// Tell the user of every host a point lost while the others went on; its
/// completed intervals are kept.
fn warn_lost_hosts(p: &crate::model::PointResult) {
    for h in p.hosts.iter().filter(|h| h.lost && p.error.is_none()) {
        eprintln!(
            "storlab: warning: {}; its {} completed interval(s) are kept",
            h.error.as_deref().unwrap_or("host lost"),
            h.intervals.len()
        );
    }
}

/// The link counters of `lab` as the per-interval probe of a run on it.
fn lab_probe(lab: &lab::LabState) -> Option<std::sync::Arc<dyn crate::runner::Probe>> {
    Some(std::sync::Arc::new(lab::counters::NetProbe::for_lab(lab)))
}
