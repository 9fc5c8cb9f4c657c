//! A run being measured and saved: the run document rewritten after every
//! load point (JSON, CSV) and the results database written as measured,
//! ending in an [`Outcome`].

use super::{Error, Outcome, run_error_outcome, signals};
use crate::model::PointResult;
use crate::model::{JobRecord, RunRecord, write_atomic};
use crate::report::{csv, live::Live, progress::Progress};
use crate::runner::{Observer, Quiet, RunError};
use crate::store::{RunWriter, Store, Tee};
use crate::workload::Job;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Where a run's results go besides the database, and whether progress is told.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The run document (spec, environment, every interval, histograms) as JSON.
    pub json: Option<PathBuf>,
    /// The interval time series as CSV.
    pub csv: Option<PathBuf>,
    /// No progress lines.
    pub quiet: bool,
    /// The live page (`--web`), told every interval and point.
    pub live: Option<Live>,
}

/// A run being measured and saved.
pub struct Session<'s> {
    out: Outputs,
    /// The run document, saved after every point.
    pub record: RunRecord,
    writer: Option<RunWriter<'s>>,
    /// Live progress.
    pub progress: Progress,
    /// The live page, when one is served.
    pub live: Option<Live>,
    /// Exit code so far.
    pub code: Outcome,
    /// The load point whose error ended the run, named in the error line.
    failed_point: Option<String>,
}

fn store_err(e: impl std::fmt::Display) -> Error {
    Error::failed(format!("results database: {e}"))
}

impl<'s> Session<'s> {
    /// Start a run (recorded in `store` when given).
    pub fn new(
        out: Outputs,
        store: Option<&'s Store>,
        argv: Vec<String>,
        targets: Vec<String>,
    ) -> Result<Self, Error> {
        let mut record = RunRecord::new(argv);
        record.environment.network = crate::lab::registry::network_of(&targets);
        let writer = match store {
            Some(s) => Some(RunWriter::begin(s, &record, targets).map_err(store_err)?),
            None => None,
        };
        signals::install();
        Ok(Session {
            progress: Progress::new("", out.quiet),
            live: out.live.clone(),
            out,
            record,
            writer,
            code: Outcome::Ok,
            failed_point: None,
        })
    }

    /// The targets the next points use (for the database).
    pub fn set_targets(&mut self, targets: Vec<String>) {
        if let Some(w) = &mut self.writer {
            w.set_targets(targets);
        }
    }

    /// Start a job record named `name`.
    pub fn begin_job(&mut self, job: &Job, name: &str) -> Result<(), Error> {
        self.progress.set_job(name);
        self.record.jobs.push(JobRecord {
            name: name.to_string(),
            description: job.description.clone(),
            profile: job.profile,
            points: Vec::new(),
        });
        if let Some(w) = &mut self.writer {
            w.job(self.record.jobs.last().expect("job pushed"))
                .map_err(store_err)?;
        }
        Ok(())
    }

    /// Whether the user asked to stop.
    pub fn stopping(&mut self) -> bool {
        if signals::STOP.load(Ordering::SeqCst) {
            self.record.interrupted = true;
            self.code = Outcome::Interrupted;
            true
        } else {
            false
        }
    }

    /// Measure one point with `f`, given the observer to pass to the runner
    /// (progress, or `own` progress such as the fleet's, teed with the database).
    pub fn measure(
        &mut self,
        own: Option<&mut dyn Observer>,
        f: impl FnOnce(&mut dyn Observer) -> Result<PointResult, RunError>,
    ) -> Result<PointResult, RunError> {
        let progress: &mut dyn Observer = match own {
            Some(o) => o,
            None => &mut self.progress,
        };
        let mut quiet = Quiet;
        let live: &mut dyn Observer = match &mut self.live {
            Some(l) => l,
            None => &mut quiet,
        };
        match &mut self.writer {
            Some(w) => f(&mut Tee(progress, &mut Tee(w, live))),
            None => f(&mut Tee(progress, live)),
        }
    }

    /// Keep a point's outcome and save everything. Returns whether the run
    /// goes on (false after an interruption, a failure or an error).
    pub fn keep(&mut self, result: Result<PointResult, RunError>) -> Result<bool, Error> {
        match result {
            Ok(point) => {
                if let Some(l) = &self.live {
                    l.point_done(&point);
                }
                // A database that failed is reported after the point is in
                // the JSON: what was measured is never lost with it.
                let stored = match &mut self.writer {
                    Some(w) => w.point_done(&point),
                    None => Ok(()),
                };
                let interrupted = point.interrupted;
                let error = point.error.clone();
                let label = point.label.clone();
                self.record
                    .jobs
                    .last_mut()
                    .expect("job pushed")
                    .points
                    .push(point);
                // Interrupted and failed (an I/O that failed or never came
                // back while stopping) is both: the error is kept, 130 wins.
                if let Some(e) = error {
                    self.record.error = Some(e);
                    self.failed_point = Some(label);
                    self.code = Outcome::Failed;
                }
                if interrupted {
                    self.record.interrupted = true;
                    self.code = Outcome::Interrupted;
                }
                self.save()?;
                stored.map_err(store_err)?;
                Ok(!interrupted && self.record.error.is_none())
            }
            Err(RunError::Stopped(_)) => {
                self.record.interrupted = true;
                self.code = Outcome::Interrupted;
                Ok(false)
            }
            Err(e) => {
                if let Some(l) = &self.live {
                    l.failed(&e.to_string());
                }
                self.record.error = Some(e.to_string());
                self.code = run_error_outcome(&e);
                self.stopping();
                Ok(false)
            }
        }
    }

    /// Save the JSON and CSV now, so a later failure loses nothing.
    pub fn save(&self) -> Result<(), Error> {
        if let Some(path) = &self.out.json {
            let bytes = serde_json::to_vec_pretty(&self.record)
                .map_err(|e| Error::failed(format!("encoding JSON: {e}")))?;
            write_atomic(path, &bytes)
                .map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))?;
        }
        if let Some(path) = &self.out.csv {
            write_atomic(path, csv::intervals(&self.record).as_bytes())
                .map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(())
    }

    /// End the run: save and record it, hand it to `summary` (which prints
    /// what the command shows of it, or nothing), and turn the outcome into
    /// an [`Outcome`]; gives back the run as it was saved.
    pub fn finish(
        mut self,
        summary: impl FnOnce(&RunRecord),
    ) -> (RunRecord, Result<Outcome, Error>) {
        let outcome = self.end(summary);
        (self.record, outcome)
    }

    fn end(&mut self, summary: impl FnOnce(&RunRecord)) -> Result<Outcome, Error> {
        if let Some(l) = &self.live {
            l.finished();
        }
        self.record.complete = true;
        self.save()?;
        if let Some(w) = self.writer.take() {
            let id = w.finish(&self.record).map_err(store_err)?;
            let measured = self.record.jobs.iter().any(|j| !j.points.is_empty());
            if !self.out.quiet && measured {
                eprintln!("storlab: saved as run {id} (storlab results show {id})");
            }
        }
        summary(&self.record);
        self.outcome()
    }

    /// The run's outcome, told once: the error (naming the load point that
    /// failed) and/or the interruption. Interrupted and failed exits 130 with
    /// both in one line.
    fn outcome(&self) -> Result<Outcome, Error> {
        let saved = "everything measured so far was saved";
        let error = self
            .record
            .error
            .as_ref()
            .map(|e| match &self.failed_point {
                Some(label) => format!("load point {label}: {e}"),
                None => e.clone(),
            });
        match (error, self.record.interrupted) {
            (Some(e), true) => Err(Error {
                outcome: Outcome::Interrupted,
                message: format!("interrupted, and the run failed: {e}; {saved}"),
            }),
            (Some(e), false) => Err(Error {
                outcome: self.code,
                message: e,
            }),
            (None, true) => {
                eprintln!("storlab: interrupted; {saved}");
                Ok(self.code)
            }
            (None, false) => Ok(self.code),
        }
    }
}
