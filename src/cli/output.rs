//! Where the result commands read and write: the results database the user
//! names (or the default one), run ids as typed, and output to a file or
//! standard output. Shared by `results`, `report` and `results diff`.

use super::CliError;
use crate::model::write_atomic;
use crate::store::{self, RunId, Store};
use std::path::{Path, PathBuf};

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
