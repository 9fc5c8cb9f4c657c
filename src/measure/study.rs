//! A study as a scripted set of compares: for each lab the study needs (one
//! per medium), bring the lab up, measure every part that runs on it on the
//! baseline and the part's targets ([`Bench`]), take the lab down whatever
//! happens; then hand the run documents to the study's own presentation
//! (`crate::study`) and write it, as text and HTML, into the output directory.

use super::{Bench, Error, Outcome, Outputs, Runner, TemporaryLab, signals};
use crate::compare;
use crate::lab::{self, LabConfig, MediaChoice};
use crate::media::presets;
use crate::study::{self, LabRun, Results, Study};
use crate::workload::{Job, Profile};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// One part of the study, its jobs resolved.
pub struct Part {
    /// Its jobs, in order.
    pub jobs: Vec<Job>,
    /// The baseline, then the part's targets (lab target names).
    pub targets: Vec<String>,
    /// Runs on every medium, or only on the first.
    pub every_medium: bool,
}

/// What a study run was asked, checked before anything runs.
pub struct Plan {
    /// The study.
    pub study: &'static Study,
    /// Its profile.
    pub profile: Profile,
    /// What it measures.
    pub parts: Vec<Part>,
    /// One lab run per medium: its name as the study or `--media` gave it
    /// (`None`: the lab's default medium), and what it serves the store on,
    /// checked once ([`on_medium`]).
    pub media: Vec<(Option<String>, MediaChoice)>,
    /// Where its report and run documents go.
    pub out_dir: PathBuf,
    /// The lab target name every figure is relative to.
    pub baseline: String,
    /// How each lab is built (its state directory and medium are the
    /// study's own: each lab's is replaced).
    pub lab: LabConfig,
    /// No progress lines.
    pub quiet: bool,
}

/// What `medium` (`None`: the lab's default medium) serves the store on,
/// with the lab options' media file: the one place a study's medium is
/// checked. An unknown medium is refused here, naming the media file when
/// one was given, before any lab comes up; so is `none`: a study measures
/// on a medium.
pub fn on_medium(medium: Option<&str>, file: Option<&Path>) -> Result<MediaChoice, Error> {
    let choice = MediaChoice::from_options(medium, file).map_err(Error::input)?;
    if choice == MediaChoice::None {
        return Err(Error::input(format!(
            "invalid --media \"none\": a study measures on a medium (allowed: {}, {})",
            presets::preset_names(file).join(", "),
            presets::FIXED_ALLOWED
        )));
    }
    Ok(choice)
}

/// Run the study `plan`, each lab's points on a runner from `runner`,
/// recorded in `store` when given; prints and writes its report whatever
/// happened, and gives the worst outcome of its lab runs.
pub fn run(
    plan: &Plan,
    store: Option<&crate::store::Store>,
    argv: Vec<String>,
    runner: &dyn Fn() -> Runner,
) -> Result<Outcome, Error> {
    let out = |medium: &Option<String>| Outputs {
        json: Some(
            plan.out_dir
                .join(format!("run-{}.json", medium.as_deref().unwrap_or("lab"))),
        ),
        csv: None,
        quiet: plan.quiet,
    };
    signals::install();
    let mut runs = Vec::new();
    let mut outcome: Result<Outcome, Error> = Ok(Outcome::Ok);
    for (i, (medium, _)) in plan.media.iter().enumerate() {
        if signals::STOP.load(Ordering::SeqCst) {
            outcome = Ok(Outcome::Interrupted);
            break;
        }
        let (run, code) = on_lab(plan, i, out(medium), store, argv.clone(), runner());
        runs.extend(run);
        outcome = match (outcome, code) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(x), Ok(y)) => Ok(x.worst(y)),
        };
        if !matches!(outcome, Ok(Outcome::Ok)) {
            break;
        }
    }
    report(plan, &compare::label(&plan.baseline), runs, plan.quiet)?;
    outcome
}

/// One lab run: bring the lab up on `plan.media[i]`, measure every part
/// that runs on it, take the lab down. Returns the run (when one started)
/// and its outcome.
fn on_lab(
    plan: &Plan,
    i: usize,
    out: Outputs,
    store: Option<&crate::store::Store>,
    argv: Vec<String>,
    runner: Runner,
) -> (Option<LabRun>, Result<Outcome, Error>) {
    let (medium, choice) = &plan.media[i];
    let up = || -> Result<(TemporaryLab, lab::LabState), Error> {
        let mut cfg = plan.lab.clone();
        cfg.state_dir = TemporaryLab::temp_dir(&format!("study{i}"));
        cfg.media = choice.clone();
        let lab = TemporaryLab::up(&cfg, plan.quiet)?;
        let state = lab::status(&lab.dir)
            .filter(|s| s.targets.is_some())
            .ok_or_else(|| Error::failed("the study's lab came up without targets"))?;
        Ok((lab, state))
    };
    let (_lab, state) = match up() {
        Ok(x) => x,
        Err(e) => return (None, Err(e)),
    };
    let parts: Vec<&Part> = plan
        .parts
        .iter()
        .filter(|p| i == 0 || p.every_medium)
        .collect();
    let mut names: Vec<String> = Vec::new();
    for t in parts.iter().flat_map(|p| &p.targets) {
        if !names.contains(t) {
            names.push(t.clone());
        }
    }
    let contenders = match compare::resolve(&names, Some(&state)) {
        Ok(c) => c,
        Err(e) => return (None, Err(Error::input(e))),
    };
    // A lab name (`fc8`) goes by its label ("FC 8Gb (block)") in the run.
    let baseline = compare::label(&plan.baseline);
    if let Err(e) = check_baseline(&baseline, &contenders) {
        return (None, Err(e));
    }
    let mut bench = match Bench::compare(
        out,
        store,
        argv,
        &contenders,
        Some(&state),
        &baseline,
        runner,
    ) {
        Ok(b) => b,
        Err(e) => return (None, Err(e)),
    };
    let mut failure = None;
    for p in parts {
        let cs: Vec<_> = contenders
            .iter()
            .filter(|c| p.targets.iter().any(|t| compare::label(t) == c.name))
            .cloned()
            .collect();
        match bench.measure(&p.jobs, &cs) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let (run, code) = match failure {
        Some(e) => (bench.record(), Err(e)),
        None => bench.finish(|_| {}),
    };
    let run = LabRun {
        medium: medium.clone(),
        run,
    };
    (Some(run), code)
}

/// Print the study's presentation and write it, as text and HTML, into the
/// output directory.
fn report(plan: &Plan, baseline: &str, runs: Vec<LabRun>, quiet: bool) -> Result<(), Error> {
    let r = Results {
        study: plan.study,
        baseline: baseline.to_string(),
        profile: plan.profile,
        runs,
    };
    let sections = (plan.study.render)(&r);
    let text = study::text(&r, &sections);
    print!("{text}");
    let write = |name: &str, bytes: &[u8]| {
        let path = plan.out_dir.join(name);
        crate::model::write_atomic(&path, bytes)
            .map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))
            .map(|()| path)
    };
    write("report.txt", text.as_bytes())?;
    let html = write("report.html", study::page::render(&r, &sections).as_bytes())?;
    if !quiet {
        eprintln!("storlab: study report in {}", html.display());
    }
    Ok(())
}

/// Refuse a baseline that is none of the targets, listing them.
pub fn check_baseline(baseline: &str, contenders: &[compare::Contender]) -> Result<(), Error> {
    if contenders.iter().any(|c| c.name == baseline) {
        return Ok(());
    }
    let names: Vec<&str> = contenders.iter().map(|c| c.name.as_str()).collect();
    Err(Error::input(format!(
        "invalid --baseline {baseline:?} (allowed: one of the targets: {})",
        names.join(", ")
    )))
}
