//! `storlab run`: build the jobs, run every load point, save as it goes.

use super::{CliError, ExitCode, RunArgs, signals};
use crate::backends::target::Target;
use crate::engine::runner::{self, RunError, RunOptions};
use crate::fleet::controller::{self, FleetConfig};
use crate::fleet::{auth, progress::FleetProgress};
use crate::report::{csv, progress::Progress, text};
use crate::result::{JobRecord, RunRecord, write_atomic};
use crate::workload::{Job, catalogue, jobfile};
use std::sync::atomic::Ordering;

/// The jobs the arguments ask for, validated.
fn jobs(args: &RunArgs) -> Result<Vec<Job>, CliError> {
    let base: Vec<Job> = if let Some(name) = &args.workload {
        catalogue::resolve(name, args.profile.into()).map_err(|e| CliError::input(e.to_string()))?
    } else if let Some(path) = &args.job {
        vec![jobfile::load(path).map_err(|e| CliError::input(e.to_string()))?]
    } else {
        Vec::new()
    };
    let mut jobs = if base.is_empty() {
        vec![
            args.flags
                .apply(None)
                .map_err(|e| CliError::input(e.to_string()))?,
        ]
    } else {
        base.into_iter()
            .map(|j| {
                args.flags
                    .apply(Some(j))
                    .map_err(|e| CliError::input(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    for j in &mut jobs {
        if j.description.is_empty()
            && let Some(p) = j.points.first()
        {
            j.description = p.describe();
        }
    }
    Ok(jobs)
}

/// Save the JSON (if asked) now, so a later failure loses nothing.
fn save(args: &RunArgs, record: &RunRecord) -> Result<(), CliError> {
    if let Some(path) = &args.json {
        let bytes = serde_json::to_vec_pretty(record)
            .map_err(|e| CliError::failed(format!("encoding JSON: {e}")))?;
        write_atomic(path, &bytes)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.csv {
        write_atomic(path, csv::intervals(record).as_bytes())
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// Run `storlab run`.
pub fn run(args: RunArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    let jobs = jobs(&args)?;
    if args.targets.is_empty() {
        return Err(CliError::input(
            "no target given: add --target file:DIR (a directory, file or block device) or --target null:",
        ));
    }
    let targets: Vec<Target> = args
        .targets
        .iter()
        .map(|t| Target::parse(t).map_err(|e| CliError::input(e.to_string())))
        .collect::<Result<_, _>>()?;
    // On a fleet the agents check their own paths.
    for t in targets.iter().filter(|_| args.hosts.is_none()) {
        if let Target::File(p) = t
            && let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty())
            && !p.exists()
            && !parent.is_dir()
        {
            return Err(CliError::input(format!(
                "target {t}: directory {} does not exist (create it, or point --target at an existing directory, file or device)",
                parent.display()
            )));
        }
    }
    if args.threads == Some(0) {
        return Err(CliError::input(
            "invalid --threads = 0 (allowed: 1 or more)",
        ));
    }
    // Check that the JSON and CSV destinations are writable before measuring.
    for path in [&args.json, &args.csv].into_iter().flatten() {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(CliError::input(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    signals::install();
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let opts = RunOptions {
        threads,
        allow_overwrite: args.allow_overwrite,
        stop: &signals::STOP,
    };
    let fleet = match &args.hosts {
        Some(h) => Some(FleetConfig {
            hosts: controller::parse_hosts(h).map_err(CliError::input)?,
            token: auth::load_token(
                args.token_file
                    .as_deref()
                    .ok_or_else(|| CliError::input("--hosts needs --token-file FILE"))?,
            )
            .map_err(CliError::input)?,
            vms_per_host: args.vms_per_host,
            on_loss: args.on_host_loss,
            threads: args.threads,
            allow_overwrite: args.allow_overwrite,
        }),
        None => None,
    };
    if let Some(f) = &fleet {
        match controller::check_fleet(f, &targets) {
            Ok(note) if !args.quiet => eprintln!("{note}"),
            Ok(_) => {}
            Err(e) => {
                let code = match e {
                    RunError::Refused(_) => ExitCode::BadInput,
                    _ => ExitCode::Failed,
                };
                return Err(CliError {
                    code,
                    message: e.to_string(),
                });
            }
        }
    }
    let mut record = RunRecord::new(argv);
    let mut progress = Progress::new("", args.quiet);
    let mut fleet_progress = FleetProgress::new("", args.quiet);
    let mut code = ExitCode::Ok;
    'jobs: for job in &jobs {
        progress.set_job(&job.name);
        fleet_progress.set_job(&job.name);
        record.jobs.push(JobRecord {
            name: job.name.clone(),
            description: job.description.clone(),
            profile: job.profile,
            points: Vec::new(),
        });
        for spec in &job.points {
            if signals::STOP.load(Ordering::SeqCst) {
                record.interrupted = true;
                code = ExitCode::Interrupted;
                break 'jobs;
            }
            let result = match &fleet {
                Some(f) => controller::run_point(f, spec, &targets, opts.stop, &mut fleet_progress),
                None => runner::run_point(spec, &targets, &opts, &mut progress),
            };
            match result {
                Ok(point) => {
                    for h in point
                        .hosts
                        .iter()
                        .filter(|h| h.lost && point.error.is_none())
                    {
                        eprintln!(
                            "storlab: warning: {}; its {} completed interval(s) are kept",
                            h.error.as_deref().unwrap_or("host lost"),
                            h.intervals.len()
                        );
                    }
                    let interrupted = point.interrupted;
                    let error = point.error.clone();
                    record
                        .jobs
                        .last_mut()
                        .expect("job pushed")
                        .points
                        .push(point);
                    save(&args, &record)?;
                    if interrupted {
                        record.interrupted = true;
                        code = ExitCode::Interrupted;
                        break 'jobs;
                    }
                    if let Some(e) = error {
                        record.error = Some(e);
                        code = ExitCode::Failed;
                        break 'jobs;
                    }
                }
                Err(e) => {
                    record.error = Some(e.to_string());
                    code = match e {
                        RunError::Prepare(_) | RunError::Setup(_) | RunError::Refused(_) => {
                            ExitCode::BadInput
                        }
                        RunError::Open(_) | RunError::Host(_) => ExitCode::Failed,
                    };
                    if signals::STOP.load(Ordering::SeqCst) {
                        record.interrupted = true;
                        code = ExitCode::Interrupted;
                    }
                    break 'jobs;
                }
            }
        }
    }
    record.complete = true;
    save(&args, &record)?;
    for job in &record.jobs {
        if !job.points.is_empty() {
            print!("{}", text::job_summary(job));
            if args.histogram {
                for p in &job.points {
                    print!("\n{}", text::ms_histogram(p));
                }
            }
        }
    }
    if let Some(e) = &record.error {
        return Err(CliError {
            code,
            message: e.clone(),
        });
    }
    if record.interrupted {
        eprintln!("storlab: interrupted; everything measured so far was saved");
    }
    Ok(code)
}
