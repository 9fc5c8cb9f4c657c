//! What `run` and `compare` share: the jobs the user asked for, checked
//! outputs, and a run record saved after every load point (JSON, CSV and the
//! results database, written as measured), ending in a summary and an exit code.

use super::{CliError, ExitCode, JobArgs, OutArgs, signals};
use crate::lab;
use crate::model::PointResult;
use crate::model::{JobRecord, RunRecord, write_atomic};
use crate::report::{csv, progress::Progress, text};
use crate::runner::{Observer, RunError, RunOptions};
use crate::store::{RunWriter, Store, Tee};
use crate::target::Target;
use crate::workload::catalogue::Catalogue;
use crate::workload::{Job, jobfile, units};
use std::path::Path;
use std::sync::atomic::Ordering;

/// The jobs the arguments ask for, validated.
pub fn jobs(args: &JobArgs) -> Result<Vec<Job>, CliError> {
    jobs_and_targets(args).map(|(jobs, _)| jobs)
}

/// The jobs the arguments ask for, validated, and the targets an imported
/// file (`--fio`, `--icf`) named (empty: none). Its notes go to stderr, and
/// so does psync's iodepth 1 ([`Job::one_in_flight`]).
pub fn jobs_and_targets(args: &JobArgs) -> Result<(Vec<Job>, Vec<String>), CliError> {
    let input = |e: crate::workload::validate::SpecError| CliError::input(e.to_string());
    let mut targets = Vec::new();
    let imported = match (&args.fio, &args.icf) {
        (Some(path), _) => Some(crate::workload::fio::load(path).map_err(import_error)?),
        (None, Some(path)) => Some(crate::workload::icf::load(path).map_err(import_error)?),
        (None, None) => None,
    };
    let base: Vec<Job> = if let Some(imported) = imported {
        for n in &imported.notes {
            eprintln!("storlab: note: {n}");
        }
        targets = imported.targets;
        vec![imported.job]
    } else if let Some(name) = &args.workload {
        Catalogue::user(&args.catalogue)
            .and_then(|cat| cat.resolve(name, args.profile.into()))
            .map_err(input)?
    } else if let Some(path) = &args.job {
        vec![jobfile::load(path).map_err(input)?]
    } else {
        Vec::new()
    };
    let mut jobs = if base.is_empty() {
        vec![args.flags.apply(None).map_err(input)?]
    } else {
        base.into_iter()
            .map(|j| args.flags.apply(Some(j)).map_err(input))
            .collect::<Result<Vec<_>, _>>()?
    };
    apply_curve(args, &mut jobs)?;
    for j in &mut jobs {
        for n in j.one_in_flight() {
            eprintln!("storlab: note: {n}");
        }
        if j.description.is_empty()
            && let Some(p) = j.points.first()
        {
            j.description = p.describe();
        }
    }
    Ok((jobs, targets))
}

/// An imported file's errors, one `storlab: error:` line each.
pub fn import_error(e: crate::workload::import::ImportErrors) -> CliError {
    let lines: Vec<String> = e.0.iter().map(|e| e.to_string()).collect();
    CliError::input(lines.join("\nstorlab: error: "))
}

/// Apply `--curve` (when given) to every job.
fn apply_curve(args: &JobArgs, jobs: &mut [Job]) -> Result<(), CliError> {
    if let Some(text) = &args.curve {
        let pcts = crate::workload::curve::parse("--curve", text)
            .map_err(|e| CliError::input(e.to_string()))?;
        for j in jobs {
            j.curve = pcts.clone();
        }
    }
    Ok(())
}

/// Check the options that can be checked before anything runs.
pub fn check_outputs(out: &OutArgs) -> Result<(), CliError> {
    if out.exec.threads == Some(0) {
        return Err(CliError::input(
            "invalid --threads = 0 (allowed: 1 or more)",
        ));
    }
    for path in [&out.json, &out.csv].into_iter().flatten() {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(CliError::input(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Refuse, before any lab comes up or any I/O, jobs whose VM disks need more
/// of the lab's single store than its `store` bytes; `fix` says how to give
/// them room (or shrink them). Names the job, the load point and both sizes.
pub fn check_store_fits(jobs: &[Job], store: u64, fix: &str) -> Result<(), CliError> {
    let worst = jobs
        .iter()
        .flat_map(|j| j.points.iter().map(move |p| (j, p)))
        .map(|(j, p)| (j, p, crate::plan::single_target_need(p)))
        .max_by_key(|&(_, _, need)| need);
    match worst {
        Some((job, point, need)) if need > store => {
            let disks: u32 = point.groups.iter().map(|g| g.vms * g.disks_per_vm).sum();
            Err(CliError::input(format!(
                "job {} at load point {:?} needs {} of the lab's store ({disks} VM disk(s) of {}, \
                 --disk_layout {}) but the store is {}: {fix}",
                job.name,
                point.label,
                units::format_size(need),
                units::format_size(point.size),
                match point.disk_layout {
                    crate::workload::DiskLayout::Slice => "slice",
                    crate::workload::DiskLayout::Shared => "shared",
                },
                units::format_size(store),
            )))
        }
        _ => Ok(()),
    }
}

/// Refuse a job that writes on a protocol target storlab did not create (a
/// running lab's targets are storlab's), unless the user allowed it.
pub fn check_protocol_writes(
    jobs: &[Job],
    targets: &[Target],
    allow: bool,
) -> Result<(), CliError> {
    if allow || !jobs.iter().flat_map(|j| &j.points).any(|p| p.writes()) {
        return Ok(());
    }
    for t in targets {
        let protocol = matches!(
            t,
            Target::Nfs { .. } | Target::Iscsi { .. } | Target::Nbd { .. }
        );
        if protocol && !lab::registry::owned_by_a_lab(t) {
            return Err(CliError::input(format!(
                "refusing to write to {t}: storlab did not create it (a running `storlab lab`'s targets are storlab's; \
                 pass --allow-overwrite to let storlab overwrite it)"
            )));
        }
    }
    Ok(())
}

/// The engine options of `out` (threads default to the CPUs).
pub fn run_options(out: &OutArgs) -> RunOptions<'static> {
    let threads = out.exec.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    RunOptions {
        threads,
        allow_overwrite: out.allow_overwrite,
        lab_store: false,
        stop: &signals::STOP,
        hooks: Some(std::sync::Arc::new(crate::verify::Verify)),
        probe: None,
    }
}

/// The link counters of `lab` as the per-interval probe of a run on it.
pub fn lab_probe(lab: &crate::lab::LabState) -> Option<std::sync::Arc<dyn crate::runner::Probe>> {
    Some(std::sync::Arc::new(
        crate::lab::counters::NetProbe::for_lab(lab),
    ))
}

/// The exit code of a failure before a point measured anything: the user's
/// input (2) or the storage, a server or a host failing (1).
pub fn run_error_code(e: &RunError) -> ExitCode {
    match e {
        RunError::Prepare(_) | RunError::Setup(_) | RunError::Refused(_) => ExitCode::BadInput,
        RunError::Storage(_) | RunError::Open(_) | RunError::Host(_) => ExitCode::Failed,
        RunError::Stopped(_) => ExitCode::Interrupted,
    }
}

/// A run being measured and saved.
pub struct Session<'s> {
    out: &'s OutArgs,
    /// The run document, saved after every point.
    pub record: RunRecord,
    writer: Option<RunWriter<'s>>,
    /// Live progress.
    pub progress: Progress,
    /// Exit code so far.
    pub code: ExitCode,
    /// The load point whose error ended the run, named in the error line.
    failed_point: Option<String>,
}

fn store_err(e: impl std::fmt::Display) -> CliError {
    CliError::failed(format!("results database: {e}"))
}

impl<'s> Session<'s> {
    /// Start a run (recorded in `store` when given).
    pub fn new(
        out: &'s OutArgs,
        store: Option<&'s Store>,
        argv: Vec<String>,
        targets: Vec<String>,
    ) -> Result<Self, CliError> {
        let mut record = RunRecord::new(argv);
        record.environment.network = crate::lab::registry::network_of(&targets);
        let writer = match store {
            Some(s) => Some(RunWriter::begin(s, &record, targets).map_err(store_err)?),
            None => None,
        };
        signals::install();
        Ok(Session {
            out,
            record,
            writer,
            progress: Progress::new("", out.exec.quiet),
            code: ExitCode::Ok,
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
    pub fn begin_job(&mut self, job: &Job, name: &str) -> Result<(), CliError> {
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
            self.code = ExitCode::Interrupted;
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
        match &mut self.writer {
            Some(w) => f(&mut Tee(progress, w)),
            None => f(progress),
        }
    }

    /// Keep a point's outcome and save everything. Returns whether the run
    /// goes on (false after an interruption, a failure or an error).
    pub fn keep(&mut self, result: Result<PointResult, RunError>) -> Result<bool, CliError> {
        match result {
            Ok(point) => {
                if let Some(w) = &mut self.writer {
                    w.point_done(&point).map_err(store_err)?;
                }
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
                    self.code = ExitCode::Failed;
                }
                if interrupted {
                    self.record.interrupted = true;
                    self.code = ExitCode::Interrupted;
                }
                self.save()?;
                Ok(!interrupted && self.record.error.is_none())
            }
            Err(RunError::Stopped(_)) => {
                self.record.interrupted = true;
                self.code = ExitCode::Interrupted;
                Ok(false)
            }
            Err(e) => {
                self.record.error = Some(e.to_string());
                self.code = run_error_code(&e);
                self.stopping();
                Ok(false)
            }
        }
    }

    /// Save the JSON and CSV now, so a later failure loses nothing.
    pub fn save(&self) -> Result<(), CliError> {
        if let Some(path) = &self.out.json {
            let bytes = serde_json::to_vec_pretty(&self.record)
                .map_err(|e| CliError::failed(format!("encoding JSON: {e}")))?;
            write_atomic(path, &bytes)
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
        }
        if let Some(path) = &self.out.csv {
            write_atomic(path, csv::intervals(&self.record).as_bytes())
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(())
    }

    /// End the run: save, record it, print the summary (unless `summary` is
    /// false: the caller prints its own), and turn the outcome into an exit code.
    pub fn finish(mut self, summary: bool) -> Result<ExitCode, CliError> {
        self.end(summary)
    }

    /// [`Session::finish`], also giving back the run as it was saved.
    pub fn finish_record(mut self, summary: bool) -> (RunRecord, Result<ExitCode, CliError>) {
        let outcome = self.end(summary);
        (self.record, outcome)
    }

    fn end(&mut self, summary: bool) -> Result<ExitCode, CliError> {
        self.record.complete = true;
        self.save()?;
        if let Some(w) = self.writer.take() {
            let id = w.finish(&self.record).map_err(store_err)?;
            let measured = self.record.jobs.iter().any(|j| !j.points.is_empty());
            if !self.out.exec.quiet && measured {
                eprintln!("storlab: saved as run {id} (storlab results show {id})");
            }
        }
        if summary {
            self.print_summary();
        }
        self.outcome()
    }

    /// The run's outcome, told once: the error (naming the load point that
    /// failed) and/or the interruption. Interrupted and failed exits 130 with
    /// both in one line.
    fn outcome(&self) -> Result<ExitCode, CliError> {
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
            (Some(e), true) => Err(CliError {
                code: ExitCode::Interrupted,
                message: format!("interrupted, and the run failed: {e}; {saved}"),
            }),
            (Some(e), false) => Err(CliError {
                code: self.code,
                message: e,
            }),
            (None, true) => {
                eprintln!("storlab: interrupted; {saved}");
                Ok(self.code)
            }
            (None, false) => Ok(self.code),
        }
    }

    /// The human summary of every job.
    pub fn print_summary(&self) {
        for job in &self.record.jobs {
            if !job.points.is_empty() {
                // Errors are left out: the run's error is told once, on stderr.
                print!("{}", text::job_summary_with(job, false));
                if self.out.histogram {
                    for p in &job.points {
                        print!("\n{}", text::ms_histogram(p));
                    }
                }
            }
        }
    }
}
