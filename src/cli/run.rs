//! `storlab run`: build the jobs, run every load point locally or on a fleet of
//! agents, save as it goes.

use super::curve;
use super::session::{self, Session};
use super::{CliError, ExitCode, OutputFormat, RunArgs};
use crate::fleet::controller::{self, FleetConfig};
use crate::fleet::{auth, progress::FleetProgress};
use crate::report::fiojson::{self, Flavor};
use crate::runner;
use crate::target::Target;

/// Run `storlab run`.
pub fn run(args: RunArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
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
    for t in targets.iter().filter(|_| args.hosts.is_none()) {
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
    session::check_protocol_writes(&jobs, &targets, args.out.allow_overwrite)?;
    let mut opts = session::run_options(&args.out);
    // A running lab's own store (its block baseline, its file in the media
    // mount) is the lab's to fill, as its protocol targets are.
    opts.lab_store = targets.iter().all(crate::lab::registry::owned_by_a_lab);
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
            threads: args.out.exec.threads,
            allow_overwrite: args.out.allow_overwrite,
            tls: args
                .tls_ca
                .as_deref()
                .map(crate::fleet::remote::TlsTrust::load)
                .transpose()
                .map_err(CliError::input)?,
        }),
        None => None,
    };
    if fleet.is_some() {
        check_fleet_verify(&jobs)?;
    }
    if let Some(f) = &fleet {
        match controller::check_fleet(f, &targets) {
            Ok(note) if !args.out.exec.quiet => eprintln!("{note}"),
            Ok(_) => {}
            Err(e) => {
                return Err(CliError {
                    code: session::run_error_code(&e),
                    message: e.to_string(),
                });
            }
        }
    }
    let store = args.out.record.open()?;
    let names: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
    // On a lab's targets, the lab's link counters go beside every interval.
    opts.probe = crate::lab::registry::lab_of(&names)
        .as_ref()
        .and_then(session::lab_probe);
    let mut s = Session::new(&args.out, store.as_ref(), argv, names)?;
    let mut fleet_progress = FleetProgress::new("", args.out.exec.quiet);
    'jobs: for job in &jobs {
        s.begin_job(job, &job.name)?;
        fleet_progress.set_job(&job.name);
        let mut points = curve::Points::new(job, args.out.exec.repeat);
        loop {
            let next = match points.step(&mut s) {
                curve::Step::Run(n) => n,
                curve::Step::JobDone => break,
                curve::Step::Stop => break 'jobs,
            };
            let spec = &next.spec;
            let result = match &fleet {
                Some(f) => s.measure(Some(&mut fleet_progress), |obs| {
                    controller::run_point(f, spec, &targets, opts.stop, opts.probe.as_deref(), obs)
                }),
                None => s.measure(None, |obs| runner::run_point(spec, &targets, &opts, obs)),
            };
            if let Ok(point) = &result {
                points.measured(point);
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
            }
            if !s.keep(result)? {
                break 'jobs;
            }
        }
    }
    let flavor = match args.output_format {
        OutputFormat::Text => None,
        OutputFormat::FioJson => Some(Flavor::Json),
        OutputFormat::FioJsonplus => Some(Flavor::JsonPlus),
    };
    if let Some(flavor) = flavor {
        let doc = fiojson::document(&s.record, flavor);
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("a JSON value always serialises")
        );
    }
    s.finish(flavor.is_none())
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
