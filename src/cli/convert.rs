//! `storlab convert`: a foreign job file (fio's, Iometer's) printed as the
//! storlab TOML job file that runs the same workload (`storlab run --job`).

use super::{CliError, ExitCode, session::import_error};
use crate::workload::fio;
use std::path::PathBuf;

/// Arguments of `storlab convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The file: a fio job file (JOB.fio).
    pub file: PathBuf,
}

/// Print the converted job file on stdout.
pub fn run(args: ConvertArgs) -> Result<ExitCode, CliError> {
    let imported = fio::load(&args.file).map_err(import_error)?;
    print!("{}", imported.to_toml());
    Ok(ExitCode::Ok)
}
