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
use crate::workload::Job;

/// Run `storlab compare`.
pub fn run(args: CompareArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    if !args.runs.is_empty() {
        return super::diff::run_compare(&args);
    }
    let jobs = session::jobs(&args.job)?;
    session::check_outputs(&args.out)?;
    let _temporary = if args.lab {
        let mut cfg = lab::LabConfig::new(TemporaryLab::temp_dir("compare"));
        if let Some(m) = &args.media {
            cfg.media = m.clone();
        }
        cfg.media_file = args.media_file.clone();
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
        .map(|c| c.target.clone())
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
    let store = args.out.record.open()?;
    let mut bench = Bench::new(
        &args.out,
        store.as_ref(),
        argv,
        &contenders,
        lab_state.as_ref(),
        &baseline,
    )?;
    bench.measure(&jobs, &contenders)?;
    let record = bench.record();
    print_tables(&record, &baseline);
    bench.finish().1
}

/// Refuse a baseline that is none of the targets, listing them.
pub(super) fn check_baseline(baseline: &str, contenders: &[Contender]) -> Result<(), CliError> {
    if contenders.iter().any(|c| c.name == baseline) {
        return Ok(());
    }
    let names: Vec<&str> = contenders.iter().map(|c| c.name.as_str()).collect();
    Err(CliError::input(format!(
        "invalid --baseline {baseline:?} (allowed: one of the targets: {})",
        names.join(", ")
    )))
}

/// A comparison being measured: one run (its session) in which jobs run on
/// contenders in turn, the lab's backing store restored between tests, with
/// the servers' CPU around every point.
pub(super) struct Bench<'s> {
    /// The run, saved after every point.
    s: Session<'s>,
    opts: runner::RunOptions<'static>,
    info: CompareInfo,
    repeat: u32,
    /// The lab's media layer, reset with every restore of its store.
    media: Option<lab::media::MediaInfo>,
}

impl<'s> Bench<'s> {
    /// Start the run of a comparison of `contenders` (every target it will
    /// measure), relative to `baseline`, on `lab` when the targets are a lab's.
    pub fn new(
        out: &'s super::OutArgs,
        store: Option<&'s crate::store::Store>,
        argv: Vec<String>,
        contenders: &[Contender],
        lab_state: Option<&lab::LabState>,
        baseline: &str,
    ) -> Result<Bench<'s>, CliError> {
        let mut opts = session::run_options(out);
        let mut s = Session::new(out, store, argv, Vec::new())?;
        let urls: Vec<String> = contenders.iter().map(|c| c.target.to_string()).collect();
        s.record.environment.network = lab_state
            .filter(|_| contenders.iter().any(|c| c.backing.is_some()))
            .map(crate::lab::LabState::network)
            .or_else(|| crate::lab::registry::network_of(&urls));
        // On a lab, the lab's link counters go beside every interval.
        opts.probe = match lab_state {
            Some(l) => session::lab_probe(l),
            None => crate::lab::registry::lab_of(&urls)
                .as_ref()
                .and_then(session::lab_probe),
        };
        let info = CompareInfo {
            baseline: baseline.to_string(),
            targets: contenders
                .iter()
                .map(|c| (c.name.clone(), c.target.to_string()))
                .collect(),
            lab: lab_state.and_then(|l| serde_json::to_value(l).ok()),
            ..CompareInfo::default()
        };
        Ok(Bench {
            s,
            opts,
            info,
            repeat: out.exec.repeat,
            media: lab_state.and_then(|l| l.media.clone()),
        })
    }

    /// Run every job on each of `contenders` in turn (all jobs on one, then
    /// the next), restoring the backing store before a test that follows a
    /// write and once more at the end. Returns whether the run goes on (false:
    /// interrupted, or a point failed; the session holds why).
    pub fn measure(&mut self, jobs: &[Job], contenders: &[Contender]) -> Result<bool, CliError> {
        let s = &mut self.s;
        let mut dirty = false; // the backing store was written since its last restore
        let mut go_on = true;
        'targets: for c in contenders {
            s.set_targets(vec![c.target.to_string()]);
            // Every target starts on the medium as `lab up` left it.
            if c.backing.is_some()
                && let Some(m) = &self.media
            {
                m.reset()
                    .map_err(|e| CliError::failed(format!("resetting the lab's medium: {e}")))?;
            }
            for job in jobs {
                if dirty {
                    restore(c, s, self.media.as_ref())?;
                    dirty = false;
                }
                s.begin_job(job, &job.name)?;
                s.progress.set_job(&format!("{} on {}", job.name, c.name));
                let mut points = super::curve::Points::new(job, self.repeat);
                loop {
                    let next = match points.step(s) {
                        super::curve::Step::Run(n) => n,
                        super::curve::Step::JobDone => break,
                        super::curve::Step::Stop => {
                            go_on = false;
                            break 'targets;
                        }
                    };
                    let spec = &next.spec;
                    // A repetition is a test of its own: it starts from the initial store too.
                    if dirty && next.repetition {
                        restore(c, s, self.media.as_ref())?;
                        dirty = false;
                    }
                    let mut servers = Vec::new();
                    // The lab's own store is the lab's to fill (see RunOptions::lab_store).
                    self.opts.lab_store = c.backing.is_some();
                    let opts = &self.opts;
                    let point = s.measure(None, |obs| {
                        compare::run_measured(c, spec, &mut |spec, t| {
                            runner::run_point(spec, t, opts, obs)
                        })
                        .map(|(p, cpu)| {
                            servers = cpu;
                            p
                        })
                    });
                    dirty |= spec.writes();
                    if let Ok(p) = &point {
                        points.measured(p);
                        self.info.server_cpu.push(PointServerCpu {
                            target: c.name.clone(),
                            job: job.name.clone(),
                            point: p.label.clone(),
                            servers,
                        });
                    }
                    go_on = s.keep(point)?;
                    s.record.compare = Some(self.info.clone());
                    s.save()?;
                    if !go_on {
                        break 'targets;
                    }
                }
            }
        }
        if dirty && let Some(c) = contenders.iter().find(|c| c.backing.is_some()) {
            restore(c, s, self.media.as_ref())?;
        }
        Ok(go_on)
    }

    /// The run so far, with its comparison.
    pub fn record(&self) -> crate::model::RunRecord {
        let mut run = self.s.record.clone();
        run.compare = Some(self.info.clone());
        run
    }

    /// End the run: save and record it, and turn its outcome into an exit
    /// code; gives back the run as it was saved.
    pub fn finish(mut self) -> (crate::model::RunRecord, Result<ExitCode, CliError>) {
        self.s.record.compare = Some(self.info);
        self.s.finish_record(false)
    }
}

/// A lab for one comparison or study, taken down when dropped (after an
/// error or an interruption too), its state directory removed.
pub(super) struct TemporaryLab {
    /// Its state directory (storlab's own, under the temporary directory).
    pub dir: std::path::PathBuf,
}

impl TemporaryLab {
    /// A fresh state directory for a temporary lab of `what` ("compare").
    pub fn temp_dir(what: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("storlab-{what}-lab-{}", std::process::id()))
    }

    /// Bring up the lab `cfg`, whose state directory is a
    /// [`TemporaryLab::temp_dir`]; Ctrl-C during it takes down what was made.
    pub fn up(cfg: &lab::LabConfig, quiet: bool) -> Result<TemporaryLab, CliError> {
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
            eprintln!("storlab: lab up (state in {})", lab.dir.display());
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

/// Reset the lab's backing store to its initial content (the studies' snapshot
/// restore), and its medium to its initial state. The media server says
/// which ranges were written through it since the last restore and only
/// those are rewritten; when it cannot tell (no media layer, passthrough
/// mode, an older server, a change it cannot bound), the whole file is.
fn restore(
    c: &Contender,
    s: &mut Session,
    media: Option<&lab::media::MediaInfo>,
) -> Result<(), CliError> {
    use crate::media::dirty::Written;
    use crate::workload::units::format_size;
    let Some(path) = &c.backing else {
        return Ok(());
    };
    // A take clears the server's map: until this restore is done, a marker
    // says so, and a restore that finds it (the last one failed or was
    // interrupted after its take) rewrites the whole store.
    let mut marker = path.as_os_str().to_owned();
    marker.push(".restoring");
    let marker = std::path::PathBuf::from(marker);
    let unfinished = marker.exists();
    let marked = std::fs::write(&marker, b"a restore of the backing store is in progress\n");
    // The medium first: the restore writes the backing file itself, beside
    // the media, so the medium's state does not see it.
    let written = match media {
        Some(m) => m
            .reset_taking_written()
            .map_err(|e| CliError::failed(format!("resetting the lab's medium: {e}")))?,
        None => Written::Unknown("no media layer: nothing records the writes".into()),
    };
    let written = match (written, marked) {
        (Written::Ranges(_), Err(e)) => Written::Unknown(format!(
            "cannot mark the restore in progress in {}: {e}",
            marker.display()
        )),
        (Written::Ranges(_), Ok(())) if unfinished => Written::Unknown(format!(
            "an earlier restore did not finish ({} was left behind)",
            marker.display()
        )),
        (w, _) => w,
    };
    let failed = |e| CliError::failed(format!("restoring the backing store: {e}"));
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let note = match written {
        Written::Ranges(ranges) => {
            let bytes = prepare::restore_ranges(path, &ranges).map_err(failed)?;
            format!(
                "restored the backing store: {} of {} rewritten, the ranges written since the last restore",
                format_size(bytes),
                format_size(size)
            )
        }
        Written::Unknown(why) => {
            let bytes = prepare::restore(path).map_err(failed)?;
            format!(
                "restored the backing store: all {} rewritten (the written ranges are not known: {why})",
                format_size(bytes)
            )
        }
    };
    let _ = std::fs::remove_file(&marker);
    crate::runner::Observer::note(&mut s.progress, &note);
    Ok(())
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
