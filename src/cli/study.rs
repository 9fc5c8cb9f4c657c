//! `storlab study NAME`: one reference study end to end. The arguments are
//! checked and turned into a [`Plan`] here; the study's labs, its compares
//! and its report are `crate::measure::study`'s.

use super::lab::LabUpArgs;
use super::{CliError, ExecArgs, ExitCode, ProfileArg, RecordArgs, session};
use crate::compare::LAB_TARGETS;
use crate::lab::{self, MediaChoice};
use crate::measure::study::{Part, Plan, on_medium};
use crate::measure::{Runner, TemporaryLab};
use crate::study::{self, STUDIES};
use crate::workload::catalogue::Catalogue;
use crate::workload::{Job, Profile};
use std::path::PathBuf;

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
    let store = a.record.open()?;
    let exec = a.exec.clone();
    let runner = move || Runner {
        opts: session::run_options(&exec, false),
        fleet: None,
        repeat: exec.repeat,
    };
    let outcome = crate::measure::study::run(&plan, store.as_ref(), argv, &runner)?;
    Ok(outcome.into())
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
    // The lab options and media are checked once, before anything runs
    // (each lab's medium is one of the study's media, below).
    let cfg = a
        .lab
        .config_on(TemporaryLab::temp_dir("study"), MediaChoice::lab_default())?;
    let asked: Vec<String> = a
        .lab
        .media
        .iter()
        .flat_map(|m| m.split(','))
        .map(|m| m.trim().to_string())
        .collect();
    let names: Vec<Option<String>> = if !asked.is_empty() {
        asked.iter().cloned().map(Some).collect()
    } else if study.media.is_empty() {
        vec![None]
    } else {
        study.media.iter().map(|m| Some(m.to_string())).collect()
    };
    let mut media = Vec::new();
    for (i, m) in names.iter().enumerate() {
        if names[..i].contains(m) {
            return Err(CliError::input(format!(
                "invalid --media: {} is named twice",
                m.as_deref().unwrap_or("")
            )));
        }
        media.push((m.clone(), on_medium(m.as_deref(), a.lab.media_file())?));
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
        lab: cfg,
        quiet: a.exec.quiet,
        out_dir: a
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("storlab-study-{}", study.name))),
    })
}
