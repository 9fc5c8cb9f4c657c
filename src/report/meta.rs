//! `storlab meta` runs in the outputs: the table of each run's operation
//! types (the metadata mix) or directions (the large-file copy), every
//! figure named and written through [`super::vocab`]. `results show`
//! prints it as text; the Markdown, HTML and CSV reports hold it beside the
//! block runs' tables.

use super::format::{TextTable, aligned, csv_field};
use super::relative::{Comparison, Source};
use super::stats_ci::Estimate;
use super::vocab::Metric;
use crate::model::RunRecord;
use crate::model::meta::MetaResult;

/// The figures of a `storlab meta` table: the counts, `rate`, then the
/// latency.
const fn figures(rate: Metric) -> [Metric; 9] {
    [
        Metric::Ops,
        Metric::Errors,
        rate,
        Metric::LatMean,
        Metric::LatP50,
        Metric::LatP90,
        Metric::LatP99,
        Metric::LatP999,
        Metric::LatMax,
    ]
}

/// The figures of the metadata mix's table, after the run and the operation.
pub const MIX_COLUMNS: [Metric; 9] = figures(Metric::OpsPerS);

/// The figures of the copy's table, after the run and the direction (an
/// operation is one block).
pub const COPY_COLUMNS: [Metric; 9] = figures(Metric::MbS);

/// The columns of a kind's table.
fn columns(m: &MetaResult) -> &'static [Metric; 9] {
    match m {
        MetaResult::Meta(_) => &MIX_COLUMNS,
        MetaResult::Copy(_) => &COPY_COLUMNS,
    }
}

/// The header of a kind's table: `first` (the run's column, if any), the
/// operation or direction, then the figures.
fn head(m: &MetaResult, first: Option<&str>) -> Vec<String> {
    let mut h: Vec<String> = first.into_iter().map(String::from).collect();
    h.push(match m {
        MetaResult::Meta(_) => "operation".into(),
        MetaResult::Copy(_) => "direction".into(),
    });
    h.extend(columns(m).iter().map(|c| match (m, c) {
        (MetaResult::Copy(_), Metric::Ops) => "blocks".to_string(),
        _ => c.column().to_string(),
    }));
    h
}

/// The rows of one run: `first` (the run's name, if any), then one row per
/// operation type that ran (per direction).
fn rows(m: &MetaResult, first: Option<&str>) -> Vec<Vec<String>> {
    m.rows()
        .iter()
        .map(|o| {
            let mut r: Vec<String> = first.into_iter().map(String::from).collect();
            r.push(o.op.to_string());
            r.extend(columns(m).iter().map(|c| c.op_cell(o)));
            r
        })
        .collect()
}

/// What a run did: "meta on TARGET (CLIENT): SPEC".
fn what(m: &MetaResult) -> String {
    format!(
        "{} on {} ({}): {}",
        m.kind(),
        m.target(),
        if m.client().is_empty() {
            "client unknown"
        } else {
            m.client()
        },
        m.describe()
    )
}

/// One line about a run: its kind, target, client, spec and how it ended.
pub fn describe(name: &str, run: &RunRecord, m: &MetaResult) -> String {
    let mut s = format!("{name}: {}; {}", what(m), run.status());
    if let Some(e) = run.error.as_deref().or(m.error()) {
        s.push_str(&format!(" ({e}; the figures cover what was measured)"));
    } else if run.interrupted {
        s.push_str(" (the figures cover what was measured)");
    }
    s
}

/// One meta run as CSV (`storlab results export --format csv`): a row per
/// operation type (per direction for the copy), each figure under its key,
/// unformatted; an empty cell where a figure has no value.
pub fn csv(m: &MetaResult) -> String {
    let mut out = String::from(match m {
        MetaResult::Meta(_) => "operation",
        MetaResult::Copy(_) => "direction",
    });
    for c in columns(m) {
        out.push(',');
        out.push_str(c.key());
    }
    out.push('\n');
    for o in m.rows() {
        out.push_str(&csv_field(o.op));
        for c in columns(m) {
            out.push(',');
            if let Some(v) = c.of_op(&o) {
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    out
}

/// The table of one meta run as text (`storlab results show`).
pub fn text(run: &RunRecord, m: &MetaResult) -> String {
    let mut out = format!("\n{}\n", what(m));
    if run.interrupted || run.error.is_some() {
        out.push_str("(ended early: the figures cover what was measured)\n");
    }
    out.push_str(&aligned(&head(m, None), &rows(m, None), "", |i| i == 0));
    out
}

/// The meta runs of a report, one table per kind (the mix's, the copy's),
/// a row per run and operation type; empty when no run is a meta run.
pub fn tables(sources: &[Source]) -> Vec<TextTable> {
    let mut out = Vec::new();
    for (kind, title) in [
        ("meta", "File and metadata operations (storlab meta)"),
        ("copy", "Large-file copy (storlab meta --copy)"),
    ] {
        let runs: Vec<(&Source, &MetaResult)> = sources
            .iter()
            .filter_map(|s| Some((s, s.run.meta.as_ref()?)))
            .filter(|(_, m)| m.kind() == kind)
            .collect();
        let Some((_, first)) = runs.first() else {
            continue;
        };
        let mut note: Vec<String> = runs
            .iter()
            .map(|(s, m)| describe(&s.name, &s.run, m) + ".")
            .collect();
        note.push(match kind {
            "meta" => "Latency of one operation, its open and close included; ops/s over the mix's time.".into(),
            _ => "Latency of one block's write or read; MB/s over each direction's time, the write's fsync or COMMIT included.".into(),
        });
        out.push(TextTable {
            title: title.into(),
            head: head(first, Some("run")),
            rows: runs
                .iter()
                .flat_map(|(s, m)| rows(m, Some(&s.name)))
                .collect(),
            note: note.join(" "),
        });
    }
    out
}

/// The comparison CSV's lines of the meta runs: per kind, operation type
/// (direction) and target, each figure's mean over the runs that have it
/// (`job` is the kind, `point` the operation; no baseline, no relative).
pub fn csv_rows(c: &Comparison) -> Vec<Vec<String>> {
    type Key<'a> = (&'static str, String, &'a str);
    let mut keys: Vec<Key> = Vec::new();
    for m in c.sources.iter().filter_map(|s| s.run.meta.as_ref()) {
        for o in m.rows() {
            let k = (m.kind(), o.op.to_string(), m.target());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut out = Vec::new();
    for (kind, op, target) in keys {
        let runs: Vec<&MetaResult> = c
            .sources
            .iter()
            .filter_map(|s| s.run.meta.as_ref())
            .filter(|m| m.kind() == kind && m.target() == target)
            .collect();
        let Some(first) = runs.first() else {
            continue;
        };
        for metric in columns(first) {
            let v: Vec<f64> = runs
                .iter()
                .flat_map(|m| {
                    m.rows()
                        .into_iter()
                        .filter(|o| o.op == op)
                        .collect::<Vec<_>>()
                })
                .filter_map(|o| metric.of_op(&o))
                .collect();
            if v.is_empty() {
                continue;
            }
            let e = Estimate::of(&v);
            out.push(vec![
                metric.key().into(),
                kind.into(),
                op.clone(),
                target.into(),
                String::new(),
                e.n.to_string(),
                format!("{:.6}", e.mean),
                format!("{:.6}", e.stddev),
                e.ci95.map(|x| format!("{x:.6}")).unwrap_or_default(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }
    out
}
