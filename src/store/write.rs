//! Writing runs: whole records, or a run as it is measured through
//! [`RunWriter`], an [`Observer`] that saves every interval the moment the
//! runner finalises it, so an interrupted run keeps what it measured.

use super::{JobId, PointId, RunId, Store, StoreError};
use crate::model::meta::{MetaResult, OpRow, Phase as MetaPhase};
use crate::model::{IntervalRecord, Phase, PointResult};
use crate::model::{JobRecord, RunRecord};
use crate::runner::Observer;
use crate::workload::Spec;
use rusqlite::params;
use serde::{Deserialize, Serialize};

/// Unix time now, seconds.
fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The status column of a run record: [`RunRecord::status`], with a run
/// that has not ended yet recorded as "running".
fn status(run: &RunRecord) -> &'static str {
    match run.status() {
        "incomplete" => "running",
        s => s,
    }
}

impl Store {
    /// JSON text of `v`, or an error naming `what`.
    fn json<T: Serialize + ?Sized>(&self, what: &str, v: &T) -> Result<String, StoreError> {
        serde_json::to_string(v).map_err(|e| self.err(format!("encoding {what}"), e))
    }

    /// Run `f` atomically: inside a savepoint, so calls nest.
    fn atomic<T>(
        &self,
        what: &str,
        f: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.conn
            .execute_batch("SAVEPOINT storlab_write")
            .map_err(|e| self.err(what, e))?;
        match f() {
            Ok(v) => {
                self.conn
                    .execute_batch("RELEASE storlab_write")
                    .map_err(|e| self.err(what, e))?;
                Ok(v)
            }
            Err(e) => {
                let _ = self
                    .conn
                    .execute_batch("ROLLBACK TO storlab_write; RELEASE storlab_write");
                Err(e)
            }
        }
    }

    /// Record a new run with any jobs and points `run` already holds.
    pub fn begin_run(&self, run: &RunRecord) -> Result<RunId, StoreError> {
        self.atomic("recording a run", || self.insert_run(run))
    }

    fn insert_run(&self, run: &RunRecord) -> Result<RunId, StoreError> {
        self.conn.execute(
            "INSERT INTO runs (record_schema, record_version, command, environment, started_unix,
                               status, complete, interrupted, error, kind)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                run.schema,
                run.schema_version,
                self.json("the command", &run.command)?,
                self.json("the environment", &run.environment)?,
                run.started_unix,
                status(run),
                run.complete,
                run.interrupted,
                run.error,
                run.kind(),
            ],
        )
        .map_err(|e| self.err("recording a run", e))?;
        let id = RunId(self.conn.last_insert_rowid());
        if let Some(m) = &run.meta {
            self.put_meta(id, m)?;
        }
        for job in &run.jobs {
            let jid = self.begin_job(id, job)?;
            for p in &job.points {
                self.add_point(id, jid, p)?;
            }
        }
        Ok(id)
    }

    /// Record a job of `run` (its points are added separately).
    pub fn begin_job(&self, run: RunId, job: &JobRecord) -> Result<JobId, StoreError> {
        self.conn
            .execute(
                "INSERT INTO jobs (run_id, seq, name, description, profile)
                 VALUES (?1, (SELECT COUNT(*) FROM jobs WHERE run_id = ?1), ?2, ?3, ?4)",
                params![
                    run.0,
                    job.name,
                    job.description,
                    job.profile
                        .map(|p| self.json("the profile", &p))
                        .transpose()?,
                ],
            )
            .map_err(|e| self.err(format!("recording job {:?} of run {run}", job.name), e))?;
        Ok(JobId(self.conn.last_insert_rowid()))
    }

    /// Record a point that starts measuring now: its intervals follow
    /// through [`Store::add_interval`], its results through
    /// [`Store::finish_point`]. Until then it reads back as interrupted.
    pub fn begin_point(
        &self,
        job: JobId,
        spec: &Spec,
        targets: &[String],
    ) -> Result<PointId, StoreError> {
        self.conn
            .execute(
                "INSERT INTO points (job_id, seq, state, label, target, targets, spec, backend,
                                     threads, started_unix, prepared, hosts, interrupted)
                 VALUES (?1, (SELECT COUNT(*) FROM points WHERE job_id = ?1), 'measuring',
                         ?2, ?3, ?4, ?5, '', 0, ?6, '[]', '[]', 1)",
                params![
                    job.0,
                    spec.label,
                    targets.join(" + "),
                    self.json("the targets", targets)?,
                    self.json("the spec", spec)?,
                    now_unix(),
                ],
            )
            .map_err(|e| self.err(format!("recording load point {:?}", spec.label), e))?;
        Ok(PointId(self.conn.last_insert_rowid()))
    }

    /// Record one interval of a point.
    pub fn add_interval(&self, point: PointId, rec: &IntervalRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO intervals (point_id, idx, phase, start_s, seconds, stats, cpu, net)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    point.0,
                    rec.index,
                    match rec.phase {
                        Phase::Ramp => "ramp",
                        Phase::Measure => "measure",
                    },
                    rec.start_s,
                    rec.seconds,
                    self.json("interval stats", &rec.stats)?,
                    self.json("interval CPU", &rec.cpu)?,
                    if rec.net.is_empty() {
                        None
                    } else {
                        Some(self.json("interval network counters", &rec.net)?)
                    },
                ],
            )
            .map_err(|e| self.err(format!("recording interval {}", rec.index), e))?;
        Ok(())
    }

    /// Complete a point begun with [`Store::begin_point`]: its results replace
    /// what was recorded while it measured.
    pub fn finish_point(&self, point: PointId, p: &PointResult) -> Result<(), StoreError> {
        let what = format!("recording load point {:?}", p.label);
        self.atomic(&what, || self.update_point(point, p, &what))
    }

    fn update_point(&self, point: PointId, p: &PointResult, what: &str) -> Result<(), StoreError> {
        let tx = &self.conn;
        tx.execute(
            "UPDATE points SET state = 'done', label = ?2, target = ?3, targets = ?4, spec = ?5,
                    backend = ?6, threads = ?7, started_unix = ?8, prepared = ?9, measured = ?10,
                    summary = ?11, interrupted = ?12, error = ?13, hosts = ?14, steady = ?15,
                    bound = ?16
             WHERE id = ?1",
            params![
                point.0,
                p.label,
                p.targets.join(" + "),
                self.json("the targets", &p.targets)?,
                self.json("the spec", &p.spec)?,
                p.backend,
                p.threads as i64,
                p.started_unix,
                self.json("prepared files", &p.prepared)?,
                self.json("measured stats", &p.measured)?,
                self.json("the summary", &p.summary)?,
                p.interrupted,
                p.error,
                self.json("host series", &p.hosts)?,
                p.steady
                    .as_ref()
                    .map(|s| self.json("the steady-state outcome", s))
                    .transpose()?,
                p.bound
                    .as_ref()
                    .map(|b| self.json("what bound the point", b))
                    .transpose()?,
            ],
        )
        .map_err(|e| self.err(what, e))?;
        for table in ["intervals", "workers"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE point_id = ?1"),
                [point.0],
            )
            .map_err(|e| self.err(what, e))?;
        }
        for rec in &p.intervals {
            self.add_interval(point, rec)?;
        }
        for (seq, w) in p.workers.iter().enumerate() {
            tx.execute(
                "INSERT INTO workers (point_id, seq, grp, vm, worker, stats)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    point.0,
                    seq as i64,
                    w.id.group,
                    w.id.vm,
                    w.id.worker,
                    self.json("worker stats", &w.stats)?,
                ],
            )
            .map_err(|e| self.err(what, e))?;
        }
        Ok(())
    }

    /// Record a whole point of `job` (which must belong to `run`).
    pub fn add_point(
        &self,
        run: RunId,
        job: JobId,
        p: &PointResult,
    ) -> Result<PointId, StoreError> {
        let owner: i64 = self
            .conn
            .query_row("SELECT run_id FROM jobs WHERE id = ?1", [job.0], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(format!("looking up job {} of run {run}", job.0), e))?;
        if owner != run.0 {
            return Err(self.err(
                format!("recording load point {:?}", p.label),
                format!("job {} belongs to run {owner}, not run {run}", job.0),
            ));
        }
        let id = self.begin_point(job, &p.spec, &p.targets)?;
        self.finish_point(id, p)?;
        Ok(id)
    }

    /// Record what a `storlab meta` run measured (replacing what was
    /// recorded before): one `meta_runs` row and a `meta_ops` row per
    /// operation type (per direction, for the copy).
    pub fn put_meta(&self, run: RunId, m: &MetaResult) -> Result<(), StoreError> {
        let what = format!("recording the {} results of run {run}", m.kind());
        self.atomic(&what, || self.write_meta(run, m, &what))
    }

    fn write_meta(&self, run: RunId, m: &MetaResult, what: &str) -> Result<(), StoreError> {
        let (place, seconds, phases, error) = match m {
            MetaResult::Meta(r) => (
                r.run_dir.as_str(),
                r.seconds,
                Some(self.json(
                    "the set-up and clean-up",
                    &MixPhases {
                        setup: r.setup.clone(),
                        cleanup: r.cleanup.clone(),
                        bytes_read: r.bytes_read,
                        bytes_written: r.bytes_written,
                    },
                )?),
                r.error.as_deref(),
            ),
            MetaResult::Copy(r) => (
                r.file.as_str(),
                r.write.seconds + r.read.seconds,
                None,
                r.error.as_deref(),
            ),
        };
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta_runs (run_id, target, client, place, spec, seconds,
                                                  phases, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run.0,
                    m.target(),
                    m.client(),
                    place,
                    self.json("the spec", &m.spec())?,
                    seconds,
                    phases,
                    error,
                ],
            )
            .map_err(|e| self.err(what, e))?;
        self.conn
            .execute("DELETE FROM meta_ops WHERE run_id = ?1", [run.0])
            .map_err(|e| self.err(what, e))?;
        // Every operation type of the mix (those that never ran too), so the
        // run reads back as it was measured.
        let rows: Vec<OpRow> = m.all_rows();
        for (seq, o) in rows.iter().enumerate() {
            let l = o.latency;
            self.conn
                .execute(
                    "INSERT INTO meta_ops (run_id, seq, op, count, errors, seconds, ops_per_s,
                                           mb_per_s, mean_us, p50_us, p90_us, p99_us, p999_us,
                                           max_us, histogram)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    params![
                        run.0,
                        seq as i64,
                        o.op,
                        o.count as i64,
                        o.errors as i64,
                        o.seconds,
                        o.ops_per_s,
                        o.mb_per_s,
                        l.mean_us,
                        l.p50_us,
                        l.p90_us,
                        l.p99_us,
                        l.p999_us,
                        l.max_us,
                        self.json("an operation's histogram", o.histogram)?,
                    ],
                )
                .map_err(|e| self.err(what, e))?;
        }
        Ok(())
    }

    /// Record how the run ended (complete, interrupted, error), with a
    /// `storlab meta` run's results.
    pub fn finish_run(&self, run: RunId, rec: &RunRecord) -> Result<(), StoreError> {
        if let Some(m) = &rec.meta {
            self.put_meta(run, m)?;
        }
        let n = self
            .conn
            .execute(
                "UPDATE runs SET status = ?2, complete = ?3, interrupted = ?4, error = ?5,
                        finished_unix = ?6, compare = ?7, environment = ?8 WHERE id = ?1",
                params![
                    run.0,
                    status(rec),
                    rec.complete,
                    rec.interrupted,
                    rec.error,
                    now_unix(),
                    rec.compare
                        .as_ref()
                        .map(|c| self.json("the comparison", c))
                        .transpose()?,
                    self.json("the environment", &rec.environment)?,
                ],
            )
            .map_err(|e| self.err(format!("finishing run {run}"), e))?;
        if n == 0 {
            return Err(StoreError::NoRun {
                path: self.path.clone(),
                id: run,
            });
        }
        Ok(())
    }
}

/// What `meta_runs.phases` holds for the metadata mix: what is outside the
/// per-operation rows.
#[derive(Serialize, Deserialize)]
pub(super) struct MixPhases {
    pub(super) setup: MetaPhase,
    pub(super) cleanup: Option<MetaPhase>,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
}

/// Writes one run into the store as it is measured.
///
/// Call [`RunWriter::job`] before each job's points, pass the writer (alone
/// or in a [`Tee`]) as the runner's observer, call [`RunWriter::point_done`]
/// with each point the runner returns and [`RunWriter::finish`] at the end.
/// Observer callbacks cannot fail, so a write error there is kept: the
/// runner hears of it at once through [`Observer::failure`] and ends the
/// point (the run then stops), and the next `point_done` or `finish` returns
/// it; later callbacks do nothing.
pub struct RunWriter<'s> {
    store: &'s Store,
    run: RunId,
    targets: Vec<String>,
    job: Option<JobId>,
    point: Option<PointId>,
    error: Option<StoreError>,
    /// The kept error was handed to the runner ([`Observer::failure`]).
    reported: bool,
}

impl<'s> RunWriter<'s> {
    /// Record `run` (normally still empty) and measure into it; `targets` are
    /// the targets every point uses, saved with a point as it starts.
    pub fn begin(
        store: &'s Store,
        run: &RunRecord,
        targets: Vec<String>,
    ) -> Result<RunWriter<'s>, StoreError> {
        Ok(RunWriter {
            run: store.begin_run(run)?,
            store,
            targets,
            job: None,
            point: None,
            error: None,
            reported: false,
        })
    }

    /// The targets the points that follow use (a comparison changes them per target).
    pub fn set_targets(&mut self, targets: Vec<String>) {
        self.targets = targets;
    }

    /// The run's id.
    pub fn run_id(&self) -> RunId {
        self.run
    }

    /// Start a job; the points that follow belong to it.
    pub fn job(&mut self, job: &JobRecord) -> Result<(), StoreError> {
        self.check()?;
        self.job = Some(self.store.begin_job(self.run, job)?);
        self.point = None;
        Ok(())
    }

    /// The first error a callback kept, if any.
    fn check(&mut self) -> Result<(), StoreError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A point the runner returned: complete the row its intervals went into
    /// (or add it whole when it never started measuring).
    pub fn point_done(&mut self, p: &PointResult) -> Result<(), StoreError> {
        self.check()?;
        let job = self.job.ok_or_else(|| {
            self.store.err(
                format!("recording load point {:?}", p.label),
                "no job was started (call RunWriter::job first)",
            )
        })?;
        match self.point.take() {
            Some(id) => self.store.finish_point(id, p),
            None => self.store.add_point(self.run, job, p).map(|_| ()),
        }
    }

    /// Record how the run ended.
    pub fn finish(mut self, run: &RunRecord) -> Result<RunId, StoreError> {
        let kept = self.check();
        self.store.finish_run(self.run, run)?;
        kept.map(|_| self.run)
    }
}

impl Observer for RunWriter<'_> {
    fn point_started(&mut self, spec: &Spec, _intervals: u32) {
        if self.error.is_some() {
            return;
        }
        let Some(job) = self.job else {
            return;
        };
        match self.store.begin_point(job, spec, &self.targets) {
            Ok(id) => self.point = Some(id),
            Err(e) => self.error = Some(e),
        }
    }

    fn interval(&mut self, _spec: &Spec, rec: &IntervalRecord, _intervals: u32) {
        if self.error.is_some() {
            return;
        }
        if let Some(id) = self.point
            && let Err(e) = self.store.add_interval(id, rec)
        {
            self.error = Some(e);
        }
    }

    fn failure(&mut self) -> Option<String> {
        let e = self.error.as_ref().filter(|_| !self.reported)?;
        self.reported = true;
        Some(format!(
            "saving to the results database failed: {e}; the run stops here"
        ))
    }
}

/// Passes every callback to two observers (live progress and the store).
pub struct Tee<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Tee<'_> {
    fn point_started(&mut self, spec: &Spec, intervals: u32) {
        self.0.point_started(spec, intervals);
        self.1.point_started(spec, intervals);
    }
    fn interval(&mut self, spec: &Spec, rec: &IntervalRecord, intervals: u32) {
        self.0.interval(spec, rec, intervals);
        self.1.interval(spec, rec, intervals);
    }
    fn host_interval(&mut self, host: &str, rec: &IntervalRecord) {
        self.0.host_interval(host, rec);
        self.1.host_interval(host, rec);
    }
    fn failure(&mut self) -> Option<String> {
        match (self.0.failure(), self.1.failure()) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }
    fn note(&mut self, msg: &str) {
        self.0.note(msg);
        self.1.note(msg);
    }
}
