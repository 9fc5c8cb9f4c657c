//! `storlab results list|show|export`: the runs in the results database.

use super::{CliError, ExitCode};
use crate::report::markdown::{fmt_time, shell_line, status};
use crate::report::{csv, text};
use crate::result::write_atomic;
use crate::store::{self, RunId, Store};
use clap::{Subcommand, ValueEnum};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `storlab results`.
#[derive(clap::Args, Debug)]
pub struct ResultsArgs {
    /// Results database (default: $STORLAB_DB, else ~/.local/share/storlab/results.db).
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub sub: ResultsCmd,
}

/// `storlab results` subcommands.
#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List every run: id, start, status, jobs, points, targets.
    List,
    /// Print a run's summary tables.
    Show {
        /// Run id (see `storlab results list`).
        run: String,
    },
    /// Write a run as the `--json` document or the interval CSV.
    Export {
        /// Run id (see `storlab results list`).
        run: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
        /// Output file (default: standard output).
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compare runs over time: each figure's change and whether it is beyond the noise.
    Diff(DiffArgs),
}

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

/// Formats of `storlab results export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The run document (schema storlab.run), as `storlab run --json` writes it.
    Json,
    /// One row per interval, as `storlab run --csv` writes it.
    Csv,
}

/// The database file: `--db`, else the default location.
pub fn db_path(db: Option<&Path>) -> Result<PathBuf, CliError> {
    match db {
        Some(p) => Ok(p.to_path_buf()),
        None => store::default_path().ok_or_else(|| {
            CliError::input(format!(
                "no results database: pass --db PATH or set {} (HOME is not set either)",
                store::DB_ENV
            ))
        }),
    }
}

/// Open the database `--db` names (or the default one).
pub fn open_store(db: Option<&Path>) -> Result<Store, CliError> {
    let path = db_path(db)?;
    Store::open(&path).map_err(|e| CliError::input(e.to_string()))
}

/// A run id as the user typed it.
pub fn parse_run_id(s: &str) -> Result<RunId, CliError> {
    s.trim().parse::<i64>().map(RunId).map_err(|_| {
        CliError::input(format!(
            "invalid run id {s:?} (expected a number from `storlab results list`)"
        ))
    })
}

/// Write `bytes` to `output`, or to standard output.
pub fn emit(output: Option<&Path>, bytes: &[u8]) -> Result<(), CliError> {
    match output {
        Some(p) => write_atomic(p, bytes)
            .map_err(|e| CliError::failed(format!("cannot write {}: {e}", p.display()))),
        None => {
            use std::io::Write;
            match std::io::stdout().write_all(bytes) {
                // A closed pipe (`| head`) is the reader's choice, not a failure.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::failed(
                    format!("cannot write to standard output: {e}"),
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Run `storlab results`.
pub fn run(args: ResultsArgs) -> Result<ExitCode, CliError> {
    let sub = match args.sub {
        ResultsCmd::Diff(d) => return super::diff::run(&d, args.db.as_deref()),
        other => other,
    };
    let store = open_store(args.db.as_deref())?;
    let fail = |e: store::StoreError| CliError::failed(e.to_string());
    let mut out = String::new();
    match sub {
        ResultsCmd::List => {
            let runs = store.list_runs().map_err(fail)?;
            if runs.is_empty() {
                let _ = writeln!(out, "no runs in {}", store.path().display());
            }
            for r in runs {
                let _ = writeln!(
                    out,
                    "{:>5}  {}  {:<11}  {} point(s)  {}  [{}]  {}",
                    r.id.0,
                    fmt_time(r.started_unix),
                    r.status.as_str(),
                    r.points,
                    r.jobs.join(", "),
                    r.targets.join(", "),
                    shell_line(&r.command)
                );
            }
        }
        ResultsCmd::Show { run } => {
            let id = parse_run_id(&run)?;
            let rec = store
                .load_run(id)
                .map_err(|e| CliError::input(e.to_string()))?;
            let _ = writeln!(
                out,
                "run {id}: {} on {}, {}\n{}",
                fmt_time(rec.started_unix),
                rec.environment.hostname,
                status(&rec),
                shell_line(&rec.command)
            );
            if let Some(e) = &rec.error {
                let _ = writeln!(out, "ended by an error: {e}");
            }
            for job in rec.jobs.iter().filter(|j| !j.points.is_empty()) {
                out.push_str(&text::job_summary(job));
            }
        }
        ResultsCmd::Export {
            run,
            format,
            output,
        } => {
            let id = parse_run_id(&run)?;
            let rec = store
                .load_run(id)
                .map_err(|e| CliError::input(e.to_string()))?;
            let bytes = match format {
                ExportFormat::Json => serde_json::to_vec_pretty(&rec)
                    .map_err(|e| CliError::failed(format!("encoding run {id} as JSON: {e}")))?,
                ExportFormat::Csv => csv::intervals(&rec).into_bytes(),
            };
            emit(output.as_deref(), &bytes)?;
        }
        ResultsCmd::Diff(_) => {}
    }
    emit(None, out.as_bytes())?;
    Ok(ExitCode::Ok)
}
