//! Comparing runs over time (`storlab results diff OLD NEW`): for every load
//! point and target the two sides share, each figure's old and new value, the
//! change in %, and whether the change is beyond the noise.
//!
//! The noise comes from repeats when both sides have at least two of the
//! point (several runs per side, or `--repeat`), else from the measured
//! intervals of each side (ramp excluded): Welch's t-test at 95% on those
//! samples ([`super::stats_ci::welch`]). Interval samples follow each other
//! in time and are not fully independent, so a change judged significant
//! from intervals alone deserves a repeat before anyone acts on it.
//!
//! Points are only compared with points of the same spec: [`Diff::new`]
//! lists every difference of spec (job · point: field: old → new), and the
//! caller refuses or flags the comparison.

use super::format::{aligned, csv_doc, fmt_precise, md_cell, md_rows, opt_num};
use super::relative::{Source, target_of};
use super::stats_ci::{Welch, mean, welch};
use super::vocab::{Figures, Metric};
use crate::model::Environment;
use crate::model::meta::{MetaResult, OpRow};
use crate::model::{IntervalRecord, Phase, PointResult};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

/// One side of a comparison: one run, or a set of runs measured alike.
#[derive(Clone, Debug)]
pub struct Side {
    /// How the user named it ("run 3", "runs 3, 4, 5").
    pub name: String,
    /// Its runs.
    pub sources: Vec<Source>,
}

/// The figures compared over time, in table order.
pub const DIFF_METRICS: [Metric; 5] = [
    Metric::Iops,
    Metric::MbS,
    Metric::LatMean,
    Metric::LatP99,
    Metric::ClientCpuPerIo,
];

/// The figure `m` of a whole point; `None` where it has none.
fn of_point(m: Metric, p: &PointResult) -> Option<f64> {
    m.value(&Figures::of(&p.summary))
}

/// The figure `m` of one interval; `None` where it has none (no time, or no
/// I/O for a per-I/O figure).
fn of_interval(m: Metric, i: &IntervalRecord) -> Option<f64> {
    m.value(&Figures::of(&i.summary()))
}

/// Where the noise estimate of a change came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Repeats of the point (each repeat one value).
    Repeats,
    /// Measured intervals (ramp excluded), pooled over each side's repeats.
    Intervals,
}

impl Basis {
    /// The word shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Repeats => "repeats",
            Basis::Intervals => "intervals",
        }
    }
}

/// What a change amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Beyond the noise, in the good direction.
    Better,
    /// Beyond the noise, in the bad direction.
    Worse,
    /// Within the noise (Welch's t-test at 95% does not reject equal means).
    WithinNoise,
    /// Fewer than two samples on a side: no estimate of the noise.
    NoNoiseEstimate,
}

impl Verdict {
    /// The words shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "significant: better",
            Verdict::Worse => "significant: worse",
            Verdict::WithinNoise => "within noise",
            Verdict::NoNoiseEstimate => "no noise estimate",
        }
    }
}

/// One figure of one load point on one target, old against new.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Job name.
    pub job: String,
    /// Load point label.
    pub point: String,
    /// Target.
    pub target: String,
    /// The figure (its key in the JSON and CSV).
    pub metric: Metric,
    /// Old value (mean over the old side's repeats of the point's figure).
    pub old: f64,
    /// New value, likewise.
    pub new: f64,
    /// `(new − old) / old` in %; `None` when old is 0.
    pub change_pct: Option<f64>,
    /// Half-width of the 95% confidence interval of the change, in % of the
    /// old value; `None` without a noise estimate.
    pub ci95_pct: Option<f64>,
    /// Samples on the old side (repeats or intervals, see `basis`).
    pub n_old: usize,
    /// Samples on the new side.
    pub n_new: usize,
    /// Where the samples came from.
    pub basis: Basis,
    /// The verdict.
    pub verdict: Verdict,
}

/// A (job, label, target) key.
type Key = (String, String, String);

/// Every point of a side, by key, in order of first appearance.
fn points_by_key(side: &Side) -> Vec<(Key, Vec<&PointResult>)> {
    let mut out: Vec<(Key, Vec<&PointResult>)> = Vec::new();
    for s in &side.sources {
        for job in &s.run.jobs {
            for p in &job.points {
                let key = (job.name.clone(), p.label.clone(), target_of(p));
                match out.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(p),
                    None => out.push((key, vec![p])),
                }
            }
        }
    }
    out
}

/// Every leaf where two JSON values differ, as "path: old → new".
fn json_differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                json_differences(
                    &p,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                json_differences(&format!("{path}[{i}]"), u, v, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}

/// How two points' specs differ (empty when they are the same).
pub fn spec_differences(a: &PointResult, b: &PointResult) -> Vec<String> {
    let (Ok(x), Ok(y)) = (serde_json::to_value(&a.spec), serde_json::to_value(&b.spec)) else {
        return vec!["the specs cannot be encoded".into()];
    };
    let mut out = Vec::new();
    json_differences("", &x, &y, &mut out);
    out
}

/// How two environments differ, field by field.
pub fn environment_differences(a: &Environment, b: &Environment) -> Vec<String> {
    let (Ok(x), Ok(y)) = (serde_json::to_value(a), serde_json::to_value(b)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    json_differences("", &x, &y, &mut out);
    out
}

/// Version of the diff document: 2 names metrics by their keys
/// (`lat_mean_ms`), as the diff's CSV does; version 1 (without this field)
/// named them `mean_latency`, `p99_latency`, `cpu_per_io`.
pub const DIFF_SCHEMA_VERSION: u32 = 2;

/// Two sides lined up: every shared point's changes, what differs, what
/// only one side has.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// Always "storlab.diff".
    pub schema: &'static str,
    /// [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The old side's name.
    pub old: String,
    /// The new side's name.
    pub new: String,
    /// Every change, by point then figure.
    pub changes: Vec<Change>,
    /// Spec differences between the points compared ("job · point: field: a → b").
    pub spec_differences: Vec<String>,
    /// Environment differences between the sides' first runs.
    pub environment_differences: Vec<String>,
    /// Points only the old side has ("job · point · target").
    pub only_old: Vec<String>,
    /// Points only the new side has.
    pub only_new: Vec<String>,
}

/// The one kind of a side's runs ("block", "meta" or "copy"); an error
/// naming the kinds when its runs are of several.
fn kind_of(side: &Side) -> Result<&'static str, String> {
    let mut kinds: Vec<&'static str> = side.sources.iter().map(|s| s.run.kind()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    match kinds.as_slice() {
        [one] => Ok(one),
        [] => Ok("block"),
        many => Err(format!(
            "{} mixes {} runs: results diff compares runs of one kind",
            side.name,
            many.join(" and ")
        )),
    }
}

/// The figures of `storlab meta` runs compared over time, per kind.
pub fn meta_metrics(kind: &str) -> [Metric; 3] {
    if kind == "copy" {
        [Metric::MbS, Metric::LatMean, Metric::LatP99]
    } else {
        [Metric::OpsPerS, Metric::LatMean, Metric::LatP99]
    }
}

/// Every meta run of a side by (kind, operation type, target), in order of
/// first appearance: one entry per run.
fn meta_by_key(side: &Side) -> Vec<(Key, Vec<(&MetaResult, OpRow<'_>)>)> {
    let mut out: Vec<(Key, Vec<(&MetaResult, OpRow<'_>)>)> = Vec::new();
    for m in side.sources.iter().filter_map(|s| s.run.meta.as_ref()) {
        for o in m.rows() {
            let key = (
                m.kind().to_string(),
                o.op.to_string(),
                m.target().to_string(),
            );
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push((m, o)),
                None => out.push((key, vec![(m, o)])),
            }
        }
    }
    out
}

impl Diff {
    /// Compare `old` with `new`. An error when they share no point (naming
    /// what each side has), or when they hold runs of different kinds
    /// (block, meta, copy; naming both).
    pub fn new(old: &Side, new: &Side) -> Result<Diff, String> {
        let (ka, kb) = (kind_of(old)?, kind_of(new)?);
        if ka != kb {
            return Err(format!(
                "{} is a {ka} run and {} a {kb} run: results diff compares runs of one kind \
                 (block with block, meta with meta, copy with copy)",
                old.name, new.name
            ));
        }
        if ka != "block" {
            return Diff::of_meta(old, new, ka);
        }
        let a = points_by_key(old);
        let b = points_by_key(new);
        let mut d = Diff::empty(old, new, &a, &b);
        for (key, pa) in &a {
            let Some((_, pb)) = b.iter().find(|(k, _)| k == key) else {
                continue;
            };
            let first = pa[0];
            for p in pa.iter().skip(1).chain(pb.iter()) {
                for s in spec_differences(first, p) {
                    d.spec_difference(format!("{} · {}: {s}", key.0, key.1));
                }
            }
            for m in DIFF_METRICS {
                d.changes.push(change(key, m, pa, pb));
            }
        }
        d.shared(
            (old, &a),
            (new, &b),
            "load point (job · point · target)",
            "no points",
        )
    }
}

impl Diff {
    /// Compare two sides of `storlab meta` runs of `kind`: per operation type
    /// (direction, for the copy) and target, the figures of
    /// [`meta_metrics`], each run one sample (no intervals: a side of one
    /// run has no noise estimate).
    fn of_meta(old: &Side, new: &Side, kind: &str) -> Result<Diff, String> {
        let a = meta_by_key(old);
        let b = meta_by_key(new);
        let mut d = Diff::empty(old, new, &a, &b);
        let specs: Vec<Value> = old
            .sources
            .iter()
            .chain(&new.sources)
            .filter_map(|s| serde_json::to_value(s.run.meta.as_ref()?.spec()).ok())
            .collect();
        if let Some(first) = specs.first() {
            for spec in &specs[1..] {
                let mut diffs = Vec::new();
                json_differences("", first, spec, &mut diffs);
                for s in diffs {
                    d.spec_difference(format!("{kind}: {s}"));
                }
            }
        }
        for (key, ra) in &a {
            let Some((_, rb)) = b.iter().find(|(k, _)| k == key) else {
                continue;
            };
            for m in meta_metrics(kind) {
                let sa: Vec<f64> = ra.iter().filter_map(|(_, o)| m.of_op(o)).collect();
                let sb: Vec<f64> = rb.iter().filter_map(|(_, o)| m.of_op(o)).collect();
                if sa.is_empty() || sb.is_empty() {
                    continue;
                }
                let (ov, nv) = (mean(&sa), mean(&sb));
                d.changes
                    .push(judge(key, m, (ov, nv), (&sa, &sb), Basis::Repeats));
            }
        }
        d.shared(
            (old, &a),
            (new, &b),
            "operation (kind · operation · target)",
            "no operations",
        )
    }
}

impl Diff {
    /// A diff of `old` and `new` with no change yet: their environments
    /// compared and the keys only one side has.
    fn empty<T>(old: &Side, new: &Side, a: &[(Key, T)], b: &[(Key, T)]) -> Diff {
        Diff {
            schema: "storlab.diff",
            schema_version: DIFF_SCHEMA_VERSION,
            old: old.name.clone(),
            new: new.name.clone(),
            changes: Vec::new(),
            spec_differences: Vec::new(),
            environment_differences: match (old.sources.first(), new.sources.first()) {
                (Some(x), Some(y)) => {
                    environment_differences(&x.run.environment, &y.run.environment)
                }
                _ => Vec::new(),
            },
            only_old: only_in(a, b),
            only_new: only_in(b, a),
        }
    }

    /// Note a difference between the specs, once.
    fn spec_difference(&mut self, line: String) {
        if !self.spec_differences.contains(&line) {
            self.spec_differences.push(line);
        }
    }

    /// The diff, or, when it holds no change, the error of two sides with no
    /// `what` in common, naming what each has (`none` for a side with
    /// nothing).
    fn shared<T>(
        self,
        (old, a): (&Side, &[(Key, T)]),
        (new, b): (&Side, &[(Key, T)]),
        what: &str,
        none: &str,
    ) -> Result<Diff, String> {
        if !self.changes.is_empty() {
            return Ok(self);
        }
        let list = |v: &[(Key, T)]| {
            if v.is_empty() {
                none.to_string()
            } else {
                v.iter()
                    .map(|(k, _)| key_name(k))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        };
        Err(format!(
            "{} and {} share no {what}: {} has {}; {} has {}",
            old.name,
            new.name,
            old.name,
            list(a),
            new.name,
            list(b)
        ))
    }
}

/// A key as the diff names it: "job · point · target".
fn key_name(k: &Key) -> String {
    format!("{} · {} · {}", k.0, k.1, k.2)
}

/// The keys of `x` that `y` lacks, named.
fn only_in<T>(x: &[(Key, T)], y: &[(Key, T)]) -> Vec<String> {
    x.iter()
        .filter(|(k, _)| !y.iter().any(|(j, _)| j == k))
        .map(|(k, _)| key_name(k))
        .collect()
}

/// The samples of `m` on one side: one per repeat, or one per measured interval.
fn samples(m: Metric, points: &[&PointResult], basis: Basis) -> Vec<f64> {
    match basis {
        Basis::Repeats => points.iter().filter_map(|p| of_point(m, p)).collect(),
        Basis::Intervals => points
            .iter()
            .flat_map(|p| p.intervals.iter())
            .filter(|i| i.phase == Phase::Measure)
            .filter_map(|i| of_interval(m, i))
            .collect(),
    }
}

/// One figure of one point, old against new.
fn change(key: &Key, m: Metric, old: &[&PointResult], new: &[&PointResult]) -> Change {
    let basis = if old.len() >= 2 && new.len() >= 2 {
        Basis::Repeats
    } else {
        Basis::Intervals
    };
    let (sa, sb) = (samples(m, old, basis), samples(m, new, basis));
    let ov = mean(&samples(m, old, Basis::Repeats));
    let nv = mean(&samples(m, new, Basis::Repeats));
    judge(key, m, (ov, nv), (&sa, &sb), basis)
}

/// One figure's change: old and new values `(ov, nv)`, the samples of each
/// side `(sa, sb)` and where they came from.
fn judge(
    key: &Key,
    m: Metric,
    (ov, nv): (f64, f64),
    (sa, sb): (&[f64], &[f64]),
    basis: Basis,
) -> Change {
    let change_pct = (ov != 0.0).then(|| (nv - ov) / ov * 100.0);
    let w: Option<Welch> = welch(sa, sb);
    let sample_base = mean(sa);
    let ci95_pct = w
        .as_ref()
        .and_then(|w| (sample_base != 0.0).then(|| w.ci95 / sample_base.abs() * 100.0));
    let verdict = match &w {
        None => Verdict::NoNoiseEstimate,
        Some(w) if !w.significant => Verdict::WithinNoise,
        Some(w) => {
            if (w.diff > 0.0) == m.higher_is_better() {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
    };
    Change {
        job: key.0.clone(),
        point: key.1.clone(),
        target: key.2.clone(),
        metric: m,
        old: ov,
        new: nv,
        change_pct,
        ci95_pct,
        n_old: sa.len(),
        n_new: sb.len(),
        basis,
        verdict,
    }
}

fn pct(v: Option<f64>, sign: bool) -> String {
    match v {
        Some(x) if sign => format!("{x:+.1}%"),
        Some(x) => format!("±{x:.1}%"),
        None => "–".into(),
    }
}

/// The columns of the tables, in order.
const HEAD: [&str; 11] = [
    "job",
    "point",
    "target",
    "metric",
    "old",
    "new",
    "change",
    "95% CI",
    "n old/new",
    "basis",
    "verdict",
];

fn cells(c: &Change) -> [String; 11] {
    [
        c.job.clone(),
        c.point.clone(),
        c.target.clone(),
        c.metric.name().to_string(),
        fmt_precise(c.old),
        fmt_precise(c.new),
        pct(c.change_pct, true),
        pct(c.ci95_pct, false),
        format!("{}/{}", c.n_old, c.n_new),
        c.basis.as_str().to_string(),
        c.verdict.as_str().to_string(),
    ]
}

/// Notes shared by the text and Markdown outputs.
fn notes(d: &Diff) -> Vec<String> {
    let mut out = Vec::new();
    if !d.spec_differences.is_empty() {
        out.push(format!(
            "WARNING: the specs differ, so these are not like-for-like: {}",
            d.spec_differences.join("; ")
        ));
    }
    if !d.environment_differences.is_empty() {
        out.push(format!(
            "Environment changed: {}",
            d.environment_differences.join("; ")
        ));
    }
    if !d.only_old.is_empty() {
        out.push(format!("Only in {}: {}", d.old, d.only_old.join("; ")));
    }
    if !d.only_new.is_empty() {
        out.push(format!("Only in {}: {}", d.new, d.only_new.join("; ")));
    }
    out
}

const EXPLAIN: &str = "change = (new − old) / old; 95% CI: half-width of the confidence interval of the change (Welch's t-test) from repeats when both sides have two or more, else from the measured intervals (ramp excluded); \"within noise\": the test does not tell the two apart at 95%.";

/// The diff as a plain-text table, one block per load point (the figures
/// aligned across every block).
pub fn text(d: &Diff) -> String {
    let mut out = format!("old: {}   new: {}\n", d.old, d.new);
    for n in notes(d) {
        let _ = writeln!(out, "{n}");
    }
    let head: Vec<String> = HEAD[3..].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = d.changes.iter().map(|c| cells(c)[3..].to_vec()).collect();
    // Rendered together so the columns line up across blocks; then split
    // into blocks under each point's heading.
    let block = aligned(&head, &rows, "  ", |i| i == 0 || i >= 6);
    let mut lines = block.lines();
    let header = lines.next().unwrap_or_default();
    let mut key: Option<(&str, &str, &str)> = None;
    for (c, line) in d.changes.iter().zip(lines) {
        let k = (c.job.as_str(), c.point.as_str(), c.target.as_str());
        if key != Some(k) {
            key = Some(k);
            let _ = writeln!(out, "\n{} · {} · {}\n{header}", k.0, k.1, k.2);
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "\n{EXPLAIN}");
    out
}

/// The diff as Markdown.
pub fn markdown(d: &Diff) -> String {
    let mut out = format!("# storlab diff\n\nOld: {}. New: {}.\n\n", d.old, d.new);
    for n in notes(d) {
        let _ = writeln!(out, "- {}", md_cell(&n));
    }
    if !notes(d).is_empty() {
        out.push('\n');
    }
    let head: Vec<String> = HEAD.iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = d.changes.iter().map(|c| cells(c).to_vec()).collect();
    out.push_str(&md_rows(&head, &rows, |i| (4..8).contains(&i)));
    let _ = writeln!(out, "\n{EXPLAIN}");
    out
}

/// The header of [`csv`].
pub const CSV_HEADER: &str =
    "job,point,target,metric,old,new,change_pct,ci95_pct,n_old,n_new,basis,verdict";

/// The diff as CSV, one line per change.
pub fn csv(d: &Diff) -> String {
    let rows = d.changes.iter().map(|c| {
        vec![
            c.job.clone(),
            c.point.clone(),
            c.target.clone(),
            c.metric.key().into(),
            format!("{:.6}", c.old),
            format!("{:.6}", c.new),
            opt_num(c.change_pct, 3),
            opt_num(c.ci95_pct, 3),
            c.n_old.to_string(),
            c.n_new.to_string(),
            c.basis.as_str().into(),
            c.verdict.as_str().replace(": ", " "),
        ]
    });
    csv_doc(CSV_HEADER, rows)
}

/// The diff as pretty JSON (schema "storlab.diff").
pub fn json(d: &Diff) -> String {
    serde_json::to_string_pretty(d).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")) + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunRecord;
    use crate::stats::{CpuSample, Recorder, Snapshot, Summary};
    use crate::workload::Dir;

    /// A point of `n` measured 1 s intervals whose IOPS are `iops[i]` and
    /// latency `lat_us` (after one ramp interval).
    fn point(label: &str, iops: &[u64], lat_us: u64, bs: u64) -> Value {
        let mut intervals = Vec::new();
        let mut measured = Vec::new();
        for (i, &n) in std::iter::once(&10).chain(iops).enumerate() {
            let mut r = Recorder::new();
            for k in 0..n {
                r.record(Dir::Read, bs, (lat_us + k % 7) * 1000);
            }
            let stats = r.take();
            let cpu = CpuSample {
                proc_user_s: n as f64 * 1e-6,
                proc_sys_s: 0.0,
                host_busy_pct: 5.0,
                cores: 2,
                ctx: 0,
            };
            if i > 0 {
                measured.push((stats.clone(), 1.0, cpu.clone()));
            }
            intervals.push(serde_json::json!({
                "index": i, "phase": if i == 0 { "ramp" } else { "measure" },
                "start_s": i as f64, "seconds": 1.0, "stats": stats, "cpu": cpu,
            }));
        }
        let total: Snapshot = measured.iter().map(|m| &m.0).sum();
        serde_json::json!({
            "label": label,
            "spec": {
                "label": label,
                "groups": [{ "name": "vm", "vms": 1, "workers_per_vm": 1, "disks_per_vm": 1,
                    "access": { "bs": [[bs, 100]], "read_pct": 100, "random_pct": 100,
                                "align": null, "iodepth": 1, "rate": null } }],
                "offset": 0, "size": 1048576, "content": "random", "direct": true, "sync": "none",
                "ramp": 1.0, "runtime": 4.0, "interval": 1.0, "io_limit": null, "seed": 7
            },
            "targets": ["null:"], "backend": "test", "threads": 1, "started_unix": 0.0,
            "prepared": [], "intervals": intervals, "workers": [],
            "measured": total, "summary": Summary::compute(&measured),
            "interrupted": false, "error": null,
        })
    }

    fn side(name: &str, points: Vec<Value>) -> Side {
        let v = serde_json::json!({
            "schema": "storlab.run", "schema_version": 1, "command": ["storlab"],
            "started_unix": 0.0,
            "environment": { "hostname": "h", "kernel": "k", "os": "o", "cpu_model": "c",
                             "cores": 2, "memory_bytes": 1, "storlab_version": "0" },
            "jobs": [{ "name": "job", "description": "", "profile": null, "points": points }],
            "interrupted": false, "error": null, "complete": true
        });
        let run: RunRecord = serde_json::from_value(v).expect("a valid run");
        Side {
            name: name.into(),
            sources: vec![Source {
                name: name.into(),
                run,
            }],
        }
    }

    fn iops_change(d: &Diff) -> &Change {
        d.changes
            .iter()
            .find(|c| c.metric == Metric::Iops)
            .expect("an IOPS change")
    }

    /// The diff of one point measured once a side, with these interval IOPS.
    fn diff_of(old: &[u64], new: &[u64]) -> Diff {
        let old = side("old", vec![point("p", old, 500, 4096)]);
        let new = side("new", vec![point("p", new, 500, 4096)]);
        Diff::new(&old, &new).unwrap()
    }

    #[test]
    fn a_clear_drop_is_significant_and_worse() {
        let d = diff_of(&[1000, 1010, 990, 1005, 995], &[800, 810, 790, 805, 795]);
        let c = iops_change(&d);
        assert_eq!(c.basis, Basis::Intervals);
        assert_eq!((c.n_old, c.n_new), (5, 5));
        assert!((c.change_pct.unwrap() + 20.0).abs() < 0.5, "{c:?}");
        assert_eq!(c.verdict, Verdict::Worse, "{c:?}");
        assert!(d.spec_differences.is_empty(), "{:?}", d.spec_differences);
        // Lower latency is better: the same drop in latency reads as better.
        let slow = side("slow", vec![point("p", &[1000, 1000, 1000], 900, 4096)]);
        let fast = side("fast", vec![point("p", &[1000, 1000, 1000], 500, 4096)]);
        let d = Diff::new(&slow, &fast).unwrap();
        let lat = d
            .changes
            .iter()
            .find(|c| c.metric == Metric::LatMean)
            .unwrap();
        assert_eq!(lat.verdict, Verdict::Better, "{lat:?}");
    }

    #[test]
    fn the_same_distribution_is_within_noise() {
        let d = diff_of(&[1000, 1020, 980, 1010, 990], &[1005, 985, 1015, 995, 1000]);
        let c = iops_change(&d);
        assert_eq!(c.verdict, Verdict::WithinNoise, "{c:?}");
        assert!(c.ci95_pct.unwrap() > c.change_pct.unwrap().abs(), "{c:?}");
        assert!(text(&d).contains("within noise"));
    }

    #[test]
    fn repeats_are_the_samples_when_both_sides_have_them() {
        let old = side(
            "old",
            vec![
                point("p", &[1000, 1000], 500, 4096),
                point("p", &[1010, 1010], 500, 4096),
                point("p", &[990, 990], 500, 4096),
            ],
        );
        let new = side(
            "new",
            vec![
                point("p", &[1500, 1500], 500, 4096),
                point("p", &[1490, 1490], 500, 4096),
            ],
        );
        let d = Diff::new(&old, &new).unwrap();
        let c = iops_change(&d);
        assert_eq!((c.basis, c.n_old, c.n_new), (Basis::Repeats, 3, 2));
        assert_eq!(c.verdict, Verdict::Better, "{c:?}");
        // One interval a side: no noise estimate, never a claim.
        let d = diff_of(&[1000], &[2000]);
        assert_eq!(iops_change(&d).verdict, Verdict::NoNoiseEstimate);
    }

    #[test]
    fn spec_changes_are_named_and_disjoint_sides_refused() {
        let old = side("old", vec![point("p", &[1000, 1000], 500, 4096)]);
        let new = side("new", vec![point("p", &[1000, 1000], 500, 8192)]);
        let d = Diff::new(&old, &new).unwrap();
        assert_eq!(d.spec_differences.len(), 1, "{:?}", d.spec_differences);
        assert!(
            d.spec_differences[0].contains("groups[0].access.bs[0][0]: 4096 → 8192"),
            "{:?}",
            d.spec_differences
        );
        assert!(text(&d).contains("WARNING: the specs differ"));
        let other = side("other", vec![point("q", &[1000], 500, 4096)]);
        let e = Diff::new(&old, &other).unwrap_err();
        assert!(
            e.contains("share no load point") && e.contains("job · p · null:"),
            "{e}"
        );
        assert_eq!(csv(&d).lines().count(), 1 + DIFF_METRICS.len());
        let j: Value = serde_json::from_str(&json(&d)).unwrap();
        assert_eq!(j["schema"], "storlab.diff");
        assert_eq!(j["schema_version"], DIFF_SCHEMA_VERSION);
        assert_eq!(j["changes"][0]["metric"], "iops");
        // The JSON names a figure by the key its CSV uses.
        let keys: Vec<&Value> = j["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["metric"])
            .collect();
        assert_eq!(
            keys,
            ["iops", "mb_s", "lat_mean_ms", "lat_p99_ms", "cpu_us_per_io"]
        );
        assert!(text(&d).contains("client CPU per I/O (µs)"));
    }
}
