//! `storlab results diff OLD NEW` (and `storlab compare RUN_A RUN_B`): runs
//! compared over time, each side one run or a set of runs.

use super::output::{db_path, emit};
use super::{CliError, ExitCode};
use crate::report::diff::{self, Diff, Side};
use crate::report::format::fmt_precise;
use crate::report::relative::Source;
use crate::report::vocab::Metric;
use crate::store::Store;
use clap::ValueEnum;
use std::path::Path;
use std::path::PathBuf;

/// Arguments of `storlab results diff OLD NEW`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The old side: a run id, several (3,4,5), a range (3-5), `--json` files, or
    /// git:REV:PATH (a `--json` file as git revision REV has it).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The new side, in the same form.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// Output file (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare points whose specs differ (the differences are listed in the output).
    #[arg(long)]
    pub allow_spec_change: bool,
    /// Exit 3 when any figure is significantly worse (by more than PCT % of
    /// the old value, when given; among FIGUREs such as iops,mb_s, when
    /// given), naming each: a gate for CI.
    #[arg(long, value_name = "worse[:PCT[:FIGURE,...]]")]
    pub fail_on: Option<String>,
}

/// `--fail-on worse[:PCT[:FIGURE,...]]`: the smallest change, in % of the
/// old value, a significantly worse figure must exceed to fail the diff, and
/// the figures that may fail it (`None`: every one).
#[derive(Clone, Debug, PartialEq)]
pub struct FailOn {
    /// Percent of the old value.
    pub pct: f64,
    /// The figures held to it.
    pub figures: Option<Vec<Metric>>,
}

/// Every figure a diff compares (block, meta and copy runs).
fn diff_figures() -> Vec<Metric> {
    let mut all = diff::DIFF_METRICS.to_vec();
    for kind in ["meta", "copy"] {
        for m in diff::meta_metrics(kind) {
            if !all.contains(&m) {
                all.push(m);
            }
        }
    }
    all
}

/// Parse `--fail-on`.
pub fn parse_fail_on(s: &str) -> Result<FailOn, CliError> {
    let allowed = || {
        diff_figures()
            .iter()
            .map(|m| m.key())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bad = |why: String| {
        CliError::input(format!(
            "invalid --fail-on {s:?}: {why} (allowed: worse, worse:PCT with PCT a number of \
             percent such as worse:5, or worse:PCT:FIGURE,... with figures of {})",
            allowed()
        ))
    };
    let mut parts = s.trim().splitn(3, ':');
    if parts.next() != Some("worse") {
        return Err(bad("it must start with worse".into()));
    }
    let pct = match parts.next() {
        None => 0.0,
        Some(p) => match p.trim().trim_end_matches('%').parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => v,
            _ => return Err(bad(format!("{p:?} is not a percentage"))),
        },
    };
    let figures = match parts.next() {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(|k| {
                    diff_figures()
                        .into_iter()
                        .find(|m| m.key() == k.trim())
                        .ok_or_else(|| bad(format!("no figure {k:?}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(FailOn { pct, figures })
}

/// The changes that fail `gate`: significantly worse, by more than its
/// percentage of the old value (any amount when the old value is 0), among
/// its figures.
pub fn failing<'d>(d: &'d Diff, gate: &FailOn) -> Vec<&'d diff::Change> {
    d.changes
        .iter()
        .filter(|c| c.verdict == diff::Verdict::Worse)
        .filter(|c| gate.figures.as_ref().is_none_or(|f| f.contains(&c.metric)))
        .filter(|c| c.change_pct.is_none_or(|v| v.abs() > gate.pct))
        .collect()
}

/// Formats of `storlab results diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Plain-text tables, one per load point.
    Text,
    /// One Markdown table.
    Markdown,
    /// One line per figure and point.
    Csv,
    /// The whole comparison (schema storlab.diff).
    Json,
}

/// The items of one side: "3", "3,4,5", "3-5", file paths, or a mix.
/// Ranges expand to every id in them; files stay as given.
pub fn side_items(side: &str, what: &str, db: Option<&Path>) -> Result<Vec<String>, CliError> {
    let db_name = || {
        db_path(db)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "the results database".into())
    };
    let bad = |item: &str, why: &str| {
        CliError::input(format!(
            "invalid run {item:?} in {what} {side:?}: {why} (expected a run id of {} such as 3, \
             ids like 3,4,5, a range like 3-5, a --json file, or git:REV:PATH for a --json file as \
             a git revision has it; see `storlab results list`)",
            db_name()
        ))
    };
    let mut out = Vec::new();
    for item in side.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad(item, "empty"));
        }
        if Path::new(item).is_file() || item.parse::<i64>().is_ok() || item.starts_with("git:") {
            out.push(item.to_string());
            continue;
        }
        let range = item.split_once('-').and_then(|(a, b)| {
            Some((a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?))
        });
        match range {
            Some((a, b)) if a <= b && b - a < 1000 => {
                out.extend((a..=b).map(|i| i.to_string()));
            }
            Some(_) => {
                return Err(bad(
                    item,
                    "a range must run from a lower to a higher id, at most 1000 runs",
                ));
            }
            None => return Err(bad(item, "neither a file nor a run id")),
        }
    }
    Ok(out)
}

/// Load one side.
fn load_side(
    side: &str,
    what: &str,
    db: Option<&Path>,
    store: &mut Option<Store>,
) -> Result<Side, CliError> {
    let items = side_items(side, what, db)?;
    let sources = items
        .iter()
        .map(|i| super::report::load(i, db, store))
        .collect::<Result<Vec<Source>, _>>()?;
    let name = if sources.len() == 1 {
        sources[0].name.clone()
    } else if items.iter().all(|i| i.parse::<i64>().is_ok()) {
        format!("runs {}", items.join(", "))
    } else {
        sources
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(Side { name, sources })
}

/// Line up the two sides; refuse differing specs unless allowed.
pub fn build(
    old: &str,
    new: &str,
    db: Option<&Path>,
    allow_spec_change: bool,
) -> Result<Diff, CliError> {
    let mut store = None;
    let a = load_side(old, "OLD", db, &mut store)?;
    let b = load_side(new, "NEW", db, &mut store)?;
    let d = Diff::new(&a, &b).map_err(CliError::input)?;
    if !d.spec_differences.is_empty() && !allow_spec_change {
        return Err(CliError::input(format!(
            "{} and {} ran different specs, so their figures are not comparable: {} \
             (pass --allow-spec-change to compare them anyway)",
            d.old,
            d.new,
            d.spec_differences.join("; ")
        )));
    }
    Ok(d)
}

/// Run `storlab results diff`.
pub fn run(args: &DiffArgs, db: Option<&Path>) -> Result<ExitCode, CliError> {
    let gate = args.fail_on.as_deref().map(parse_fail_on).transpose()?;
    let d = build(&args.old, &args.new, db, args.allow_spec_change)?;
    let text = match args.format {
        DiffFormat::Text => diff::text(&d),
        DiffFormat::Markdown => diff::markdown(&d),
        DiffFormat::Csv => diff::csv(&d),
        DiffFormat::Json => diff::json(&d),
    };
    emit(args.output.as_deref(), text.as_bytes())?;
    if let Some(p) = &args.output {
        eprintln!("storlab: wrote {}", p.display());
    }
    let Some(gate) = gate else {
        return Ok(ExitCode::Ok);
    };
    let worse = failing(&d, &gate);
    for c in &worse {
        let by = c
            .change_pct
            .map_or("from 0".to_string(), |v| format!("{v:+.1}%"));
        let ci = c.ci95_pct.map_or(String::new(), |v| format!(" ±{v:.1}%"));
        eprintln!(
            "storlab: worse: {} · {} · {} · {}: {} -> {} ({by}{ci}), past --fail-on {}",
            c.job,
            c.point,
            c.target,
            c.metric.key(),
            fmt_precise(c.old),
            fmt_precise(c.new),
            args.fail_on.as_deref().unwrap_or_default()
        );
    }
    Ok(if worse.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Worse
    })
}

/// Run `storlab compare RUN_A RUN_B`: the text diff of two stored runs (or sets).
pub fn run_compare(args: &super::CompareArgs) -> Result<ExitCode, CliError> {
    if args.job.workload.is_some() || args.job.job.is_some() {
        return Err(CliError::input(
            "storlab compare RUN_A RUN_B compares stored runs and runs nothing: drop --workload/--job \
             (or drop the run ids and pass --targets to run a comparison)",
        ));
    }
    let [old, new] = args.runs.as_slice() else {
        return Err(CliError::input(format!(
            "storlab compare takes two runs (or sets such as 3,4,5 8,9,10), not {}",
            args.runs.len()
        )));
    };
    let d = build(old, new, args.out.record.db.path.as_deref(), false)?;
    emit(None, diff::text(&d).as_bytes())?;
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_takes_worse_and_a_percentage() {
        let pct = |s| parse_fail_on(s).unwrap().pct;
        assert_eq!(pct("worse"), 0.0);
        assert_eq!(pct("worse:5"), 5.0);
        assert_eq!(pct("worse:2.5%"), 2.5);
        assert_eq!(parse_fail_on("worse:5").unwrap().figures, None);
        assert_eq!(
            parse_fail_on("worse:10:iops,mb_s").unwrap().figures,
            Some(vec![Metric::Iops, Metric::MbS])
        );
        for bad in [
            "better",
            "worse:",
            "worse:-1",
            "worse:x",
            "wors:5",
            "",
            "worse:5:speed",
        ] {
            let e = parse_fail_on(bad).unwrap_err().message;
            assert!(
                e.contains("--fail-on") && e.contains("worse:PCT"),
                "{bad:?}: {e}"
            );
        }
    }
}
