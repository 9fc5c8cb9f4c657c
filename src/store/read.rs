//! Reading runs back: the list of runs, and one run as the same
//! [`RunRecord`] that was stored. A point that never finished (storlab was
//! killed while it measured) is rebuilt from the intervals that were saved
//! and marked interrupted.

use super::write::MixPhases;
use super::{RunId, Store, StoreError};
use crate::model::meta::{
    CopyPhase, CopyReport, FORMAT_VERSION, Latency, MetaReport, MetaResult, MetaSpec, OpResult,
};
use crate::model::{IntervalRecord, Phase, PointResult, WorkerResult};
use crate::model::{JobRecord, RunRecord};
use crate::plan::WorkerId;
use crate::stats::{LatHist, Snapshot, Summary};
use rusqlite::Row;
use serde::de::DeserializeOwned;

/// How a run ended, as the database records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Never finished: still running, or storlab was killed (incomplete).
    Running,
    /// Every job ran.
    Complete,
    /// Ended early by the user; what was measured is kept.
    Interrupted,
    /// Ended early by an error; what was measured is kept.
    Error,
}

impl RunStatus {
    /// The word shown by `storlab results list`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "incomplete",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Error => "error",
        }
    }

    fn parse(s: &str) -> RunStatus {
        match s {
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "error" => RunStatus::Error,
            _ => RunStatus::Running,
        }
    }
}

/// One line of `storlab results list`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// The run's id.
    pub id: RunId,
    /// Unix time it started.
    pub started_unix: f64,
    /// How it ended.
    pub status: RunStatus,
    /// The command line.
    pub command: Vec<String>,
    /// Host it measured from.
    pub hostname: String,
    /// Job names, in order.
    pub jobs: Vec<String>,
    /// Load points recorded.
    pub points: u64,
    /// Distinct targets, in order of first use.
    pub targets: Vec<String>,
    /// "block" (load points), "meta" (the metadata mix) or "copy" (the
    /// large-file copy).
    pub kind: String,
}

impl Store {
    fn decode<T: DeserializeOwned>(&self, what: &str, text: &str) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|e| self.err(format!("decoding {what}"), e))
    }

    /// Every row `sql` selects with `params`, each read by `row`; `what` names
    /// the reading in an error.
    fn rows<T>(
        &self,
        what: &str,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&Row) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut st = self.conn.prepare(sql).map_err(|e| self.err(what, e))?;
        st.query_map(params, row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(what, e))
    }

    fn strings(&self, sql: &str, id: i64, what: &str) -> Result<Vec<String>, StoreError> {
        self.rows(what, sql, [id], |r| r.get::<_, String>(0))
    }

    /// Every run, oldest first.
    pub fn list_runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let what = "listing runs";
        type ListRow = (i64, f64, String, String, String, String);
        let rows: Vec<ListRow> = self.rows(
            what,
            "SELECT id, started_unix, status, command, environment, kind FROM runs ORDER BY id",
            [],
            |r| ListRow::try_from(r),
        )?;
        let mut out = Vec::new();
        for (id, started_unix, status, command, env, kind) in rows {
            let env: serde_json::Value = self.decode("the environment", &env)?;
            let points: i64 = self
                .conn
                .query_row(
                    "SELECT COUNT(*) FROM points p JOIN jobs j ON p.job_id = j.id WHERE j.run_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .map_err(|e| self.err(what, e))?;
            out.push(RunInfo {
                id: RunId(id),
                started_unix,
                status: RunStatus::parse(&status),
                command: self.decode("the command", &command)?,
                hostname: env["hostname"].as_str().unwrap_or("").to_string(),
                jobs: self.strings(
                    "SELECT name FROM jobs WHERE run_id = ?1 ORDER BY seq",
                    id,
                    what,
                )?,
                points: points as u64,
                targets: [
                    self.strings(
                        "SELECT p.target FROM points p JOIN jobs j ON p.job_id = j.id
                         WHERE j.run_id = ?1 GROUP BY p.target ORDER BY MIN(p.id)",
                        id,
                        what,
                    )?,
                    self.strings("SELECT target FROM meta_runs WHERE run_id = ?1", id, what)?,
                ]
                .concat(),
                kind,
            });
        }
        Ok(out)
    }

    /// The run `id`, as it was stored.
    pub fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        let what = format!("reading run {id}");
        type RunRow = (
            String,
            u32,
            String,
            String,
            f64,
            bool,
            bool,
            Option<String>,
            Option<String>,
        );
        let row: Option<RunRow> = self
            .rows(
                &what,
                "SELECT record_schema, record_version, command, environment, started_unix,
                        complete, interrupted, error, compare FROM runs WHERE id = ?1",
                [id.0],
                |r| RunRow::try_from(r),
            )?
            .pop();
        let Some((
            schema,
            version,
            command,
            env,
            started_unix,
            complete,
            interrupted,
            error,
            compare,
        )) = row
        else {
            return Err(StoreError::NoRun {
                path: self.path.clone(),
                id,
            });
        };
        let meta = self.load_meta(id, &what)?;
        let mut jobs = Vec::new();
        type JobRow = (i64, String, String, Option<String>);
        let job_rows: Vec<JobRow> = self.rows(
            &what,
            "SELECT id, name, description, profile FROM jobs WHERE run_id = ?1 ORDER BY seq",
            [id.0],
            |r| JobRow::try_from(r),
        )?;
        for (job_id, name, description, profile) in job_rows {
            jobs.push(JobRecord {
                points: self.load_points(job_id, &what)?,
                name,
                description,
                profile: profile
                    .map(|p| self.decode("a job profile", &p))
                    .transpose()?,
            });
        }
        Ok(RunRecord {
            schema,
            schema_version: version,
            command: self.decode("the command", &command)?,
            started_unix,
            environment: self.decode("the environment", &env)?,
            jobs,
            interrupted,
            error,
            complete,
            compare: compare
                .map(|c| self.decode("the comparison", &c))
                .transpose()?,
            meta,
        })
    }

    /// What a `storlab meta` run measured, as it was recorded; `None` for
    /// any other run.
    fn load_meta(&self, id: RunId, what: &str) -> Result<Option<MetaResult>, StoreError> {
        type MetaRow = (
            String,
            String,
            String,
            String,
            f64,
            Option<String>,
            Option<String>,
        );
        let row: Option<MetaRow> = self
            .rows(
                what,
                "SELECT target, client, place, spec, seconds, phases, error
                 FROM meta_runs WHERE run_id = ?1",
                [id.0],
                |r| MetaRow::try_from(r),
            )?
            .pop();
        let Some((target, client, place, spec, seconds, phases, error)) = row else {
            return Ok(None);
        };
        let ops: Vec<StoredOp> = self.rows(
            what,
            "SELECT op, count, errors, seconds, ops_per_s, mb_per_s, mean_us, p50_us, p90_us,
                    p99_us, p999_us, max_us, histogram
             FROM meta_ops WHERE run_id = ?1 ORDER BY seq",
            [id.0],
            StoredOp::from_row,
        )?;
        let mut ops = ops
            .into_iter()
            .map(|o| {
                let h = self.decode("an operation's histogram", &o.histogram)?;
                Ok((o, h))
            })
            .collect::<Result<Vec<(StoredOp, LatHist)>, StoreError>>()?;
        let spec: MetaSpec = self.decode("the meta spec", &spec)?;
        Ok(Some(match spec {
            MetaSpec::Meta(spec) => {
                let p: MixPhases = self.decode(
                    "the set-up and clean-up",
                    phases.as_deref().unwrap_or("null"),
                )?;
                let total_ops: u64 = ops.iter().map(|(o, _)| o.count).sum();
                MetaResult::Meta(MetaReport {
                    format_version: FORMAT_VERSION,
                    target,
                    client,
                    run_dir: place,
                    spec,
                    seconds,
                    setup: p.setup,
                    ops: ops
                        .into_iter()
                        .map(|(o, histogram)| OpResult {
                            latency: o.latency(),
                            op: o.op,
                            count: o.count,
                            errors: o.errors,
                            ops_per_s: o.ops_per_s,
                            histogram,
                        })
                        .collect(),
                    total_ops,
                    total_ops_per_s: if seconds > 0.0 {
                        total_ops as f64 / seconds
                    } else {
                        0.0
                    },
                    bytes_read: p.bytes_read,
                    bytes_written: p.bytes_written,
                    cleanup: p.cleanup,
                    error,
                })
            }
            MetaSpec::Copy { size, block_size } => {
                let mut phase = |dir: &str| {
                    let i = ops.iter().position(|(o, _)| o.op == dir).ok_or_else(|| {
                        self.err(what, format!("the copy's {dir} row is missing"))
                    })?;
                    let (o, histogram) = ops.swap_remove(i);
                    Ok::<_, StoreError>(CopyPhase {
                        seconds: o.seconds,
                        mb_per_s: o.mb_per_s.unwrap_or(0.0),
                        blocks: o.count,
                        errors: o.errors,
                        latency: o.latency(),
                        histogram,
                    })
                };
                let write = phase("write")?;
                let read = phase("read")?;
                MetaResult::Copy(CopyReport {
                    format_version: FORMAT_VERSION,
                    target,
                    client,
                    file: place,
                    size,
                    block_size,
                    write,
                    read,
                    error,
                })
            }
        }))
    }

    fn load_points(&self, job_id: i64, what: &str) -> Result<Vec<PointResult>, StoreError> {
        let rows: Vec<PointRow> = self.rows(
            what,
            "SELECT id, state, label, targets, spec, backend, threads, started_unix, prepared,
                        measured, summary, interrupted, error, hosts, steady, bound
                 FROM points WHERE job_id = ?1 ORDER BY seq",
            [job_id],
            PointRow::from_row,
        )?;
        rows.into_iter().map(|r| self.point(r, what)).collect()
    }

    fn point(&self, r: PointRow, what: &str) -> Result<PointResult, StoreError> {
        let intervals = self.intervals(r.id, what)?;
        let done = r.state == "done";
        let (measured, summary) = match (done, r.measured, r.summary) {
            (true, Some(m), Some(s)) => (
                self.decode("measured stats", &m)?,
                self.decode("a summary", &s)?,
            ),
            _ => {
                // Never finished: derive what the saved intervals support.
                let m: Vec<(Snapshot, f64, crate::stats::CpuSample)> = intervals
                    .iter()
                    .filter(|i| i.phase == Phase::Measure)
                    .map(|i| (i.stats.clone(), i.seconds, i.cpu.clone()))
                    .collect();
                (m.iter().map(|(s, _, _)| s).sum(), Summary::compute(&m))
            }
        };
        Ok(PointResult {
            label: r.label,
            spec: self.decode("a spec", &r.spec)?,
            targets: self.decode("the targets", &r.targets)?,
            backend: r.backend,
            threads: r.threads as usize,
            started_unix: r.started_unix,
            prepared: self.decode("prepared files", &r.prepared)?,
            intervals,
            workers: self.workers(r.id, what)?,
            measured,
            summary,
            interrupted: r.interrupted || !done,
            error: r.error,
            hosts: self.decode("host series", &r.hosts)?,
            steady: r
                .steady
                .map(|s| self.decode("the steady-state outcome", &s))
                .transpose()?,
            bound: r
                .bound
                .map(|b| self.decode("what bound the point", &b))
                .transpose()?,
        })
    }

    fn intervals(&self, point: i64, what: &str) -> Result<Vec<IntervalRecord>, StoreError> {
        type IvRow = (u32, String, f64, f64, String, String, Option<String>);
        let rows: Vec<IvRow> = self.rows(
            what,
            "SELECT idx, phase, start_s, seconds, stats, cpu, net FROM intervals
                 WHERE point_id = ?1 ORDER BY idx",
            [point],
            |r| IvRow::try_from(r),
        )?;
        rows.into_iter()
            .map(|(index, phase, start_s, seconds, stats, cpu, net)| {
                Ok(IntervalRecord {
                    index,
                    phase: if phase == "ramp" {
                        Phase::Ramp
                    } else {
                        Phase::Measure
                    },
                    start_s,
                    seconds,
                    stats: self.decode("interval stats", &stats)?,
                    cpu: self.decode("interval CPU", &cpu)?,
                    net: match net {
                        Some(n) => self.decode("interval network counters", &n)?,
                        None => Vec::new(),
                    },
                })
            })
            .collect()
    }

    fn workers(&self, point: i64, what: &str) -> Result<Vec<WorkerResult>, StoreError> {
        type WorkerRow = (String, u32, u32, String);
        let rows: Vec<WorkerRow> = self.rows(
            what,
            "SELECT grp, vm, worker, stats FROM workers WHERE point_id = ?1 ORDER BY seq",
            [point],
            |r| WorkerRow::try_from(r),
        )?;
        rows.into_iter()
            .map(|(group, vm, worker, stats)| {
                Ok(WorkerResult {
                    id: WorkerId { group, vm, worker },
                    stats: self.decode("worker stats", &stats)?,
                })
            })
            .collect()
    }
}

/// One row of the points table.
struct PointRow {
    id: i64,
    state: String,
    label: String,
    targets: String,
    spec: String,
    backend: String,
    threads: i64,
    started_unix: f64,
    prepared: String,
    measured: Option<String>,
    summary: Option<String>,
    interrupted: bool,
    error: Option<String>,
    hosts: String,
    steady: Option<String>,
    bound: Option<String>,
}

impl PointRow {
    fn from_row(r: &Row) -> rusqlite::Result<PointRow> {
        Ok(PointRow {
            id: r.get(0)?,
            state: r.get(1)?,
            label: r.get(2)?,
            targets: r.get(3)?,
            spec: r.get(4)?,
            backend: r.get(5)?,
            threads: r.get(6)?,
            started_unix: r.get(7)?,
            prepared: r.get(8)?,
            measured: r.get(9)?,
            summary: r.get(10)?,
            interrupted: r.get(11)?,
            error: r.get(12)?,
            hosts: r.get(13)?,
            steady: r.get(14)?,
            bound: r.get(15)?,
        })
    }
}

/// One row of the meta_ops table.
struct StoredOp {
    op: String,
    count: u64,
    errors: u64,
    seconds: f64,
    ops_per_s: f64,
    mb_per_s: Option<f64>,
    lat: [f64; 6],
    histogram: String,
}

impl StoredOp {
    fn from_row(r: &Row) -> rusqlite::Result<StoredOp> {
        Ok(StoredOp {
            op: r.get(0)?,
            count: r.get::<_, i64>(1)? as u64,
            errors: r.get::<_, i64>(2)? as u64,
            seconds: r.get(3)?,
            ops_per_s: r.get(4)?,
            mb_per_s: r.get(5)?,
            lat: [
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
                r.get(11)?,
            ],
            histogram: r.get(12)?,
        })
    }

    fn latency(&self) -> Latency {
        let [mean_us, p50_us, p90_us, p99_us, p999_us, max_us] = self.lat;
        Latency {
            mean_us,
            p50_us,
            p90_us,
            p99_us,
            p999_us,
            max_us,
        }
    }
}
