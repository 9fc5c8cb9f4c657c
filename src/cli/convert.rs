//! `storlab convert`: a foreign job file (fio's, Iometer's) printed as the
//! storlab TOML job file that runs the same workload (`storlab run --job`).

use super::{CliError, ExitCode, session::import_error};
use crate::workload::{fio, icf};
use std::path::PathBuf;

/// Arguments of `storlab convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The file: a fio job file (JOB.fio) or an Iometer configuration (FILE.icf).
    pub file: PathBuf,
    /// Its format; default: icf for a .icf file, else fio.
    #[arg(long, value_enum)]
    pub from: Option<Format>,
}

/// A foreign job-file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// fio's INI job file.
    Fio,
    /// Iometer's saved configuration.
    Icf,
}

/// Print the converted job file on stdout.
pub fn run(args: ConvertArgs) -> Result<ExitCode, CliError> {
    let icf_ext = args
        .file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("icf"));
    let imported = match args.from {
        Some(Format::Icf) => icf::load(&args.file),
        None if icf_ext => icf::load(&args.file),
        _ => fio::load(&args.file),
    }
    .map_err(import_error)?;
    print!("{}", imported.to_toml());
    Ok(ExitCode::Ok)
}
