//! `storlab compare`: the same jobs on every target in turn, the lab's backing
//! store restored between tests, then the studies' table relative to a baseline.

use super::session;
use super::{CliError, CompareArgs, ExitCode};
use crate::compare;
use crate::lab;
use crate::measure::study::check_baseline;
use crate::measure::{Bench, Runner, TemporaryLab};
use crate::report::relative::{Comparison, Source};
use crate::report::text;

/// Run `storlab compare`.
pub fn run(args: CompareArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    if !args.runs.is_empty() {
        return super::diff::run_compare(&args);
    }
    super::replay::check_local(&args.job, args.fleet.hosts.is_some())?;
    let jobs = session::jobs(&args.job)?;
    session::check_outputs(&args.out)?;
    let live = session::live(&args.out, &args.fleet, "storlab compare")?;
    let _temporary = if args.lab {
        let mut cfg = lab::LabConfig::new(TemporaryLab::temp_dir("compare"));
        cfg.media =
            lab::MediaChoice::from_options(args.media.as_deref(), args.media_file.as_deref())
                .map_err(CliError::input)?;
        if let Some(link) = &args.link {
            cfg.link = Some(link.clone());
            cfg.net = lab::NetMode::Netns;
        }
        Some(TemporaryLab::up(&cfg, args.out.exec.quiet)?)
    } else {
        None
    };
    let state_dir = match &_temporary {
        Some(t) => t.dir.clone(),
        None => args
            .state_dir
            .clone()
            .unwrap_or_else(lab::default_state_dir),
    };
    let lab_state = lab::status(&state_dir).filter(|s| s.targets.is_some());
    let targets: Vec<String> = if args.targets.is_empty() {
        compare::DEFAULT_LAB_TARGETS
            .iter()
            .map(|t| t.to_string())
            .collect()
    } else {
        args.targets.clone()
    };
    let contenders = compare::resolve(&targets, lab_state.as_ref()).map_err(CliError::input)?;
    // Lab targets are storlab's; anything else written to needs --allow-overwrite.
    let others: Vec<_> = contenders
        .iter()
        .filter(|c| c.backing.is_none())
        .flat_map(|c| c.targets.clone())
        .collect();
    session::check_protocol_writes(&jobs, &others, args.out.allow_overwrite)?;
    if contenders.iter().any(|c| c.backing.is_some())
        && let Some(b) = lab_state.as_ref().and_then(|s| s.backing.as_ref())
    {
        session::check_store_fits(
            &jobs,
            b.size,
            "bring a lab up with a larger store (storlab lab up --size SIZE) and compare on it",
        )?;
    }
    // A lab name (`fc8`) stands for its label too.
    let baseline = args
        .baseline
        .as_deref()
        .map(compare::label)
        .unwrap_or_else(|| contenders[0].name.clone());
    check_baseline(&baseline, &contenders)?;
    let mut opts = session::run_options(&args.out.exec, args.out.allow_overwrite);
    opts.lab_store = false;
    let fleet = args
        .fleet
        .config(args.out.exec.threads, args.out.allow_overwrite)?;
    let runner = Runner {
        opts,
        fleet,
        repeat: args.out.exec.repeat,
    };
    let every: Vec<_> = contenders.iter().flat_map(|c| c.targets.clone()).collect();
    super::run::check_fleet(&runner, &every, args.out.exec.quiet)?;
    let store = args.out.record.open()?;
    let mut bench = Bench::compare(
        session::outputs(&args.out, live),
        store.as_ref(),
        argv,
        &contenders,
        lab_state.as_ref(),
        &baseline,
        runner,
    )?;
    bench.measure(&jobs, &contenders)?;
    let (_, outcome) = bench.finish(|record| print_tables(record, &baseline));
    Ok(outcome?.into())
}

/// One table per (job, load point), a row per target in run order (repeats
/// as mean ± 95% confidence interval), relative to the baseline: the
/// reports' computation ([`Comparison`]), with the targets' short names.
fn print_tables(run: &crate::model::RunRecord, baseline: &str) {
    let source = |run: crate::model::RunRecord| Source {
        name: "this comparison".into(),
        run: run.with_target_names(),
    };
    let c = match Comparison::new(vec![source(run.clone())], Some(baseline)) {
        Ok(c) => c,
        // The baseline measured nothing (it failed): relative to the first
        // target that did, said so.
        Err(_) => match Comparison::new(vec![source(run.clone())], None) {
            Ok(c) => {
                println!(
                    "\nno results for the baseline {baseline}: figures relative to {}",
                    c.baseline_name()
                );
                c
            }
            Err(_) => return, // nothing measured at all
        },
    };
    print!("{}", text::comparison_tables(&c));
}
