//! A study as a scripted set of compares: for each lab the study needs (a
//! medium and a link each), bring the lab up, measure every part that runs
//! on it on the part's targets ([`Bench`]), take the lab down whatever
//! happens; then hand the run documents to the study's own presentation
//! (`crate::study`) and write it, as text and HTML, into the output directory.

use super::{Bench, Error, Outcome, Outputs, Runner, TemporaryLab, signals};
use crate::compare;
use crate::lab::{self, LabConfig, Link, MediaChoice};
use crate::media::presets;
use crate::study::{self, LabRun, Results, Study};
use crate::workload::{Job, Profile};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// One part of a lab run, its jobs resolved.
pub struct Part {
    /// Its jobs, in order.
    pub jobs: Vec<Job>,
    /// Its lab targets, in order (with URL options after `?`).
    pub targets: Vec<String>,
}

/// One lab of the study as it will be brought up.
pub struct PlanLab {
    /// Its name: its run document is `run-NAME.json`.
    pub name: String,
    /// Its medium as the study or `--media` gave it (`None`: the lab's
    /// default), and what it serves the store on, checked once
    /// ([`on_medium`]).
    pub medium: Option<String>,
    /// What the medium is, checked.
    pub choice: MediaChoice,
    /// Its shaped link, already scaled (`None`: the lab options' own).
    pub link: Option<Link>,
    /// Where its servers listen (in the storage namespace once it has a link).
    pub net: lab::NetMode,
    /// Its scale 1:k (1: none): the lab targets' FC caps k times slower.
    pub scale: u32,
    /// Added to the names of the targets that cross its link.
    pub suffix: Option<String>,
    /// What runs on it.
    pub parts: Vec<Part>,
}

/// What a study run was asked, checked before anything runs.
pub struct Plan {
    /// The study.
    pub study: &'static Study,
    /// Its profile.
    pub profile: Profile,
    /// One lab run each, in order.
    pub labs: Vec<PlanLab>,
    /// Where its report and run documents go.
    pub out_dir: PathBuf,
    /// The lab target name every figure is relative to.
    pub baseline: String,
    /// How each lab is built (its state directory, medium and link are the
    /// study's own: each lab's is replaced).
    pub lab: LabConfig,
    /// No progress lines.
    pub quiet: bool,
    /// The live page (`--web`), one for every lab of the study.
    pub live: Option<crate::report::live::Live>,
}

/// `link` run `scale` times slower: the rate a study scaled 1:k shapes.
pub fn scaled_link(link: &Link, scale: u32) -> Result<Link, Error> {
    if scale <= 1 {
        return Ok(link.clone());
    }
    let mut l = Link::parse(&format!("{}bit", link.rate_bps / u64::from(scale)))
        .map_err(|e| Error::input(format!("scaling link {} 1:{scale}: {e}", link.name)))?;
    l.name = format!("{}/{scale}", link.name);
    Ok(l)
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
    let out = |name: &str| Outputs {
        json: Some(plan.out_dir.join(format!("run-{name}.json"))),
        csv: None,
        quiet: plan.quiet,
        live: plan.live.clone(),
    };
    signals::install();
    let mut runs = Vec::new();
    let mut outcome: Result<Outcome, Error> = Ok(Outcome::Ok);
    for (i, l) in plan.labs.iter().enumerate() {
        if signals::STOP.load(Ordering::SeqCst) {
            outcome = Ok(Outcome::Interrupted);
            break;
        }
        let (run, code) = on_lab(plan, i, out(&l.name), store, argv.clone(), runner());
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

/// One lab run: bring up the lab `plan.labs[i]`, measure every part that
/// runs on it, take the lab down. Returns the run (when one started) and its
/// outcome.
fn on_lab(
    plan: &Plan,
    i: usize,
    out: Outputs,
    store: Option<&crate::store::Store>,
    argv: Vec<String>,
    runner: Runner,
) -> (Option<LabRun>, Result<Outcome, Error>) {
    let l = &plan.labs[i];
    let up = || -> Result<(TemporaryLab, lab::LabState), Error> {
        let mut cfg = plan.lab.clone();
        cfg.state_dir = TemporaryLab::temp_dir(&format!("study{i}"));
        cfg.media = l.choice.clone();
        if l.link.is_some() {
            cfg.link = l.link.clone();
        }
        cfg.net = l.net;
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
    // Each part's targets as contenders, named as the study's tables name
    // them: a scaled FC target by the link it stands for, a target that
    // crosses the lab's link with the lab's suffix.
    let mut contenders: Vec<compare::Contender> = Vec::new();
    let mut parts: Vec<(&Part, Vec<compare::Contender>)> = Vec::new();
    for p in &l.parts {
        let mut cs = Vec::new();
        for t in &p.targets {
            let c = match contender(t, l, &state) {
                Ok(c) => c,
                Err(e) => return (None, Err(e)),
            };
            if !contenders.iter().any(|x| x.name == c.name) {
                contenders.push(c.clone());
            }
            cs.push(c);
        }
        parts.push((p, cs));
    }
    // The study's baseline where this lab measures it, else its first target.
    let baseline = compare::label(&plan.baseline);
    let baseline = if contenders.iter().any(|c| c.name == baseline) {
        baseline
    } else {
        contenders[0].name.clone()
    };
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
    for (p, cs) in parts {
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
        lab: l.name.clone(),
        medium: l.medium.clone(),
        scale: l.scale,
        run,
    };
    (Some(run), code)
}

/// The lab target `entry` (`nfs3`, `nfs3?stable=file`) of lab `l` as a
/// contender named as the study's tables name it.
fn contender(entry: &str, l: &PlanLab, state: &lab::LabState) -> Result<compare::Contender, Error> {
    let (name, options) = match entry.split_once('?') {
        Some((n, o)) => (n, Some(o)),
        None => (entry, None),
    };
    let t = lab::LabTarget::parse(name).map_err(Error::input)?;
    let run_as = t.scaled(l.scale).ok_or_else(|| {
        Error::input(format!(
            "lab {}: target {name} has no lab target {} times slower to stand for it scaled 1:{}",
            l.name, l.scale, l.scale
        ))
    })?;
    let resolved = match options {
        Some(o) => format!("{}?{o}", run_as.name()),
        None => run_as.name().to_string(),
    };
    let mut c = compare::resolve(&[resolved], Some(state))
        .map_err(Error::input)?
        .remove(0);
    // The name the study gives it: its own label (not the slower link's),
    // with its options, and the lab's suffix where it crosses the link.
    c.name = match options {
        Some(o) => format!("{}?{o}", t.label()),
        None => t.label().to_string(),
    };
    if let Some(sfx) = &l.suffix
        && t.server().is_some()
    {
        c.name = format!("{} {sfx}", c.name);
    }
    Ok(c)
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
    let mut sections = (plan.study.render)(&r);
    sections.push(study::findings_section(&r));
    let text = study::text(&r, &sections);
    print!("{text}");
    let write = |name: &str, bytes: &[u8]| {
        let path = plan.out_dir.join(name);
        crate::model::write_atomic(&path, bytes)
            .map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))
            .map(|()| path)
    };
    write("report.txt", text.as_bytes())?;
    let checks = study::findings::evaluate(&r);
    let json = serde_json::json!({"study": plan.study.number, "name": plan.study.name, "findings": checks});
    write("findings.json", format!("{json:#}\n").as_bytes())?;
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
