//! `storlab results list|show|export`: the runs in the results database.

use super::diff::DiffArgs;
use super::output::{emit, open_store, parse_run_id};
use super::{CliError, ExitCode};
use crate::report::markdown::{fmt_time, shell_line, status};
use crate::report::{csv, text};
use crate::store;
use clap::{Subcommand, ValueEnum};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `storlab results`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("db", |a| a.global(true)))]
pub struct ResultsArgs {
    /// Which results database (global: given before or after the subcommand).
    #[command(flatten)]
    pub db: super::DbArg,
    /// What to do.
    #[command(subcommand)]
    pub sub: ResultsCmd,
}

/// `storlab results` subcommands.
#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List every run: id, start, kind (block, meta, copy), status, jobs, points, targets.
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

/// Formats of `storlab results export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The run document (schema storlab.run), as `storlab run --json` writes it.
    Json,
    /// One row per interval, as `storlab run --csv` writes it (a `storlab meta`
    /// run: one row per operation type).
    Csv,
}

/// Run `storlab results`.
pub fn run(args: ResultsArgs) -> Result<ExitCode, CliError> {
    let sub = match args.sub {
        ResultsCmd::Diff(d) => return super::diff::run(&d, args.db.path.as_deref()),
        other => other,
    };
    let store = open_store(args.db.path.as_deref())?;
    let fail = |e: store::StoreError| CliError::failed(e.to_string());
    let mut out = String::new();
    match sub {
        ResultsCmd::List => {
            let runs = store.list_runs().map_err(fail)?;
            if runs.is_empty() {
                let _ = writeln!(out, "no runs in {}", store.path().display());
            }
            for r in runs {
                // A meta run has no load points or jobs: its kind says what it is.
                let what = if r.kind == "block" {
                    format!("{} point(s)  {}", r.points, r.jobs.join(", "))
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "{:>5}  {}  {:<5}  {:<11}  {what}  [{}]  {}",
                    r.id.0,
                    fmt_time(r.started_unix),
                    r.kind,
                    r.status.as_str(),
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
            if let Some(m) = &rec.meta {
                out.push_str(&crate::report::meta::text(&rec, m));
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
                ExportFormat::Csv => match &rec.meta {
                    Some(m) => crate::report::meta::csv(m).into_bytes(),
                    None => csv::intervals(&rec).into_bytes(),
                },
            };
            emit(output.as_deref(), &bytes)?;
        }
        ResultsCmd::Diff(_) => {}
    }
    emit(None, out.as_bytes())?;
    Ok(ExitCode::Ok)
}
