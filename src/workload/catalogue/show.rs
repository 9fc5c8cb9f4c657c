//! The catalogue as text: the `storlab workloads` listing and the
//! `storlab workloads show NAME` page, every value beside where it comes from.

use super::super::units::{format_duration, format_size};
use super::super::{BlockSizes, Content, Group, Job, Profile, Rate, Spec, SyncMode};
use super::{Catalogue, Entry};
use std::fmt::Write as _;
use std::path::Path;

/// The fields `show` prints for each group, in order.
const GROUP_FIELDS: [&str; 11] = [
    "vms",
    "numjobs",
    "disks",
    "bs",
    "rwmixread",
    "percentage_random",
    "random_distribution",
    "thinktime",
    "iodepth",
    "rate",
    "blockalign",
];
/// The fields `show` prints for each load point, in order.
const POINT_FIELDS: [&str; 11] = [
    "size",
    "offset",
    "ramp_time",
    "runtime",
    "io_size",
    "interval",
    "direct",
    "sync",
    "content",
    "seed",
    "steadystate",
];

/// Every field `show` prints: the keys a `source` note may be given for.
pub(super) fn fields() -> impl Iterator<Item = &'static str> {
    GROUP_FIELDS.into_iter().chain(POINT_FIELDS)
}

/// Where a workload comes from, for the listing: `study NNN`, or
/// `storlab's own` for the variants no study ran (`study = "storlab"`).
fn study_label(study: &str) -> String {
    match study {
        "storlab" => "storlab's own".into(),
        s => format!("study {s}"),
    }
}

fn bs_text(bs: &BlockSizes) -> String {
    match bs.0.as_slice() {
        [(size, _)] => format_size(*size),
        mix => mix
            .iter()
            .map(|(s, w)| format!("{}/{w}", format_size(*s)))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// A group's values as `show` prints them, in [`GROUP_FIELDS`] order.
fn group_values(g: &Group) -> [String; 11] {
    let a = &g.access;
    let rate = match a.rate {
        None => "none".to_string(),
        Some(Rate::Iops(n)) => format!("{n} IOPS"),
        Some(Rate::Bytes(b)) => format!("{}/s", format_size(b)),
    };
    [
        g.vms.to_string(),
        g.workers_per_vm.to_string(),
        g.disks_per_vm.to_string(),
        bs_text(&a.bs),
        format!("{}%", a.read_pct),
        format!("{}%", a.random_pct),
        a.distribution.to_string(),
        match a.think {
            None => "none".to_string(),
            Some(t) if t.spin.is_zero() => {
                format!("{} after each {} I/Os", format_duration(t.time), t.blocks)
            }
            Some(t) => format!(
                "{} after each {} I/Os ({} spun)",
                format_duration(t.time),
                t.blocks,
                format_duration(t.spin)
            ),
        },
        a.iodepth.to_string(),
        rate,
        format_size(a.alignment()),
    ]
}

/// A load point's own values as `show` prints them, in [`POINT_FIELDS`] order.
fn point_values(p: &Spec) -> [String; 11] {
    let runtime = if p.runtime.is_zero() {
        "until io_size".to_string()
    } else {
        format_duration(p.runtime)
    };
    let sync = match p.sync {
        SyncMode::None => "none",
        SyncMode::Dsync => "dsync",
        SyncMode::Sync => "sync",
    };
    let content = match p.content {
        Content::Random => "random".to_string(),
        Content::Zeros => "zeros".to_string(),
        Content::Mixed {
            compress_pct,
            dedupe_pct,
        } => format!("compress={compress_pct},dedupe={dedupe_pct}"),
    };
    [
        format_size(p.size),
        format_size(p.offset),
        format_duration(p.ramp),
        runtime,
        p.io_limit.map_or("none".to_string(), format_size),
        format_duration(p.interval),
        p.direct.to_string(),
        sync.to_string(),
        content,
        format!("{:#x}", p.seed),
        steady_text(p),
    ]
}

/// The steady-state gate as `show` prints it: its criterion and window.
fn steady_text(p: &Spec) -> String {
    use super::super::steady::{SteadyCriterion, SteadyMetric};
    let Some(g) = &p.steady else {
        return "none".into();
    };
    let metric = match g.metric {
        SteadyMetric::Iops => "iops",
        SteadyMetric::Bw => "bw",
        SteadyMetric::Lat => "lat",
    };
    let criterion = match g.criterion {
        SteadyCriterion::Band(pct) => format!("{metric}:{pct}%"),
        SteadyCriterion::Slope(pct) => format!("{metric}_slope:{pct}%"),
    };
    format!("{criterion} over {}", format_duration(g.window))
}

/// `field` of the full profile's first load point (and first group), as the
/// quick profile's notes name it; ramp and measured time are named together.
pub(super) fn full_value(full: &Job, field: &str) -> String {
    let Some(p) = full.points.first() else {
        return String::new();
    };
    if field == "ramp_time" || field == "runtime" {
        return format!(
            "{} ramp, {} measured",
            format_duration(p.ramp),
            format_duration(p.runtime)
        );
    }
    let group = p.groups.first().map(group_values).unwrap_or_default();
    GROUP_FIELDS
        .iter()
        .zip(group)
        .chain(POINT_FIELDS.iter().zip(point_values(p)))
        .find(|(f, _)| **f == field)
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// "  NAME  ...": one line per workload; workloads of a user catalogue file
/// under a heading naming it.
fn listing<'a, T: 'a>(
    out: &mut String,
    kind: &str,
    items: impl Iterator<Item = &'a T>,
    origin: impl Fn(&T) -> Option<&Path>,
    line: impl Fn(&T) -> String,
) {
    let mut last: Option<&Path> = None;
    for item in items {
        if let Some(file) = origin(item).filter(|f| last != Some(*f)) {
            let _ = writeln!(out, "\n{kind} from {}:", file.display());
            last = Some(file);
        }
        out.push_str(&line(item));
    }
}

impl Catalogue {
    /// The `storlab workloads` listing: one line per workload, then the suites.
    pub fn list_text(&self) -> String {
        let mut out = String::from("Workloads (storlab workloads show NAME for details):\n");
        listing(
            &mut out,
            "Workloads",
            self.entries.iter(),
            |e| e.origin.as_deref(),
            |e| {
                format!(
                    "  {:<25} {}  {}\n",
                    e.name,
                    study_label(&e.study),
                    e.summary
                )
            },
        );
        out.push_str("\nSuites:\n");
        listing(
            &mut out,
            "Suites",
            self.suites.iter(),
            |s| s.origin.as_deref(),
            |s| {
                format!(
                    "  {:<22} {}: {}\n",
                    s.name,
                    s.summary,
                    s.workloads.join(", ")
                )
            },
        );
        out
    }

    /// The `storlab workloads show NAME` text: every load point in full, each
    /// value with where it comes from. A suite shows each of its workloads.
    pub fn show_text(&self, name: &str, profile: Profile) -> Result<String, super::SpecError> {
        if let Some(s) = self.suite(name) {
            let mut out = format!("suite {}: {}\n", s.name, s.summary);
            for w in &s.workloads {
                out.push('\n');
                out.push_str(&self.show_text(w, profile)?);
            }
            return Ok(out);
        }
        let job = self.get(name, profile)?;
        let entry = self.entry(name).expect("get found it");
        Ok(show_job(entry, &job, profile))
    }
}

fn show_job(entry: &Entry, job: &Job, profile: Profile) -> String {
    let from = entry
        .origin
        .as_ref()
        .map(|f| format!(", from {}", f.display()))
        .unwrap_or_default();
    let mut out = format!(
        "{} ({}, {} profile{from}): {}\n",
        job.name,
        study_label(&entry.study),
        profile.name(),
        job.description
    );
    let src = |field: &str| {
        job.provenance
            .iter()
            .find(|p| p.field == field)
            .map_or("storlab default", |p| p.source.as_str())
    };
    let rows = |out: &mut String, indent: &str, fields: &[&str], values: &[String]| {
        for (field, value) in fields.iter().zip(values) {
            let _ = writeln!(out, "{indent}{field:<19} {value:<16} {}", src(field));
        }
    };
    for (i, p) in job.points.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nload point {}/{}: {}",
            i + 1,
            job.points.len(),
            p.label
        );
        for g in &p.groups {
            let _ = writeln!(out, "  group {}", g.name);
            rows(&mut out, "    ", &GROUP_FIELDS, &group_values(g));
        }
        rows(&mut out, "  ", &POINT_FIELDS, &point_values(p));
    }
    out
}
