//! `storlab report RUN...`: one report over runs from the database or
//! `--json` files, every target relative to a baseline target.

use super::output::{emit, open_store, parse_run_id};
use super::{CliError, ExitCode};
use crate::model::RunRecord;
use crate::report::html;
use crate::report::markdown::{self, ReportOptions};
use crate::report::relative::{Comparison, Source};
use crate::store::Store;
use clap::ValueEnum;
use std::path::{Path, PathBuf};

/// Arguments of `storlab report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Runs: ids from the results database or paths of `storlab run --json` files.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Target every figure is relative to (= 100); default: the first target seen.
    #[arg(long, value_name = "TARGET")]
    pub baseline: Option<String>,
    /// Output file (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format (default: from the -o extension: .md markdown, .csv csv, else html).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Latency bound of "max IOPS with p99 under X" (e.g. 5ms, 500us, 0.02s).
    #[arg(long, value_name = "TIME", default_value = "5ms")]
    pub p99_under: String,
    /// Which results database.
    #[command(flatten)]
    pub db: super::DbArg,
}

/// Formats of `storlab report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained page with charts.
    Html,
    /// The tables as Markdown.
    Markdown,
    /// Every figure in long form.
    Csv,
}

/// A duration such as "5ms", "500us", "0.02s" or "5" (ms), in ms.
pub fn parse_ms(s: &str) -> Result<f64, CliError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "us" | "µs" => 1e-3,
        "ns" => 1e-6,
        "s" => 1e3,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if scale.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(CliError::input(format!(
            "invalid --p99-under {s:?} (allowed: a positive time such as 5ms, 500us, 0.02s)"
        ))),
    }
}

/// Load one RUN: a `--json` file if such a file exists, `git:REV:PATH` for
/// one as a git revision has it, else a run id.
pub(super) fn load(
    run: &str,
    db: Option<&Path>,
    store: &mut Option<Store>,
) -> Result<Source, CliError> {
    load_raw(run, db, store).map(|s| Source {
        run: s.run.with_target_names(),
        ..s
    })
}

fn load_raw(run: &str, db: Option<&Path>, store: &mut Option<Store>) -> Result<Source, CliError> {
    if let Some(spec) = run.strip_prefix("git:") {
        let text = git_show(run, spec)?;
        let rec = RunRecord::from_json(&text, run).map_err(CliError::input)?;
        return Ok(Source {
            name: run.to_string(),
            run: rec,
        });
    }
    let path = Path::new(run);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::input(format!("cannot read {run}: {e}")))?;
        let rec = RunRecord::from_json(&text, run).map_err(CliError::input)?;
        return Ok(Source {
            name: run.to_string(),
            run: rec,
        });
    }
    let id = parse_run_id(run).map_err(|_| {
        CliError::input(format!(
            "RUN {run:?} is neither a file nor a run id (see `storlab results list`)"
        ))
    })?;
    if store.is_none() {
        *store = Some(open_store(db)?);
    }
    let s = store.as_ref().expect("opened above");
    let rec = s.load_run(id).map_err(|e| CliError::input(e.to_string()))?;
    Ok(Source {
        name: format!("run {id}"),
        run: rec,
    })
}

/// The text of `git:REV:PATH` (`spec` is `REV:PATH`): the file as revision
/// REV of the git repository around the working directory has it (`git show
/// REV:PATH`; PATH from the repository's top, or `./PATH` from here).
fn git_show(item: &str, spec: &str) -> Result<String, CliError> {
    let bad = |why: String| CliError::input(format!("cannot read {item}: {why}"));
    let Some((rev, path)) = spec
        .split_once(':')
        .filter(|(r, p)| !r.is_empty() && !p.is_empty())
    else {
        return Err(bad(
            "expected git:REV:PATH, such as git:HEAD~1:results/run.json".into(),
        ));
    };
    if rev.starts_with('-') {
        return Err(bad(format!("{rev:?} is not a revision")));
    }
    let o = std::process::Command::new("git")
        .args(["show", &format!("{rev}:{path}")])
        .output()
        .map_err(|e| bad(format!("running git: {e}")))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let line = err.lines().next().unwrap_or("git show failed").trim();
        return Err(bad(format!("git show {rev}:{path}: {line}")));
    }
    String::from_utf8(o.stdout).map_err(|_| bad("the file is not UTF-8 text".into()))
}

/// Run `storlab report`.
pub fn run(args: ReportArgs) -> Result<ExitCode, CliError> {
    let opts = ReportOptions {
        p99_under_ms: parse_ms(&args.p99_under)?,
    };
    let format = args.format.unwrap_or_else(|| {
        match args
            .output
            .as_deref()
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
        {
            Some("md") | Some("markdown") => ReportFormat::Markdown,
            Some("csv") => ReportFormat::Csv,
            _ => ReportFormat::Html,
        }
    });
    let mut store = None;
    let sources = args
        .runs
        .iter()
        .map(|r| load(r, args.db.path.as_deref(), &mut store))
        .collect::<Result<Vec<_>, _>>()?;
    let c = Comparison::new(sources, args.baseline.as_deref()).map_err(CliError::input)?;
    let text = match format {
        ReportFormat::Html => html::render(&c, &opts),
        ReportFormat::Markdown => markdown::render(&c, &opts),
        ReportFormat::Csv => crate::report::csv::comparison(&c),
    };
    emit(args.output.as_deref(), text.as_bytes())?;
    if let Some(p) = &args.output {
        eprintln!("storlab: wrote {}", p.display());
    }
    Ok(ExitCode::Ok)
}
