//! The database schema and its migrations.
//!
//! `schema_version` holds one row `(app = 'storlab', version)`; a new
//! database starts at version 0 with only that table. Migration
//! `i` in [`MIGRATIONS`] takes a database from version `i` to `i + 1`; on
//! open every missing migration runs, in one transaction. Nothing is written
//! before the file is known to be a storlab database of a version this
//! storlab reads.

use super::StoreError;
use rusqlite::{Connection, OptionalExtension};
use std::io::Read;
use std::path::Path;

/// The schema version this storlab writes (and the newest it reads).
pub const VERSION: u32 = 6;

/// What `schema_version.app` holds in a storlab database.
pub const APP: &str = "storlab";

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub const MIGRATIONS: [&str; VERSION as usize] = [
    // 0 → 1: the first schema.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        record_schema TEXT NOT NULL,
        record_version INTEGER NOT NULL,
        command TEXT NOT NULL,          -- JSON array: argv
        environment TEXT NOT NULL,      -- JSON: Environment
        started_unix REAL NOT NULL,
        finished_unix REAL,
        status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'error')),
        complete INTEGER NOT NULL,
        interrupted INTEGER NOT NULL,
        error TEXT
     );
     CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        profile TEXT,                   -- JSON: Profile or null
        UNIQUE (run_id, seq)
     );
     CREATE TABLE points (
        id INTEGER PRIMARY KEY,
        job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('measuring', 'done')),
        label TEXT NOT NULL,
        target TEXT NOT NULL,           -- the targets joined by ' + '
        targets TEXT NOT NULL,          -- JSON array
        spec TEXT NOT NULL,             -- JSON: Spec
        backend TEXT NOT NULL,
        threads INTEGER NOT NULL,
        started_unix REAL NOT NULL,
        prepared TEXT NOT NULL,         -- JSON array of PreparedFile
        measured TEXT,                  -- JSON: Snapshot (null while measuring)
        summary TEXT,                   -- JSON: Summary (null while measuring)
        hosts TEXT NOT NULL,            -- JSON array of HostResult (each host's own series)
        lab_layout TEXT,                -- JSON: the lab layout, when the run records one
        interrupted INTEGER NOT NULL,
        error TEXT,
        UNIQUE (job_id, seq)
     );
     CREATE TABLE intervals (
        point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        phase TEXT NOT NULL CHECK (phase IN ('ramp', 'measure')),
        start_s REAL NOT NULL,
        seconds REAL NOT NULL,
        stats TEXT NOT NULL,            -- JSON: Snapshot
        cpu TEXT NOT NULL,              -- JSON: CpuSample
        PRIMARY KEY (point_id, idx)
     );
     CREATE TABLE workers (
        point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        grp TEXT NOT NULL,
        vm INTEGER NOT NULL,
        worker INTEGER NOT NULL,
        stats TEXT NOT NULL,            -- JSON: Snapshot
        PRIMARY KEY (point_id, seq)
     );
     CREATE INDEX points_label ON points (label);",
    // 1 → 2: a comparison's target names, baseline, server CPU and lab layout.
    "ALTER TABLE runs ADD COLUMN compare TEXT;           -- JSON: CompareInfo, or NULL",
    // 2 → 3: the lab's link counters beside each interval.
    "ALTER TABLE intervals ADD COLUMN net TEXT;          -- JSON array of NetSample, or NULL",
    // 3 → 4: what the steady-state gate found.
    "ALTER TABLE points ADD COLUMN steady TEXT;          -- JSON: SteadyOutcome, or NULL",
    // 4 → 5: `storlab meta` runs (the metadata mix and the large-file copy).
    "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'block'
        CHECK (kind IN ('block', 'meta', 'copy'));
     CREATE TABLE meta_runs (
        run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        target TEXT NOT NULL,
        client TEXT NOT NULL,
        place TEXT NOT NULL,            -- the run directory (meta) or the file (copy)
        spec TEXT NOT NULL,             -- JSON: kind and what was asked (MetaResult::spec)
        seconds REAL NOT NULL,          -- the mix's measured time; the copy's, both ways
        phases TEXT,                    -- JSON: set-up, clean-up, bytes (meta); NULL (copy)
        error TEXT
     );
     CREATE TABLE meta_ops (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        op TEXT NOT NULL,               -- create, write, ...; write and read (copy)
        count INTEGER NOT NULL,         -- operations (blocks, copy) done
        errors INTEGER NOT NULL,
        seconds REAL NOT NULL,
        ops_per_s REAL NOT NULL,
        mb_per_s REAL,                  -- the copy only
        mean_us REAL NOT NULL,
        p50_us REAL NOT NULL,
        p90_us REAL NOT NULL,
        p99_us REAL NOT NULL,
        p999_us REAL NOT NULL,
        max_us REAL NOT NULL,
        histogram TEXT NOT NULL,        -- JSON: LatHist
        PRIMARY KEY (run_id, seq)
     );",
    // 5 → 6: what bound each load point.
    "ALTER TABLE points ADD COLUMN bound TEXT;           -- JSON: Bound, or NULL",
];

/// What a new database starts from: version 0, only the version table.
const VERSION_TABLE: &str =
    "CREATE TABLE schema_version (app TEXT NOT NULL, version INTEGER NOT NULL);
     INSERT INTO schema_version (app, version) VALUES ('storlab', 0);";

/// The first 16 bytes of every SQLite 3 database.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Refuse a non-empty file that does not start like an SQLite database,
/// before SQLite gets a chance to touch it.
pub(super) fn check_header(path: &Path) -> Result<(), StoreError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut head = Vec::with_capacity(16);
    (&mut f)
        .take(16)
        .read_to_end(&mut head)
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if head.is_empty() || head.as_slice() == SQLITE_MAGIC {
        return Ok(());
    }
    Err(StoreError::NotSqlite {
        path: path.to_path_buf(),
        detail: "the file does not start with the SQLite header".into(),
    })
}

/// Check the database and bring it to [`VERSION`].
pub(super) fn prepare(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let not_sqlite = |e: rusqlite::Error| StoreError::NotSqlite {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut st| {
            st.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(not_sqlite)?;
    let db_err = |what: &str, e: rusqlite::Error| StoreError::Db {
        path: path.to_path_buf(),
        what: what.to_string(),
        detail: e.to_string(),
    };
    let found = if tables.is_empty() {
        0
    } else if !tables.iter().any(|t| t == "schema_version") {
        let shown: Vec<&str> = tables.iter().take(5).map(|s| s.as_str()).collect();
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!("it has tables {} and no schema_version", shown.join(", ")),
        });
    } else {
        let row: Option<(String, i64)> = conn
            .query_row("SELECT app, version FROM schema_version", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| StoreError::Foreign {
                path: path.to_path_buf(),
                detail: format!("unreadable schema_version table: {e}"),
            })?;
        match row {
            Some((app, v)) if app == APP && v >= 0 => v as u32,
            Some((app, _)) => {
                return Err(StoreError::Foreign {
                    path: path.to_path_buf(),
                    detail: format!("schema_version belongs to {app:?}"),
                });
            }
            None => {
                return Err(StoreError::Foreign {
                    path: path.to_path_buf(),
                    detail: "empty schema_version table".into(),
                });
            }
        }
    };
    if found > VERSION {
        return Err(StoreError::Newer {
            path: path.to_path_buf(),
            found,
            supported: VERSION,
        });
    }
    if found < VERSION {
        let tx = conn
            .unchecked_transaction()
            .map_err(|e| db_err("starting the schema migration", e))?;
        if tables.is_empty() {
            tx.execute_batch(VERSION_TABLE)
                .map_err(|e| db_err("creating the schema_version table", e))?;
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.execute_batch(sql)
                .map_err(|e| db_err(&format!("migrating the schema to version {}", i + 1), e))?;
        }
        tx.execute("UPDATE schema_version SET version = ?1", [VERSION])
            .map_err(|e| db_err("recording the schema version", e))?;
        tx.commit()
            .map_err(|e| db_err("committing the schema migration", e))?;
    }
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .map_err(|e| db_err("enabling foreign keys", e))?;
    Ok(())
}
