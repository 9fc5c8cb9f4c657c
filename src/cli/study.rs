//! `storlab study NAME`: one reference study end to end. The arguments are
//! checked and turned into a [`Plan`] here; the study's labs, its compares
//! and its report are `crate::measure::study`'s.

use super::lab::LabUpArgs;
use super::{CliError, ExecArgs, ExitCode, ProfileArg, RecordArgs, session};
use crate::compare::LAB_TARGETS;
use crate::lab::{self, MediaChoice};
use crate::measure::study::{Part, Plan, PlanLab, on_medium, scaled_link};
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
    /// Serve a live page of the study on ADDR (PORT on 127.0.0.1, or a
    /// loopback IP:PORT).
    #[arg(long, value_name = "ADDR")]
    pub web: Option<String>,
}

/// Run `storlab study`.
pub fn run(a: StudyArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    if a.name == "list" {
        print!("{}", list_text());
        return Ok(ExitCode::Ok);
    }
    let live = session::live_at(a.web.as_deref(), None, a.exec.quiet, "storlab study")?;
    let mut plan = plan(&a)?;
    plan.live = live;
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

/// `storlab study list`: each study, its labs and what runs on each.
fn list_text() -> String {
    let mut out = String::new();
    for s in &STUDIES {
        out.push_str(&format!(
            "{}  {:<26} {} (baseline {})\n",
            s.number, s.name, s.title, s.baseline
        ));
        for l in s.labs {
            let scale = if l.scale > 1 {
                format!(", scaled 1:{}", l.scale)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "     lab {}: medium {}, {}{scale}\n",
                l.name,
                l.medium.unwrap_or(lab::media::LAB_DEFAULT_MEDIA),
                l.link
                    .map_or("loopback".to_string(), |k| format!("link {k}")),
            ));
            for p in l.parts {
                out.push_str(&format!(
                    "       {} on {}\n",
                    p.workloads.join(", "),
                    p.targets.join(", ")
                ));
            }
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
    // (each lab's medium is the study's own unless --media names others).
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
    for (i, m) in asked.iter().enumerate() {
        if asked[..i].contains(m) {
            return Err(CliError::input(format!(
                "invalid --media: {m} is named twice"
            )));
        }
    }
    let resolve = |workloads: &[&str]| {
        workloads
            .iter()
            .map(|w| Catalogue::builtin().resolve(w, profile))
            .collect::<Result<Vec<_>, _>>()
            .map(|j| j.concat())
            .map_err(|e| CliError::input(e.to_string()))
    };
    let mut labs: Vec<PlanLab> = Vec::new();
    for l in study.labs {
        // --media M: every lab on M; M1,M2: every lab once on each.
        let media: Vec<Option<String>> = if asked.is_empty() {
            vec![l.medium.map(String::from)]
        } else {
            asked.iter().cloned().map(Some).collect()
        };
        for m in &media {
            let name = match (asked.len() > 1, m) {
                (true, Some(m)) => format!("{}-{m}", l.name),
                _ => l.name.to_string(),
            };
            // The user's --link wins over the lab's own.
            let link = match (&cfg.link, l.link) {
                (Some(_), _) | (None, None) => None,
                (None, Some(k)) => Some(
                    lab::Link::parse(k)
                        .map_err(|e| CliError::input(format!("lab {}: link {k}: {e}", l.name)))?,
                ),
            };
            let link = match (&link, &cfg.link) {
                (Some(k), _) | (None, Some(k)) => Some(scaled_link(k, l.scale)?),
                (None, None) => None,
            };
            let mut parts = Vec::new();
            for p in l.parts {
                let mut targets: Vec<String> = if a.targets.is_empty() {
                    p.targets.iter().map(|t| t.to_string()).collect()
                } else {
                    a.targets.clone()
                };
                // --baseline B stands where the study's own baseline ran.
                if a.baseline.is_some() {
                    for t in &mut targets {
                        if *t == study.baseline {
                            *t = baseline.clone();
                        }
                    }
                }
                parts.push(Part {
                    jobs: resolve(p.workloads)?,
                    targets,
                });
            }
            // A lab with a link serves in its storage namespace, unless the
            // user's --net says otherwise (lab up then names the conflict).
            let net = match (a.lab.net_given(), &link) {
                (Some(n), _) => n,
                (None, Some(_)) => lab::NetMode::Netns,
                (None, None) => cfg.net,
            };
            labs.push(PlanLab {
                name,
                medium: m.clone(),
                net,
                choice: on_medium(m.as_deref(), a.lab.media_file())?,
                link,
                scale: l.scale,
                suffix: l.suffix.map(String::from),
                parts,
            });
        }
    }
    // With --targets, the baseline runs on the first lab too.
    if !a.targets.is_empty()
        && let Some(p) = labs.first_mut().and_then(|l| l.parts.first_mut())
        && !p.targets.contains(&baseline)
    {
        p.targets.insert(0, baseline.clone());
    }
    if !labs
        .iter()
        .flat_map(|l| &l.parts)
        .any(|p| p.targets.contains(&baseline))
    {
        return Err(CliError::input(format!(
            "invalid --baseline {baseline:?}: no lab of study {} runs it (add it with --targets)",
            study.name
        )));
    }
    let jobs: Vec<Job> = labs
        .iter()
        .flat_map(|l| &l.parts)
        .flat_map(|p| p.jobs.iter().cloned())
        .collect();
    session::check_store_fits(
        &jobs,
        cfg.size,
        &format!(
            "give the lab a store that large with --size (and --backing disk --backing-dir DIR \
             when RAM cannot hold it){} (study {})",
            if profile == Profile::Full {
                ", or run --profile quick"
            } else {
                ""
            },
            study.name
        ),
    )?;
    Ok(Plan {
        study,
        profile,
        labs,
        baseline,
        lab: cfg,
        quiet: a.exec.quiet,
        live: None,
        out_dir: a
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("storlab-study-{}", study.name))),
    })
}
