//! `storlab results diff OLD NEW` (and `storlab compare RUN_A RUN_B`): runs
//! compared over time, each side one run or a set of runs.

use super::output::{db_path, emit};
use super::{CliError, ExitCode};
use crate::report::diff::{self, Diff, Side};
use crate::report::relative::Source;
use crate::store::Store;
use clap::ValueEnum;
use std::path::Path;
use std::path::PathBuf;

/// Arguments of `storlab results diff OLD NEW`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The old side: a run id, several (3,4,5), a range (3-5), or `--json` files.
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
             ids like 3,4,5, a range like 3-5, or a --json file; see `storlab results list`)",
            db_name()
        ))
    };
    let mut out = Vec::new();
    for item in side.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad(item, "empty"));
        }
        if Path::new(item).is_file() || item.parse::<i64>().is_ok() {
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
    Ok(ExitCode::Ok)
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
