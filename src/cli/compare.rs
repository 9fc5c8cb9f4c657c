//! `storlab compare`: the same jobs on every target in turn, the lab's backing
//! store restored between tests, then the studies' table relative to a baseline.

use super::session::{self, Session};
use super::{CliError, CompareArgs, ExitCode};
use crate::compare::{self, Contender};
use crate::lab;
use crate::model::{CompareInfo, PointServerCpu};
use crate::prepare;
use crate::report::relative::{Comparison, Source};
use crate::report::text;
use crate::runner;

/// Run `storlab compare`.
pub fn run(args: CompareArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    if !args.runs.is_empty() {
        return super::diff::run_compare(&args);
    }
    let jobs = session::jobs(&args.job)?;
    session::check_outputs(&args.out)?;
    let _temporary = if args.lab {
        let mut cfg = lab::LabConfig::new(TemporaryLab::dir());
        if let Some(m) = &args.media {
            cfg.media = m.clone();
        }
        cfg.media_file = args.media_file.clone();
        Some(TemporaryLab::up(&cfg, args.out.quiet)?)
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
        .map(|c| c.target.clone())
        .collect();
    session::check_protocol_writes(&jobs, &others, args.out.allow_overwrite)?;
    // A lab name (`fc8`) stands for its label too.
    let baseline = args
        .baseline
        .as_deref()
        .map(compare::label)
        .unwrap_or_else(|| contenders[0].name.clone());
    if !contenders.iter().any(|c| c.name == baseline) {
        let names: Vec<&str> = contenders.iter().map(|c| c.name.as_str()).collect();
        return Err(CliError::input(format!(
            "invalid --baseline {baseline:?} (allowed: one of the targets: {})",
            names.join(", ")
        )));
    }
    let mut opts = session::run_options(&args.out);
    let store = session::open_store(&args.out)?;
    let mut s = Session::new(&args.out, store.as_ref(), argv, Vec::new())?;
    s.record.environment.network = lab_state
        .as_ref()
        .filter(|_| contenders.iter().any(|c| c.backing.is_some()))
        .map(crate::lab::LabState::network)
        .or_else(|| {
            let urls: Vec<String> = contenders.iter().map(|c| c.target.to_string()).collect();
            crate::lab::registry::network_of(&urls)
        });
    // On a lab, the lab's link counters go beside every interval.
    let urls: Vec<String> = contenders.iter().map(|c| c.target.to_string()).collect();
    opts.probe = match &lab_state {
        Some(l) => session::lab_probe(l),
        None => crate::lab::registry::lab_of(&urls)
            .as_ref()
            .and_then(session::lab_probe),
    };
    let mut info = CompareInfo {
        baseline: baseline.clone(),
        targets: contenders
            .iter()
            .map(|c| (c.name.clone(), c.target.to_string()))
            .collect(),
        lab: lab_state
            .as_ref()
            .and_then(|l| serde_json::to_value(l).ok()),
        ..CompareInfo::default()
    };
    let mut dirty = false; // the backing store was written since its last restore
    'targets: for c in &contenders {
        s.set_targets(vec![c.target.to_string()]);
        for job in &jobs {
            if dirty {
                restore(c, &mut s)?;
                dirty = false;
            }
            s.begin_job(job, &job.name)?;
            s.progress.set_job(&format!("{} on {}", job.name, c.name));
            let mut points = super::curve::Points::new(job, args.out.repeat);
            loop {
                let next = match points.step(&mut s) {
                    super::curve::Step::Run(n) => n,
                    super::curve::Step::JobDone => break,
                    super::curve::Step::Stop => break 'targets,
                };
                let spec = &next.spec;
                // A repetition is a test of its own: it starts from the initial store too.
                if dirty && next.repetition {
                    restore(c, &mut s)?;
                    dirty = false;
                }
                let mut servers = Vec::new();
                // The lab's own store is the lab's to fill (see RunOptions::lab_store).
                opts.lab_store = c.backing.is_some();
                let point = s.measure(None, |obs| {
                    compare::run_measured(c, spec, &mut |spec, t| {
                        runner::run_point(spec, t, &opts, obs)
                    })
                    .map(|(p, cpu)| {
                        servers = cpu;
                        p
                    })
                });
                dirty |= spec.writes();
                if let Ok(p) = &point {
                    points.measured(p);
                    info.server_cpu.push(PointServerCpu {
                        target: c.name.clone(),
                        job: job.name.clone(),
                        point: p.label.clone(),
                        servers,
                    });
                }
                let go_on = s.keep(point)?;
                s.record.compare = Some(info.clone());
                s.save()?;
                if !go_on {
                    break 'targets;
                }
            }
        }
    }
    if dirty && let Some(c) = contenders.iter().find(|c| c.backing.is_some()) {
        restore(c, &mut s)?;
    }
    print_tables(&s, &info);
    s.record.compare = Some(info);
    s.finish(false)
}

/// A lab for one comparison, taken down when dropped (after an error or an
/// interruption too).
struct TemporaryLab {
    dir: std::path::PathBuf,
}

impl TemporaryLab {
    /// This process's temporary lab's state directory.
    fn dir() -> std::path::PathBuf {
        std::env::temp_dir().join(format!("storlab-compare-lab-{}", std::process::id()))
    }

    /// Bring up the lab `cfg` describes in [`TemporaryLab::dir`]; Ctrl-C
    /// during it takes down what was made.
    fn up(cfg: &lab::LabConfig, quiet: bool) -> Result<TemporaryLab, CliError> {
        let dir = cfg.state_dir.clone();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| CliError::failed(format!("cannot create {}: {e}", dir.display())))?;
        let lab = TemporaryLab { dir };
        super::signals::install();
        lab::up_until(cfg, &super::signals::STOP).map_err(|e| match e {
            lab::LabError::BadConfig(_) => CliError::input(format!("lab up: {e}")),
            _ => CliError::failed(format!("lab up: {e}")),
        })?;
        if !quiet {
            eprintln!(
                "storlab: lab up for this comparison (state in {})",
                lab.dir.display()
            );
        }
        Ok(lab)
    }
}

impl Drop for TemporaryLab {
    fn drop(&mut self) {
        match lab::down(&self.dir) {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            Err(e) => eprintln!(
                "storlab: lab down failed: {e} (run `storlab lab down --state-dir {}`)",
                self.dir.display()
            ),
        }
    }
}

/// Reset the lab's backing store to its initial content (the studies' snapshot restore).
fn restore(c: &Contender, s: &mut Session) -> Result<(), CliError> {
    if let Some(path) = &c.backing {
        let bytes = prepare::restore(path)
            .map_err(|e| CliError::failed(format!("restoring the backing store: {e}")))?;
        crate::runner::Observer::note(
            &mut s.progress,
            &format!(
                "restored the backing store ({} written)",
                crate::workload::units::format_size(bytes)
            ),
        );
    }
    Ok(())
}

/// One table per (job, load point), a row per target in run order (repeats
/// as mean ± 95% confidence interval), relative to the baseline: the
/// reports' computation ([`Comparison`]), with the targets' short names.
fn print_tables(s: &Session, info: &CompareInfo) {
    let mut run = s.record.clone();
    run.compare = Some(info.clone());
    let source = |run| Source {
        name: "this comparison".into(),
        run: super::report::name_targets(run),
    };
    let c = match Comparison::new(vec![source(run.clone())], Some(&info.baseline)) {
        Ok(c) => c,
        // The baseline measured nothing (it failed): relative to the first
        // target that did, said so.
        Err(_) => match Comparison::new(vec![source(run)], None) {
            Ok(c) => {
                println!(
                    "\nno results for the baseline {}: figures relative to {}",
                    info.baseline,
                    c.baseline_name()
                );
                c
            }
            Err(_) => return, // nothing measured at all
        },
    };
    print!("{}", text::comparison_tables(&c));
}
