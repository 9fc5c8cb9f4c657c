//! The five reference studies (../shared/seeds, WORKLOADS.md) as one command
//! each, presented as the study presented its results.
//!
//! A study is a small declaration ([`Study`]): the labs it brings up (each
//! a medium and a link, one lab run each), which catalogued workloads run
//! on which of their targets, its findings as checks on the runs
//! ([`findings`]), and one renderer that turns the measured runs into the
//! study's own tables and figures ([`Section`]s). The CLI (`storlab study`)
//! brings the labs up and measures through `storlab compare`'s path; this
//! module only describes and renders, so every renderer is a pure function
//! of run documents and can be tested on synthetic ones. Text and HTML
//! ([`page`]) are two views of the same sections.

mod catalogue;
mod dss;
pub mod figures;
pub mod findings;
mod freenas;
pub mod page;
mod ramp;
#[cfg(test)]
mod testing;
mod vsphere;
mod zfs;

pub use catalogue::{STUDIES, find};

use crate::model::RunRecord;
use crate::report::format::{TextTable, aligned};
use crate::report::relative::{Comparison, Source};
use crate::workload::Profile;
use std::fmt::Write;

/// The lab's block baseline in the Fibre Channel role at 8 Gb FC (an
/// O_DIRECT loop device over the store on its emulated medium, capped at
/// 8 Gb FC's payload rate), shown as "FC 8Gb (block)": the baseline of the
/// studies that measured no FC of their own (002, 004) and of 001's 8 Gb SAN.
pub const DEFAULT_BASELINE: &str = "fc8";

/// One part of a study's lab run: workloads run on targets.
#[derive(Debug)]
pub struct Part {
    /// Catalogued workloads (`storlab workloads`), run in this order.
    pub workloads: &'static [&'static str],
    /// Lab targets, in the order they run (the study's baseline among them
    /// in the lab run that measures it).
    pub targets: &'static [&'static str],
}

/// One lab a study brings up: its medium and link, and what runs on it.
#[derive(Debug)]
pub struct Lab {
    /// How its run is named: its run document (`run-NAME.json`), and the
    /// lab-run column of tables.
    pub name: &'static str,
    /// Its medium preset (`None`: the lab's default, `array-15k`).
    pub medium: Option<&'static str>,
    /// Its shaped link between the clients and the servers (`None`:
    /// loopback, no link).
    pub link: Option<&'static str>,
    /// Scale 1:k: the link and the FC caps run `scale` times slower than
    /// the study's hardware, and its throughput figures are shown `scale`
    /// times larger, said so (a study whose links are faster than this
    /// machine can drive); 1: as the study's.
    pub scale: u32,
    /// Added to the names of the targets whose I/O crosses the link
    /// ("nfs3 1GbE"), so that targets of several lab runs stand side by
    /// side in one table; `None`: the targets keep their names.
    pub suffix: Option<&'static str>,
    /// What runs on it, in order.
    pub parts: &'static [Part],
}

/// A reference study as storlab runs it.
#[derive(Debug)]
pub struct Study {
    /// Its command name (`storlab study NAME`).
    pub name: &'static str,
    /// Its number in ../shared/seeds ("000").
    pub number: &'static str,
    /// What it was.
    pub title: &'static str,
    /// The lab target its figures are relative to (= 100): the FC link the
    /// study itself compared against (`fc4`, `fc8`), or [`DEFAULT_BASELINE`].
    pub baseline: &'static str,
    /// Its published finding, in a sentence or two (docs/studies.md has more).
    pub finding: &'static str,
    /// Its labs, one lab run each, in order.
    pub labs: &'static [Lab],
    /// Its presentation: the sections of its report.
    pub render: fn(&Results) -> Vec<Section>,
    /// Its quantitative findings checked against the runs ([`findings`]).
    pub findings: fn(&Results) -> Vec<findings::Check>,
}

impl Study {
    /// Every workload the study runs, each once, in order.
    pub fn workloads(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for w in self
            .labs
            .iter()
            .flat_map(|l| l.parts)
            .flat_map(|p| p.workloads)
        {
            if !out.contains(w) {
                out.push(w);
            }
        }
        out
    }
}

/// One lab run of a study: the lab it ran on and its run document.
#[derive(Clone, Debug)]
pub struct LabRun {
    /// The lab's name ([`Lab::name`]).
    pub lab: String,
    /// The medium preset (`None`: the lab's default).
    pub medium: Option<String>,
    /// Its scale ([`Lab::scale`]; 1: unscaled).
    pub scale: u32,
    /// The run (a `storlab compare` run document).
    pub run: RunRecord,
}

impl LabRun {
    /// How the run is named in tables: its lab's name.
    pub fn name(&self) -> &str {
        &self.lab
    }
}

/// What a study measured: one run per lab.
#[derive(Clone, Debug)]
pub struct Results<'a> {
    /// The study.
    pub study: &'a Study,
    /// The baseline target's name.
    pub baseline: String,
    /// The profile it ran.
    pub profile: Profile,
    /// One run per lab, in the order they ran.
    pub runs: Vec<LabRun>,
}

impl Results<'_> {
    /// Every lab run lined up together by (job, point) and target, relative
    /// to the baseline (for a study whose labs' targets have distinct
    /// names); `None` when nothing was measured.
    pub fn combined(&self) -> Option<Comparison> {
        let sources: Vec<Source> = self
            .runs
            .iter()
            .map(|lr| Source {
                name: lr.name().to_string(),
                run: lr.run.clone().with_target_names(),
            })
            .collect();
        Comparison::new(sources.clone(), Some(&self.baseline))
            .or_else(|_| Comparison::new(sources, None))
            .ok()
    }

    /// Lab run `i` lined up by (job, point) and target (by short name),
    /// relative to the baseline, or to the first target that measured when
    /// the baseline has nothing; `None` when the run measured nothing.
    pub fn comparison(&self, i: usize) -> Option<Comparison> {
        let lr = self.runs.get(i)?;
        let sources = || {
            vec![Source {
                name: lr.name().to_string(),
                run: lr.run.clone().with_target_names(),
            }]
        };
        Comparison::new(sources(), Some(&self.baseline))
            .or_else(|_| Comparison::new(sources(), None))
            .ok()
    }
}

/// One section of a study's report: a heading, what it shows, its tables
/// and its charts (inline SVG).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// What the section shows and how to read it.
    pub note: String,
    /// Tables, each printed in the text output and the HTML.
    pub tables: Vec<TextTable>,
    /// Charts (HTML only).
    pub charts: Vec<String>,
}

/// The section that sets each of the study's findings beside storlab's
/// figure from these runs, with its verdict (docs/studies.md records it).
pub fn findings_section(r: &Results) -> Section {
    let checks = findings::evaluate(r);
    Section {
        title: "The study's findings beside storlab's".into(),
        note: format!(
            "Each quantitative finding of study {} (../shared/FINDINGS.md), the figure these \
             runs measured for it, and its verdict; where a figure differs, the bound storlab \
             named for its points.",
            r.study.number
        ),
        tables: vec![findings::table(&checks)],
        charts: Vec::new(),
    }
}

/// The one section of a study whose runs measured nothing.
pub fn nothing_measured() -> Section {
    Section {
        title: "Nothing measured".into(),
        note: "No load point completed (see the error above); the run documents in the output \
               directory hold whatever was recorded."
            .into(),
        ..Section::default()
    }
}

/// The study's report as text: a header, then each section's tables.
pub fn text(r: &Results, sections: &[Section]) -> String {
    let s = r.study;
    let mut out = format!("study {} ({}): {}\n", s.number, s.name, s.title);
    let _ = writeln!(out, "published: {}", s.finding);
    let _ = writeln!(out, "{}", lab_line(r));
    for sec in sections {
        let _ = write!(out, "\n== {}\n", sec.title);
        if !sec.note.is_empty() {
            let _ = writeln!(out, "{}", sec.note);
        }
        for t in &sec.tables {
            let _ = write!(out, "\n{}\n", t.title);
            out.push_str(&aligned(&t.head, &t.rows, "  ", |i| i == 0));
            if !t.note.is_empty() {
                let _ = writeln!(out, "  ({})", t.note);
            }
        }
    }
    out
}

/// One line saying what ran: profile, baseline, each lab run with its
/// medium and link (and its scale), and whether any run failed or was
/// interrupted.
pub fn lab_line(r: &Results) -> String {
    let runs: Vec<String> = r
        .runs
        .iter()
        .map(|lr| {
            let on = lr
                .run
                .environment
                .network
                .as_ref()
                .map(|n| n.describe())
                .or_else(|| lr.medium.as_ref().map(|m| format!("medium {m}")))
                .unwrap_or_else(|| "no lab recorded".into());
            let scale = if lr.scale > 1 {
                format!(", scaled 1:{}", lr.scale)
            } else {
                String::new()
            };
            format!("{} ({on}{scale})", lr.name())
        })
        .collect();
    let mut line = format!(
        "storlab: {} profile, baseline {} = 100, lab runs: {}",
        format!("{:?}", r.profile).to_lowercase(),
        r.baseline,
        if runs.is_empty() {
            "none".to_string()
        } else {
            runs.join(", ")
        }
    );
    for lr in &r.runs {
        if let Some(e) = &lr.run.error {
            let _ = write!(line, "; {} failed: {e}", lr.name());
        } else if lr.run.interrupted {
            let _ = write!(line, "; {} was interrupted", lr.name());
        }
    }
    line
}
