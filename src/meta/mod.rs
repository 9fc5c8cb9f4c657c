//! The file and metadata workload (`storlab meta`): many small files in a
//! tree of directories, driven by a mix of file operations from worker
//! threads, each operation type timed into its own latency histogram; and
//! the copy of one large file to the store and back ([`copy`]).
//!
//! # A run
//! 1. **Run directory.** Everything happens in one subdirectory of the
//!    target's directory, which storlab makes (`--name`, default
//!    `storlab-meta-SECS-PID`). An existing one is used only when it is
//!    empty, or with `reuse` (then storlab adds its own subdirectories beside
//!    what is there, each made exclusively, so a name already taken fails).
//! 2. **Set-up.** `dirs` directories `dNNNN`, then `files` files per
//!    directory of `file_size` bytes each (`fNNNNNNN`), created by the
//!    workers (file `i` by worker `i % threads`), timed as the set-up phase.
//! 3. **Mix.** For `runtime`, every worker draws operations from the mix.
//!    A worker operates only on the files it created (so no worker removes
//!    a file another reads); creates go to a random directory with a fresh
//!    name, listings to any directory. An operation on a file when the
//!    worker holds none becomes a create. Each operation is timed around
//!    its file-operation calls (create, write and read include open and
//!    close).
//! 4. **Clean-up.** Each worker removes the files it created; then the
//!    directories and the run directory (when storlab made it) are removed.
//!    Nothing else is ever removed: every file storlab removes it created
//!    exclusively in a directory it made. `keep` skips this step.
//!
//! The first failed operation stops every worker; the clean-up still runs,
//! and the error names the operation, the path and the target.

pub mod copy;
pub mod mix;

use crate::backends::open_fs;
use crate::io::fsops::{FileOps, FsError, OpenMode};
use crate::stats::{Histogram, LatHist};
use crate::target::Target;
use crate::workload::pattern::Rng;
use mix::{Mix, Op};
use std::sync::Barrier;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use crate::model::meta::{FORMAT_VERSION, Latency, MetaReport, MixSpec, OpResult, Phase};

/// Where a run works: its directory under the target's.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The run directory's name (one path component).
    pub name: String,
    /// Use an existing non-empty directory of that name (adding only
    /// storlab's own entries to it).
    pub reuse: bool,
    /// Leave what the run created in place.
    pub keep: bool,
}

impl RunDir {
    /// The default name: `storlab-meta-SECS-PID`, unique per process.
    pub fn default_name() -> String {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!("storlab-meta-{secs}-{}", std::process::id())
    }

    /// Check a `--name`: one path component, no `.` or `..`.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Err(format!(
                "invalid --name \"{name}\" (allowed: one directory name, without / , . or ..)"
            ));
        }
        Ok(())
    }
}

/// What a metadata run does.
#[derive(Clone, Debug)]
pub struct MetaSpec {
    /// Directories of the tree (at least 1).
    pub dirs: u32,
    /// Files created per directory at set-up (0 allowed: the mix creates).
    pub files: u32,
    /// Bytes of every file.
    pub file_size: u64,
    /// The operation mix.
    pub mix: Mix,
    /// Worker threads, each with its own client (at least 1).
    pub threads: u32,
    /// How long the mix runs.
    pub runtime: Duration,
    /// The run directory.
    pub run_dir: RunDir,
    /// Seed of the workers' draws.
    pub seed: u64,
    /// Set from outside (SIGINT) to end the set-up or the mix early; the
    /// clean-up still runs.
    pub interrupt: Option<&'static AtomicBool>,
}

/// One file a worker created: in directory `dir`, number `id`, under its
/// first name or its renamed one.
#[derive(Clone, Copy, Debug)]
struct FileRef {
    dir: u32,
    id: u64,
    renamed: bool,
}

/// A directory's path in the run directory.
fn dir_path(run: &str, dir: u32) -> String {
    format!("{run}/d{dir:04}")
}

impl FileRef {
    fn path_as(&self, run: &str, renamed: bool) -> String {
        let r = if renamed { ".r" } else { "" };
        format!("{}/f{:07}{r}", dir_path(run, self.dir), self.id)
    }

    fn path(&self, run: &str) -> String {
        self.path_as(run, self.renamed)
    }
}

/// Why a run did not complete: one line.
#[derive(Debug, PartialEq, Eq)]
pub enum MetaError {
    /// Something the user must change (a run directory in the way).
    Input(String),
    /// The storage or the server failed (results were not complete).
    Failed(String),
}

impl std::fmt::Display for MetaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaError::Input(m) | MetaError::Failed(m) => f.write_str(m),
        }
    }
}

/// A run that did not complete: why, and what it measured before the
/// failure or the interruption (`None` when it ended before measuring).
#[derive(Debug)]
pub struct Failure<R> {
    /// Why.
    pub error: MetaError,
    /// What was measured, with its `error` field set to the same line.
    pub measured: Option<Box<R>>,
}

impl<R> From<MetaError> for Failure<R> {
    fn from(error: MetaError) -> Self {
        Failure {
            error,
            measured: None,
        }
    }
}

impl<R> std::fmt::Display for Failure<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Make the run directory `d.name` in the target's directory, or take an
/// existing one that is empty (or any, with `reuse`): whether storlab made it.
pub fn claim_run_dir(fs: &mut dyn FileOps, url: &str, d: &RunDir) -> Result<bool, MetaError> {
    match fs.mkdir(&d.name) {
        Ok(()) => return Ok(true),
        Err(e) if e.errno == libc::EEXIST => {}
        Err(e) => {
            return Err(MetaError::Failed(format!(
                "cannot make the run directory: {e}"
            )));
        }
    }
    let a = fs.stat(&d.name).map_err(|e| MetaError::Failed(e.message))?;
    if !a.dir {
        return Err(MetaError::Input(format!(
            "{} in {url} exists and is not a directory: give another --name",
            d.name
        )));
    }
    let n = fs
        .list(&d.name)
        .map_err(|e| MetaError::Failed(e.message))?
        .len();
    if n > 0 && !d.reuse {
        return Err(MetaError::Input(format!(
            "the run directory {} in {url} exists and holds {n} entries: storlab writes only \
             into directories it makes (give another --name, or --reuse-dir to add storlab's \
             own subdirectories beside them)",
            d.name
        )));
    }
    Ok(false)
}

/// Create `path` exclusively with `data`: open, write, close. `made` is
/// called once the file exists (so a failure later still leaves it known).
fn create(
    fs: &mut dyn FileOps,
    path: &str,
    data: &[u8],
    made: impl FnOnce(),
) -> Result<(), FsError> {
    let h = fs.open(path, OpenMode::Create)?;
    made();
    let w = fs.write_at(&h, 0, data);
    let c = fs.close(h);
    w.and(c)
}

/// What one worker measured.
struct WorkerOut {
    client: String,
    setup: Histogram,
    setup_secs: f64,
    hists: Vec<Histogram>,
    /// Failed operations per type.
    errors: Vec<u64>,
    mix: Option<(Instant, Instant)>,
    bytes_read: u64,
    bytes_written: u64,
    cleanup: Histogram,
    cleanup_secs: f64,
    /// The files it could not remove.
    left: Vec<String>,
    error: Option<String>,
}

/// What every worker shares.
struct Shared<'a> {
    target: &'a Target,
    spec: &'a MetaSpec,
    stop: AtomicBool,
    barrier: Barrier,
    first_error: Mutex<Option<String>>,
}

impl Shared<'_> {
    fn fail(&self, out: &mut WorkerOut, e: String) {
        self.stop.store(true, Ordering::SeqCst);
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(e.clone());
        }
        out.error = Some(e);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self
                .spec
                .interrupt
                .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

/// One worker: set-up share, mix, clean-up of its own files.
fn worker(t: u32, sh: &Shared) -> WorkerOut {
    let spec = sh.spec;
    let run = spec.run_dir.name.as_str();
    let mut out = WorkerOut {
        client: String::new(),
        setup: Histogram::new(),
        setup_secs: 0.0,
        hists: Op::ALL.iter().map(|_| Histogram::new()).collect(),
        errors: vec![0; Op::ALL.len()],
        mix: None,
        bytes_read: 0,
        bytes_written: 0,
        cleanup: Histogram::new(),
        cleanup_secs: 0.0,
        left: Vec::new(),
        error: None,
    };
    let mut fs = match open_fs(sh.target) {
        Ok(f) => Some(f),
        Err(e) => {
            sh.fail(&mut out, e);
            None
        }
    };
    let mut rng = Rng::new(spec.seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut data = vec![0u8; spec.file_size as usize];
    rng.fill_bytes(&mut data);
    let mut files: Vec<FileRef> = Vec::new();
    let tree = spec.dirs as u64 * spec.files as u64;
    // Set-up: this worker's share of the tree.
    if let Some(fs) = fs.as_deref_mut() {
        out.client = fs.describe();
        let t0 = Instant::now();
        for id in (t as u64..tree).step_by(spec.threads as usize) {
            if sh.stopped() {
                break;
            }
            let f = FileRef {
                dir: (id / spec.files as u64) as u32,
                id,
                renamed: false,
            };
            let s = Instant::now();
            match create(fs, &f.path(run), &data, || files.push(f)) {
                Ok(()) => out.setup.record(s.elapsed().as_nanos() as u64),
                Err(e) => {
                    sh.fail(&mut out, format!("set-up: {e}"));
                    break;
                }
            }
        }
        out.setup_secs = t0.elapsed().as_secs_f64();
    }
    sh.barrier.wait();
    // The mix.
    if let Some(fs) = fs.as_deref_mut()
        && !sh.stopped()
    {
        let mut next_id = tree + t as u64;
        let mut buf = vec![0u8; data.len()];
        let start = Instant::now();
        let deadline = start + spec.runtime;
        while !sh.stopped() && Instant::now() < deadline {
            let op = Mix::feasible(spec.mix.pick(rng.below(spec.mix.total())), files.len());
            let pick = if files.is_empty() {
                0
            } else {
                rng.below(files.len() as u64) as usize
            };
            let s = Instant::now();
            let r = match op {
                Op::Create => {
                    let f = FileRef {
                        dir: rng.below(spec.dirs as u64) as u32,
                        id: next_id,
                        renamed: false,
                    };
                    next_id += spec.threads as u64;
                    let r = create(fs, &f.path(run), &data, || files.push(f));
                    out.bytes_written += data.len() as u64;
                    r
                }
                Op::Write => {
                    let p = files[pick].path(run);
                    fs.open(&p, OpenMode::Write).and_then(|h| {
                        let w = fs.write_at(&h, 0, &data);
                        let c = fs.close(h);
                        out.bytes_written += data.len() as u64;
                        w.and(c)
                    })
                }
                Op::Read => {
                    let p = files[pick].path(run);
                    fs.open(&p, OpenMode::Read).and_then(|h| {
                        let r = fs.read_at(&h, 0, &mut buf);
                        let c = fs.close(h);
                        let n = r?;
                        c?;
                        out.bytes_read += n as u64;
                        if n != buf.len() {
                            return Err(FsError::new(
                                libc::EIO,
                                format!("read {p}: {n} bytes of the {} written", buf.len()),
                            ));
                        }
                        Ok(())
                    })
                }
                Op::Stat => {
                    let p = files[pick].path(run);
                    fs.stat(&p).and_then(|a| {
                        if a.size == spec.file_size && !a.dir {
                            Ok(())
                        } else {
                            Err(FsError::new(
                                libc::EIO,
                                format!(
                                    "stat {p}: size {} where {} was written",
                                    a.size, spec.file_size
                                ),
                            ))
                        }
                    })
                }
                Op::Rename => {
                    let f = &mut files[pick];
                    let (from, to) = (f.path(run), f.path_as(run, !f.renamed));
                    let r = fs.rename(&from, &to);
                    if r.is_ok() {
                        f.renamed = !f.renamed;
                    }
                    r
                }
                Op::Delete => {
                    let r = fs.remove(&files[pick].path(run));
                    if r.is_ok() {
                        files.swap_remove(pick);
                    }
                    r
                }
                Op::List => {
                    let d = rng.below(spec.dirs as u64) as u32;
                    fs.list(&dir_path(run, d)).map(|_| ())
                }
            };
            let ns = s.elapsed().as_nanos() as u64;
            match r {
                Ok(()) => out.hists[op.index()].record(ns),
                Err(e) => {
                    out.errors[op.index()] += 1;
                    sh.fail(&mut out, format!("{}: {e}", op.name()));
                    break;
                }
            }
        }
        out.mix = Some((start, Instant::now()));
    }
    sh.barrier.wait();
    // Clean-up: the files this worker created (under either name; a file
    // whose last operation failed may be under either, or gone).
    if let Some(fs) = fs.as_deref_mut()
        && !spec.run_dir.keep
    {
        let t0 = Instant::now();
        for f in &files {
            let s = Instant::now();
            let r = fs.remove(&f.path(run)).or_else(|e| {
                if e.errno == libc::ENOENT {
                    fs.remove(&f.path_as(run, !f.renamed))
                } else {
                    Err(e)
                }
            });
            match r {
                Ok(()) => out.cleanup.record(s.elapsed().as_nanos() as u64),
                Err(e) if e.errno == libc::ENOENT => {}
                Err(_) => out.left.push(f.path(run)),
            }
        }
        out.cleanup_secs = t0.elapsed().as_secs_f64();
    } else if fs.is_none() {
        out.left.extend(files.iter().map(|f| f.path(run)));
    }
    out
}

fn phase(h: &LatHist, seconds: f64) -> Phase {
    Phase {
        files: h.count(),
        seconds,
        ops_per_s: if seconds > 0.0 {
            h.count() as f64 / seconds
        } else {
            0.0
        },
        latency: Latency::of(h),
    }
}

/// Run the metadata workload on the directory `target` names (see the
/// module docs). The error is one line naming what failed and what the
/// clean-up left, if anything.
///
/// A run that fails (or is interrupted, see [`MetaSpec::interrupt`]) after
/// it started measuring gives back what it measured: on failure in
/// [`Failure::measured`], with the error line in its `error` field.
pub fn run(target: &Target, spec: &MetaSpec) -> Result<MetaReport, Failure<MetaReport>> {
    let url = target.to_string();
    if spec.dirs == 0 || spec.threads == 0 {
        return Err(MetaError::Input(
            "the metadata workload needs at least one directory and one thread".into(),
        )
        .into());
    }
    let mut fs = open_fs(target).map_err(MetaError::Failed)?;
    let run = spec.run_dir.name.as_str();
    let made_run = claim_run_dir(fs.as_mut(), &url, &spec.run_dir)?;
    let mut made_dirs = Vec::new();
    let mut err = None;
    for d in 0..spec.dirs {
        match fs.mkdir(&dir_path(run, d)) {
            Ok(()) => made_dirs.push(d),
            Err(e) => {
                err = Some(format!("set-up: {e}"));
                break;
            }
        }
    }
    let outs: Vec<WorkerOut> = if err.is_some() {
        Vec::new()
    } else {
        let sh = Shared {
            target,
            spec,
            stop: AtomicBool::new(false),
            barrier: Barrier::new(spec.threads as usize),
            first_error: Mutex::new(None),
        };
        let outs = std::thread::scope(|s| {
            let hs: Vec<_> = (0..spec.threads)
                .map(|t| {
                    let sh = &sh;
                    std::thread::Builder::new()
                        .name(format!("meta-{t}"))
                        .spawn_scoped(s, move || worker(t, sh))
                        .expect("spawn a worker thread")
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("a worker panicked"))
                .collect()
        });
        err = sh
            .first_error
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        outs
    };
    // Remove the directories (and the run directory, if storlab made it).
    let mut left: Vec<String> = outs.iter().flat_map(|o| o.left.clone()).collect();
    if !spec.run_dir.keep {
        for d in &made_dirs {
            let p = dir_path(run, *d);
            if fs.rmdir(&p).is_err() {
                left.push(p);
            }
        }
        if made_run && fs.rmdir(run).is_err() {
            left.push(run.to_string());
        }
    }
    if let Some(e) = err {
        let tail = if spec.run_dir.keep {
            format!("; the run directory {run} was kept (--keep)")
        } else if left.is_empty() {
            String::new()
        } else {
            format!(
                "; clean-up left {} entries storlab created in {run} (first: {})",
                left.len(),
                left[0]
            )
        };
        err = Some(format!("{e}{tail}"));
    } else if !left.is_empty() {
        err = Some(format!(
            "clean-up could not remove {} entries storlab created in {run} of {url} (first: {})",
            left.len(),
            left[0]
        ));
    }
    let mut r = report(target, spec, fs.describe(), &outs);
    match err {
        None => Ok(r),
        Some(e) => {
            r.error = Some(e.clone());
            Err(Failure {
                error: MetaError::Failed(e),
                measured: Some(Box::new(r)),
            })
        }
    }
}

/// The report of a run that has measured nothing yet: its target and
/// spec, every count 0 (what the results database holds while it runs).
pub fn planned(target: &Target, spec: &MetaSpec) -> MetaReport {
    report(target, spec, String::new(), &[])
}

/// The report of the workers' measurements.
fn report(target: &Target, spec: &MetaSpec, client: String, outs: &[WorkerOut]) -> MetaReport {
    let merged = |f: &dyn Fn(&WorkerOut) -> &Histogram| {
        outs.iter().fold(LatHist::default(), |mut a, o| {
            a += &f(o).snapshot();
            a
        })
    };
    let first = outs.iter().filter_map(|o| o.mix).map(|m| m.0).min();
    let last = outs.iter().filter_map(|o| o.mix).map(|m| m.1).max();
    let seconds = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let rate = |n: u64| {
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    };
    let ops: Vec<OpResult> = Op::ALL
        .iter()
        .map(|op| {
            let h = merged(&|o: &WorkerOut| &o.hists[op.index()]);
            OpResult {
                op: op.name().to_string(),
                count: h.count(),
                errors: outs.iter().map(|o| o.errors[op.index()]).sum(),
                ops_per_s: rate(h.count()),
                latency: Latency::of(&h),
                histogram: h,
            }
        })
        .collect();
    let total_ops = ops.iter().map(|o| o.count).sum();
    let slowest = |f: &dyn Fn(&WorkerOut) -> f64| outs.iter().map(f).fold(0.0, f64::max);
    MetaReport {
        format_version: FORMAT_VERSION,
        target: target.to_string(),
        client: outs
            .iter()
            .map(|o| o.client.clone())
            .find(|c| !c.is_empty())
            .unwrap_or(client),
        run_dir: spec.run_dir.name.clone(),
        spec: MixSpec {
            dirs: spec.dirs,
            files_per_dir: spec.files,
            file_size: spec.file_size,
            threads: spec.threads,
            mix: spec.mix.to_string(),
            runtime_s: spec.runtime.as_secs_f64(),
        },
        seconds,
        setup: phase(
            &merged(&|o: &WorkerOut| &o.setup),
            slowest(&|o| o.setup_secs),
        ),
        ops,
        total_ops,
        total_ops_per_s: rate(total_ops),
        bytes_read: outs.iter().map(|o| o.bytes_read).sum(),
        bytes_written: outs.iter().map(|o| o.bytes_written).sum(),
        cleanup: (!spec.run_dir.keep).then(|| {
            phase(
                &merged(&|o: &WorkerOut| &o.cleanup),
                slowest(&|o| o.cleanup_secs),
            )
        }),
        error: None,
    }
}

/// A latency in µs for the text table: 4 significant digits or so.
fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The text summary of a metadata run.
pub fn text(r: &MetaReport) -> String {
    let mut s = format!(
        "storlab meta on {}\n  client: {}\n  tree: {} dirs x {} files of {} bytes in {}, {} threads, mix {}\n",
        r.target,
        r.client,
        r.spec.dirs,
        r.spec.files_per_dir,
        r.spec.file_size,
        r.run_dir,
        r.spec.threads,
        r.spec.mix
    );
    s += &format!(
        "  set-up: {} files created in {:.2} s ({:.0} creates/s, mean {} µs)\n",
        r.setup.files,
        r.setup.seconds,
        r.setup.ops_per_s,
        us(r.setup.latency.mean_us)
    );
    s += &format!(
        "  {:<7} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}   (latency µs)\n",
        "op", "ops", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max"
    );
    for o in &r.ops {
        if o.count == 0 {
            continue;
        }
        let l = &o.latency;
        s += &format!(
            "  {:<7} {:>9} {:>10.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            o.op,
            o.count,
            o.ops_per_s,
            us(l.mean_us),
            us(l.p50_us),
            us(l.p90_us),
            us(l.p99_us),
            us(l.p999_us),
            us(l.max_us)
        );
    }
    s += &format!(
        "  {:<7} {:>9} {:>10.1}   in {:.2} s\n",
        "total", r.total_ops, r.total_ops_per_s, r.seconds
    );
    match &r.cleanup {
        Some(c) => {
            s += &format!(
                "  clean-up: {} files removed in {:.2} s ({:.0} removes/s), then the {} directories\n",
                c.files, c.seconds, c.ops_per_s, r.spec.dirs
            )
        }
        None => s += &format!("  kept: {} (--keep)\n", r.run_dir),
    }
    s
}
