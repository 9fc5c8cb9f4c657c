//! The results database: every run, job, load point, interval and worker in
//! one SQLite file, written as the run measures (see [`write::RunWriter`]) and
//! read back as the same [`RunRecord`](crate::model::RunRecord) a `--json`
//! file holds (see docs/results.md).
//!
//! The file lives at `$STORLAB_DB`, else `~/.local/share/storlab/results.db`
//! ([`default_path`]). Its schema is versioned ([`schema`]): an older
//! database is migrated on open; a newer one, a file that is not SQLite or a
//! SQLite file that is not storlab's is refused and left untouched.

pub mod read;
pub mod schema;
pub mod write;

use rusqlite::Connection;
use std::fmt;
use std::path::{Path, PathBuf};

pub use read::{RunInfo, RunStatus};
pub use write::{RunWriter, Tee};

/// The environment variable naming the database file.
pub const DB_ENV: &str = "STORLAB_DB";

/// Where the database lives unless `--db` says otherwise: `$STORLAB_DB`, else
/// `$HOME/.local/share/storlab/results.db`. `None` when neither is set.
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(DB_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/storlab/results.db"))
}

/// A run in the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

/// A job of a run in the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobId(pub i64);

/// A load point in the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why the database could not be opened, read or written. Every variant names
/// the file.
#[derive(Debug)]
pub enum StoreError {
    /// The file exists but is not an SQLite database (or is damaged).
    NotSqlite {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// An SQLite database, but not a storlab results database.
    Foreign {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// Written by a newer storlab.
    Newer {
        /// The file.
        path: PathBuf,
        /// Schema version in the file.
        found: u32,
        /// Newest version this storlab reads.
        supported: u32,
    },
    /// No run with that id.
    NoRun {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        id: RunId,
    },
    /// Creating the directory or reading the file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An SQLite or JSON failure while doing `what`.
    Db {
        /// The file.
        path: PathBuf,
        /// What storlab was doing.
        what: String,
        /// The underlying error.
        detail: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotSqlite { path, detail } => write!(
                f,
                "{}: not a storlab results database ({detail}); storlab leaves it unchanged: pass another file with --db or set {DB_ENV}",
                path.display()
            ),
            StoreError::Foreign { path, detail } => write!(
                f,
                "{}: an SQLite database but not a storlab results database ({detail}); storlab leaves it unchanged: pass another file with --db or set {DB_ENV}",
                path.display()
            ),
            StoreError::Newer {
                path,
                found,
                supported,
            } => write!(
                f,
                "{}: results database schema version {found} was written by a newer storlab; this storlab reads versions up to {supported} (upgrade storlab; the file was not changed)",
                path.display()
            ),
            StoreError::NoRun { path, id } => write!(
                f,
                "{}: no run {id} (see `storlab results list`)",
                path.display()
            ),
            StoreError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            StoreError::Db { path, what, detail } => {
                write!(f, "{}: {what}: {detail}", path.display())
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating it and its directory if missing) the database at
    /// `path`, migrating an older schema. Refuses, without writing, a file
    /// that is not a storlab results database or is from a newer storlab.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        schema::check_header(path)?;
        if !path.exists()
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| StoreError::NotSqlite {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        let _ = store.conn.busy_timeout(std::time::Duration::from_secs(10));
        schema::prepare(&store.conn, path)?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An error naming this file and what was being done.
    fn err(&self, what: impl Into<String>, e: impl fmt::Display) -> StoreError {
        StoreError::Db {
            path: self.path.clone(),
            what: what.into(),
            detail: e.to_string(),
        }
    }
}
