//! `storlab run`: build the jobs, run every load point locally or on a fleet of
//! agents, save as it goes.

use super::session;
use super::{CliError, ExitCode, OutputFormat, RunArgs};
use crate::compare::Contender;
use crate::measure::{Bench, Runner};
use crate::report::fiojson::{self, Flavor};
use crate::target::Target;

/// Run `storlab run`.
pub fn run(args: RunArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    super::replay::check_local(&args.job, args.fleet.hosts.is_some())?;
    let (jobs, imported_targets) = session::jobs_and_targets(&args.job)?;
    // --target wins over the target an imported job file names.
    let target_args = if args.targets.is_empty() {
        &imported_targets
    } else {
        &args.targets
    };
    if target_args.is_empty() {
        return Err(CliError::input(
            "no target given: add --target file:DIR (a directory, file or block device), a protocol URL, or null:",
        ));
    }
    let targets: Vec<Target> = target_args
        .iter()
        .map(|t| Target::parse(t).map_err(|e| CliError::input(e.to_string())))
        .collect::<Result<_, _>>()?;
    // On a fleet the agents check their own paths.
    for t in targets.iter().filter(|_| args.fleet.hosts.is_none()) {
        if let Some(p) = t.local_path()
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
    session::check_outputs(&args.out)?;
    let live = session::live(&args.out, &args.fleet, "storlab run")?;
    session::check_protocol_writes(&jobs, &targets, args.out.allow_overwrite)?;
    let mut opts = session::run_options(&args.out.exec, args.out.allow_overwrite);
    // A running lab's own store (its block baseline, its file in the media
    // mount) is the lab's to fill, as its protocol targets are.
    opts.lab_store = targets.iter().all(crate::lab::registry::owned_by_a_lab);
    let fleet = args
        .fleet
        .config(args.out.exec.threads, args.out.allow_overwrite)?;
    if fleet.is_some() {
        check_fleet_verify(&jobs)?;
    }
    let runner = Runner {
        opts,
        fleet,
        repeat: args.out.exec.repeat,
    };
    check_fleet(&runner, &targets, args.out.exec.quiet)?;
    let store = args.out.record.open()?;
    let mut bench = Bench::run(
        session::outputs(&args.out, live),
        store.as_ref(),
        argv,
        &Contender::of_targets(targets.clone()),
        runner,
    )?;
    bench.measure(&jobs, &[Contender::of_targets(targets)])?;
    let flavor = match args.output_format {
        OutputFormat::Text => None,
        OutputFormat::FioJson => Some(Flavor::Json),
        OutputFormat::FioJsonplus => Some(Flavor::JsonPlus),
    };
    let histogram = args.out.histogram;
    let (_, outcome) = bench.finish(|run| match flavor {
        Some(flavor) => {
            let doc = fiojson::document(run, flavor);
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("a JSON value always serialises")
            );
        }
        None => session::print_summary(run, histogram),
    });
    Ok(outcome?.into())
}

/// Check, before anything runs, that every agent of `runner`'s fleet answers
/// and may reach `targets`, telling the user what it found unless `quiet`.
pub(super) fn check_fleet(
    runner: &Runner,
    targets: &[Target],
    quiet: bool,
) -> Result<(), CliError> {
    match runner.check_fleet(targets) {
        Ok(Some(note)) if !quiet => eprintln!("{note}"),
        Ok(_) => {}
        Err(e) => {
            return Err(CliError {
                code: crate::measure::run_error_outcome(&e).into(),
                message: e.to_string(),
            });
        }
    }
    Ok(())
}

/// What verify mode can do on a fleet. `--verify` and `--journal` need
/// `disk_layout = slice`: every VM disk then has its own slice of the target
/// and a host gets exactly the slices it would have alone, so no two hosts
/// touch one block and each agent's own block map, in-flight locks and
/// journal are enough. With `--journal FILE` each agent writes its own
/// `FILE.agent-NAME` on its own host (`crate::verify::agent_journal_path`),
/// so FILE must be an absolute path there.
fn check_fleet_verify(jobs: &[crate::workload::Job]) -> Result<(), CliError> {
    use crate::workload::DiskLayout;
    let points = || jobs.iter().flat_map(|j| &j.points);
    if let Some(j) = points()
        .filter_map(|p| p.journal.as_deref())
        .find(|j| !j.is_absolute())
    {
        return Err(CliError::input(format!(
            "--journal {} with --hosts needs an absolute path: each agent writes its own \
             journal at that path on its host (as {}.agent-NAME)",
            j.display(),
            j.display()
        )));
    }
    if let Some(p) = points().find(|p| p.verify && p.disk_layout == DiskLayout::Shared) {
        let option = match &p.journal {
            Some(j) => format!("--journal {}", j.display()),
            None => "--verify".to_string(),
        };
        return Err(CliError::input(format!(
            "{option} with --hosts needs --disk_layout slice (the default), not shared \
             (allowed with --hosts and --verify or --journal: slice; point {}): with shared \
             every host's VM disks use the same region, so two hosts would write the same \
             blocks while each host keeps its own block map, in-flight locks and journal",
            p.label
        )));
    }
    Ok(())
}
