//! `storlab study NAME`: one reference study end to end. For each medium of
//! the study a lab is brought up (with the user's lab options), the study's
//! workloads run on the baseline and its targets through `storlab compare`'s
//! path ([`Bench`]), and the lab comes down whatever happens; then the study's
//! own presentation (src/study/) is printed and written, with the HTML page
//! and every run document, into the output directory.

use super::compare::{Bench, TemporaryLab, check_baseline};
use super::lab::LabUpArgs;
use super::{CliError, ExecArgs, ExitCode, OutArgs, ProfileArg, RecordArgs, session, signals};
use crate::compare::{self, LAB_TARGETS};
use crate::lab::{self, LabConfig};
use crate::study::{self, LabRun, Results, STUDIES, Study};
use crate::workload::catalogue::Catalogue;
use crate::workload::{Job, Profile};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Arguments of `storlab study`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("repeat", |a| a.help("Run every load point N times; tables show the means")))]
pub struct StudyArgs {
    /// The study: its name or number, or `list` (the default: lists them).
    #[arg(default_value = "list")]
    pub name: String,
    /// The study's own durations and sizes (full) or the same shape in seconds (quick).
    #[arg(long, value_enum, default_value = "quick")]
    pub profile: ProfileArg,
    /// Where the report goes (report.txt, report.html, one run JSON per lab
    /// run); created if missing. Default: ./storlab-study-NAME.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The lab target every figure is relative to (= 100); default: the
    /// study's own (`storlab study list` shows it).
    #[arg(long, value_name = "TARGET")]
    pub baseline: Option<String>,
    /// Lab targets beside the baseline, instead of the study's own.
    #[arg(long, value_delimiter = ',', value_name = "T1,T2,...")]
    pub targets: Vec<String>,
    /// How to build each lab (as `storlab lab up`); its `--media` may name
    /// several media (M1,M2,...), one lab run each, instead of the study's own.
    #[command(flatten)]
    pub lab: LabUpArgs,
    /// The results database.
    #[command(flatten)]
    pub record: RecordArgs,
    /// Threads, progress lines and repeats.
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// One part of the study, its jobs resolved.
struct Part {
    jobs: Vec<Job>,
    /// The baseline, then the part's targets.
    targets: Vec<String>,
    every_medium: bool,
}

/// What a study run was asked, checked before anything runs.
struct Plan {
    study: &'static Study,
    profile: Profile,
    parts: Vec<Part>,
    media: Vec<Option<String>>,
    out_dir: PathBuf,
    /// The lab target name every figure is relative to.
    baseline: String,
}

/// Run `storlab study`.
pub fn run(a: StudyArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    if a.name == "list" {
        print!("{}", list_text());
        return Ok(ExitCode::Ok);
    }
    let plan = plan(&a)?;
    std::fs::create_dir_all(&plan.out_dir).map_err(|e| {
        CliError::input(format!(
            "cannot create --out {}: {e}",
            plan.out_dir.display()
        ))
    })?;
    let out = |medium: &Option<String>| OutArgs {
        json: Some(
            plan.out_dir
                .join(format!("run-{}.json", medium.as_deref().unwrap_or("lab"))),
        ),
        csv: None,
        record: a.record.clone(),
        allow_overwrite: false,
        histogram: false,
        exec: a.exec.clone(),
    };
    let store = a.record.open()?;
    signals::install();
    let mut runs = Vec::new();
    let mut outcome: Result<ExitCode, CliError> = Ok(ExitCode::Ok);
    for (i, medium) in plan.media.iter().enumerate() {
        if signals::STOP.load(Ordering::SeqCst) {
            outcome = Ok(ExitCode::Interrupted);
            break;
        }
        let out = out(medium);
        let (run, code) = on_lab(&a, &plan, i, &out, store.as_ref(), argv.clone());
        runs.extend(run);
        outcome = match (outcome, code) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            (Ok(x), Ok(y)) => Ok(worst(x, y)),
        };
        if !matches!(outcome, Ok(ExitCode::Ok)) {
            break;
        }
    }
    report(&plan, &compare::label(&plan.baseline), runs, a.exec.quiet)?;
    outcome
}

/// The worse of two outcomes: interrupted, then failed, then ok.
fn worst(a: ExitCode, b: ExitCode) -> ExitCode {
    let rank = |c: ExitCode| match c {
        ExitCode::Ok => 0,
        ExitCode::BadInput | ExitCode::Failed => 1,
        ExitCode::Interrupted => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// `storlab study list`: each study, what it runs and where.
fn list_text() -> String {
    let mut out = String::new();
    for s in &STUDIES {
        out.push_str(&format!("{}  {:<26} {}\n", s.number, s.name, s.title));
        for p in s.parts {
            out.push_str(&format!(
                "     {}: on {}; {}\n",
                p.workloads.join(", "),
                std::iter::once(s.baseline)
                    .chain(p.targets.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", "),
                if s.media.is_empty() {
                    format!("the lab's medium ({})", lab::media::LAB_DEFAULT_MEDIA)
                } else if p.every_medium {
                    format!("each medium: {}", s.media.join(", "))
                } else {
                    format!("the first medium: {}", s.media[0])
                }
            ));
        }
    }
    out.push_str(
        "\nRun one: storlab study NAME [--profile quick|full] [--out DIR] [lab up options]\n",
    );
    out
}

/// Check the study, its targets, media and workloads before anything runs.
fn plan(a: &StudyArgs) -> Result<Plan, CliError> {
    let study = study::find(&a.name).map_err(CliError::input)?;
    let profile: Profile = a.profile.into();
    let baseline = a
        .baseline
        .clone()
        .unwrap_or_else(|| study.baseline.to_string());
    for (opt, name) in
        std::iter::once(("--baseline", &baseline)).chain(a.targets.iter().map(|t| ("--targets", t)))
    {
        let base = name.split_once('?').map_or(name.as_str(), |(n, _)| n);
        if !LAB_TARGETS.contains(&base) {
            return Err(CliError::input(format!(
                "invalid {opt} {name:?} (allowed: a lab target: {}, with URL options after `?`)",
                LAB_TARGETS.join(", ")
            )));
        }
    }
    // The lab options and media are checked once, before anything runs.
    let cfg = a.lab.config(TemporaryLab::temp_dir("study"))?;
    let asked: Vec<String> = a
        .lab
        .media
        .iter()
        .flat_map(|m| m.split(','))
        .map(|m| m.trim().to_string())
        .collect();
    let media: Vec<Option<String>> = if !asked.is_empty() {
        asked.iter().cloned().map(Some).collect()
    } else if study.media.is_empty() {
        vec![None]
    } else {
        study.media.iter().map(|m| Some(m.to_string())).collect()
    };
    for (i, m) in media.iter().enumerate() {
        if media[..i].contains(m) {
            return Err(CliError::input(format!(
                "invalid --media: {} is named twice",
                m.as_deref().unwrap_or("")
            )));
        }
        on_medium(cfg.clone(), m.as_deref())?;
    }
    let parts = study
        .parts
        .iter()
        .map(|p| {
            let jobs = p
                .workloads
                .iter()
                .map(|w| Catalogue::builtin().resolve(w, profile))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::input(e.to_string()))?
                .concat();
            let mut targets = vec![baseline.clone()];
            let own: Vec<String> = p.targets.iter().map(|t| t.to_string()).collect();
            for t in if a.targets.is_empty() {
                &own
            } else {
                &a.targets
            } {
                if !targets.contains(t) {
                    targets.push(t.clone());
                }
            }
            Ok(Part {
                jobs,
                targets,
                every_medium: p.every_medium,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let jobs: Vec<Job> = parts.iter().flat_map(|p| p.jobs.iter().cloned()).collect();
    session::check_store_fits(
        &jobs,
        cfg.size,
        &format!(
            "give the lab a store that large with --size (and --backing disk --backing-dir DIR \
             when RAM cannot hold it), or run --profile quick (study {})",
            study.name
        ),
    )?;
    Ok(Plan {
        study,
        profile,
        parts,
        media,
        baseline,
        out_dir: a
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("storlab-study-{}", study.name))),
    })
}

/// The lab `cfg` on `medium` (`None`: the lab's default medium): the one
/// place a study's medium reaches the lab. An unknown medium is refused
/// here, naming the media file when one was given, before any lab comes up.
fn on_medium(mut cfg: LabConfig, medium: Option<&str>) -> Result<LabConfig, CliError> {
    if let Some(m) = medium {
        crate::media::presets::resolve(m, cfg.media_file.as_deref())
            .map_err(|e| CliError::input(format!("invalid --media {m:?}: {e}")))?;
        cfg.media = m.to_string();
    }
    Ok(cfg)
}

/// One lab run: bring the lab up on `plan.media[i]`, measure every part
/// that runs on it, take the lab down. Returns the run (when one started)
/// and its outcome.
fn on_lab(
    a: &StudyArgs,
    plan: &Plan,
    i: usize,
    out: &OutArgs,
    store: Option<&crate::store::Store>,
    argv: Vec<String>,
) -> (Option<LabRun>, Result<ExitCode, CliError>) {
    let medium = &plan.media[i];
    let up = || -> Result<(TemporaryLab, lab::LabState), CliError> {
        let cfg = a.lab.config(TemporaryLab::temp_dir(&format!("study{i}")))?;
        let cfg = on_medium(cfg, medium.as_deref())?;
        let lab = TemporaryLab::up(&cfg, a.exec.quiet)?;
        let state = lab::status(&lab.dir)
            .filter(|s| s.targets.is_some())
            .ok_or_else(|| CliError::failed("the study's lab came up without targets"))?;
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
        Err(e) => return (None, Err(CliError::input(e))),
    };
    // A lab name (`fc8`) goes by its label ("FC 8Gb (block)") in the run.
    let baseline = compare::label(&plan.baseline);
    if let Err(e) = check_baseline(&baseline, &contenders) {
        return (None, Err(e));
    }
    let mut bench = match Bench::new(out, store, argv, &contenders, Some(&state), &baseline) {
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
        None => bench.finish(),
    };
    let run = LabRun {
        medium: medium.clone(),
        run,
    };
    (Some(run), code)
}

/// Print the study's presentation and write it, as text and HTML, into the
/// output directory.
fn report(plan: &Plan, baseline: &str, runs: Vec<LabRun>, quiet: bool) -> Result<(), CliError> {
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
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
            .map(|()| path)
    };
    write("report.txt", text.as_bytes())?;
    let html = write("report.html", study::page::render(&r, &sections).as_bytes())?;
    if !quiet {
        eprintln!("storlab: study report in {}", html.display());
    }
    Ok(())
}
