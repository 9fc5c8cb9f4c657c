//! What `run`, `compare` and `study` share before and after the measuring
//! loop (`crate::measure`): the jobs the user asked for, the checks that can
//! be made before anything runs, the loop's options, and the summary printed
//! at the end.

use super::{CliError, ExecArgs, FleetArgs, JobArgs, OutArgs, signals};
use crate::lab;
use crate::measure::Outputs;
use crate::model::RunRecord;
use crate::report::live::Live;
use crate::report::text;
use crate::runner::RunOptions;
use crate::target::Target;
use crate::workload::catalogue::Catalogue;
use crate::workload::{Job, jobfile, units};
use std::path::Path;

/// The jobs the arguments ask for, validated.
pub fn jobs(args: &JobArgs) -> Result<Vec<Job>, CliError> {
    jobs_and_targets(args).map(|(jobs, _)| jobs)
}

/// The jobs the arguments ask for, validated, and the targets an imported
/// file (`--fio`, `--icf`) named (empty: none). Its notes go to stderr, and
/// so does psync's iodepth 1 ([`Job::one_in_flight`]).
pub fn jobs_and_targets(args: &JobArgs) -> Result<(Vec<Job>, Vec<String>), CliError> {
    let input = |e: crate::workload::validate::SpecError| CliError::input(e.to_string());
    if let Some(path) = &args.replay {
        return Ok((vec![super::replay::job(args, path)?], Vec::new()));
    }
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

/// The engine options of `exec` (threads default to the CPUs).
pub fn run_options(exec: &ExecArgs, allow_overwrite: bool) -> RunOptions<'static> {
    let threads = exec.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    RunOptions {
        threads,
        allow_overwrite,
        lab_store: false,
        stop: &signals::STOP,
        hooks: Some(std::sync::Arc::new(crate::verify::Verify)),
        probe: None,
    }
}

/// Where the loop writes the run besides the database, and the live page
/// ([`live`]) when there is one.
pub fn outputs(out: &OutArgs, live: Option<Live>) -> Outputs {
    Outputs {
        json: out.json.clone(),
        csv: out.csv.clone(),
        quiet: out.exec.quiet,
        live,
    }
}

/// Start the live page of `--web ADDR`, before anything else runs, so that a
/// bad address costs nothing; it is told on stderr where it is.
pub fn live(out: &OutArgs, fleet: &FleetArgs, run: &str) -> Result<Option<Live>, CliError> {
    live_at(
        out.web.as_deref(),
        fleet.token_file.as_deref(),
        out.exec.quiet,
        run,
    )
}

/// `--web`'s address: IP:PORT, or a bare PORT on loopback (127.0.0.1).
fn web_addr(text: &str) -> Result<std::net::SocketAddr, CliError> {
    let t = text.trim();
    let port = t.strip_prefix(':').unwrap_or(t);
    if let Ok(p) = port.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], p)));
    }
    t.parse().map_err(|_| {
        CliError::input(format!(
            "invalid --web {text:?} (allowed: PORT on loopback, such as 8080, or IP:PORT, such \
             as 127.0.0.1:8080; port 0 picks one)"
        ))
    })
}

/// [`live`] from its parts: `--web`'s text, the token file guarding an
/// address that is not loopback, whether to stay quiet.
pub fn live_at(
    web: Option<&str>,
    token_file: Option<&Path>,
    quiet: bool,
    run: &str,
) -> Result<Option<Live>, CliError> {
    let Some(text) = web else {
        return Ok(None);
    };
    let addr = web_addr(text)?;
    let token = match token_file {
        Some(f) if !addr.ip().is_loopback() => {
            Some(crate::fleet::auth::load_token(f).map_err(CliError::input)?)
        }
        _ => None,
    };
    let guarded = token.is_some();
    let l = Live::serve(addr, token, run).map_err(CliError::input)?;
    if !quiet {
        let shown = if addr.ip().is_unspecified() {
            format!("port {}", l.addr().port())
        } else {
            format!("http://{}/", l.addr())
        };
        let ask = if guarded { " (add ?token=TOKEN)" } else { "" };
        eprintln!("storlab: live page at {shown}{ask}");
    }
    Ok(Some(l))
}

/// The human summary of every job of `run`, with the SQLIO-style 1 ms
/// histogram of every point when `histogram`.
pub fn print_summary(run: &RunRecord, histogram: bool) {
    for job in &run.jobs {
        if !job.points.is_empty() {
            // Errors are left out: the run's error is told once, on stderr.
            print!("{}", text::job_summary_with(job, false));
            if histogram {
                for p in &job.points {
                    print!("\n{}", text::ms_histogram(p));
                }
            }
        }
    }
}
