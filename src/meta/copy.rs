//! The large-file copy (`storlab meta --copy SIZE`): one file of SIZE
//! written to the store in blocks of `block_size` and made stable (fsync;
//! COMMIT over NFS), then, with the client's cache of it dropped, read back
//! block by block and checked; each phase timed whole (MB/s) and per block.
//! The file lives in a run directory storlab makes (as the metadata
//! workload's, [`super::claim_run_dir`]) and is removed afterwards with it.

use super::{Failure, Latency, MetaError, RunDir, claim_run_dir};
use crate::backends::open_fs;
use crate::io::fsops::{FileOps, FsError, OpenMode};
pub use crate::model::meta::{CopyPhase, CopyReport};
use crate::stats::Histogram;
use crate::target::Target;
use crate::workload::pattern::Rng;
use std::time::Instant;

/// What a copy does.
#[derive(Clone, Debug)]
pub struct CopySpec {
    /// Bytes of the file (at least one block).
    pub size: u64,
    /// Bytes per write and per read.
    pub block_size: u64,
    /// The run directory.
    pub run_dir: RunDir,
    /// Seed of the data written.
    pub seed: u64,
}

/// A direction's figures: `bytes` moved in `seconds`, `errors` blocks failed.
fn phase(h: &Histogram, bytes: u64, seconds: f64, errors: u64) -> CopyPhase {
    let histogram = h.snapshot();
    CopyPhase {
        seconds,
        mb_per_s: if seconds > 0.0 {
            bytes as f64 / 1e6 / seconds
        } else {
            0.0
        },
        blocks: histogram.count(),
        errors,
        latency: Latency::of(&histogram),
        histogram,
    }
}

/// One direction under way: each block's time, the bytes moved, since when.
struct Pass {
    h: Histogram,
    moved: u64,
    t0: Instant,
}

impl Pass {
    /// A direction starting now.
    fn start() -> Pass {
        Pass {
            h: Histogram::new(),
            moved: 0,
            t0: Instant::now(),
        }
    }

    /// Run `io` for one block, and record its time if it succeeds.
    fn time<T>(&mut self, io: impl FnOnce() -> Result<T, FsError>) -> Result<T, FsError> {
        let s = Instant::now();
        let r = io();
        if r.is_ok() {
            self.h.record(s.elapsed().as_nanos() as u64);
        }
        r
    }

    /// The direction's figures so far, `failed` if a block failed.
    fn phase(&self, failed: bool) -> CopyPhase {
        phase(
            &self.h,
            self.moved,
            self.t0.elapsed().as_secs_f64(),
            u64::from(failed),
        )
    }
}

/// What a copy measured: each direction as far as it got.
#[derive(Default)]
struct Measured {
    write: Option<CopyPhase>,
    read: Option<CopyPhase>,
}

/// The block `i` as written: the pattern with `i` in its first 8 bytes.
fn stamp(block: &mut [u8], i: u64) {
    let n = block.len().min(8);
    block[..n].copy_from_slice(&i.to_le_bytes()[..n]);
}

/// Write the file, read it back, check every block's stamp; each direction
/// goes into `m` as soon as it ends, however it ends (a failed block counted
/// in its `errors`), so a failure keeps what was measured before it.
fn copy_file(
    fs: &mut dyn FileOps,
    path: &str,
    spec: &CopySpec,
    made: &mut bool,
    m: &mut Measured,
) -> Result<(), FsError> {
    let bs = spec.block_size as usize;
    let mut block = vec![0u8; bs];
    Rng::new(spec.seed).fill_bytes(&mut block);
    let blocks = spec.size.div_ceil(spec.block_size);
    let len = |i: u64| (spec.size - i * spec.block_size).min(spec.block_size) as usize;
    let mut p = Pass::start();
    let f = fs.open(path, OpenMode::Create)?;
    *made = true;
    let mut w = Ok(());
    for i in 0..blocks {
        stamp(&mut block, i);
        w = p.time(|| fs.write_at(&f, i * spec.block_size, &block[..len(i)]));
        if w.is_err() {
            break;
        }
        p.moved += len(i) as u64;
    }
    let failed_block = w.is_err();
    let w = w.and_then(|_| fs.sync(&f));
    let c = fs.close(f);
    m.write = Some(p.phase(failed_block));
    w.and(c)?;
    fs.drop_cache(path)?;
    let mut p = Pass::start();
    let f = fs.open(path, OpenMode::Read)?;
    let mut r = Ok(());
    for i in 0..blocks {
        let n = match p.time(|| fs.read_at(&f, i * spec.block_size, &mut block[..len(i)])) {
            Ok(n) => n,
            Err(e) => {
                r = Err(e);
                break;
            }
        };
        let mut want = [0u8; 8];
        stamp(&mut want, i);
        let k = n.min(8);
        if n != len(i) || block[..k] != want[..k] {
            r = Err(FsError::new(
                libc::EIO,
                format!(
                    "read {path}: block {i} came back wrong ({n} of {} bytes, or not the data written)",
                    len(i)
                ),
            ));
            break;
        }
        p.moved += n as u64;
    }
    let c = fs.close(f);
    m.read = Some(p.phase(r.is_err()));
    r.and(c)
}

/// A direction that moved nothing.
fn nothing() -> CopyPhase {
    phase(&Histogram::new(), 0, 0.0, 0)
}

/// The report of a copy that has measured nothing yet: its target and spec
/// (what the results database holds while it runs).
pub fn planned(target: &Target, spec: &CopySpec) -> CopyReport {
    CopyReport {
        format_version: super::FORMAT_VERSION,
        target: target.to_string(),
        client: String::new(),
        file: format!("{}/copy.dat", spec.run_dir.name),
        size: spec.size,
        block_size: spec.block_size,
        write: nothing(),
        read: nothing(),
        error: None,
    }
}

/// Copy one large file to the directory `target` names and back (see the
/// module docs). The error names what failed and what was left, if anything;
/// a copy that fails after it opened its file gives back what it measured
/// in [`Failure::measured`] (a direction it never began has no blocks).
pub fn run(target: &Target, spec: &CopySpec) -> Result<CopyReport, Failure<CopyReport>> {
    let url = target.to_string();
    if spec.block_size == 0 || spec.size == 0 {
        return Err(MetaError::Input("--copy and --bs must be above 0".into()).into());
    }
    let mut fs = open_fs(target).map_err(MetaError::Failed)?;
    let run = spec.run_dir.name.as_str();
    let made_run = claim_run_dir(fs.as_mut(), &url, &spec.run_dir)?;
    let path = format!("{run}/copy.dat");
    let mut made = false;
    let mut m = Measured::default();
    let r = copy_file(fs.as_mut(), &path, spec, &mut made, &mut m);
    let mut left = Vec::new();
    if !spec.run_dir.keep {
        if made && fs.remove(&path).is_err() {
            left.push(path.clone());
        }
        if made_run && fs.rmdir(run).is_err() {
            left.push(run.to_string());
        }
    }
    let tail = if left.is_empty() {
        String::new()
    } else {
        format!("; clean-up could not remove {}", left.join(", "))
    };
    let error = match r {
        Err(e) => Some(format!("copy: {e}{tail}")),
        Ok(()) if !left.is_empty() => Some(format!("copy on {url}{tail}")),
        Ok(()) => None,
    };
    let report = CopyReport {
        client: fs.describe(),
        write: m.write.unwrap_or_else(nothing),
        read: m.read.unwrap_or_else(nothing),
        error: error.clone(),
        ..planned(target, spec)
    };
    match error {
        None => Ok(report),
        Some(e) => Err(Failure {
            error: MetaError::Failed(e),
            measured: made.then(|| Box::new(report)),
        }),
    }
}

/// The text summary of a copy.
pub fn text(r: &CopyReport) -> String {
    let line = |what: &str, p: &CopyPhase| {
        format!(
            "  {what:<5} {:>10.2} MB/s  {:>8.3} s  {:>7} blocks  latency µs: mean {:.1}, p99 {:.1}, max {:.1}\n",
            p.mb_per_s, p.seconds, p.blocks, p.latency.mean_us, p.latency.p99_us, p.latency.max_us
        )
    };
    format!(
        "storlab meta --copy on {}\n  client: {}\n  {} bytes in blocks of {} ({})\n{}{}",
        r.target,
        r.client,
        r.size,
        r.block_size,
        r.file,
        line("write", &r.write),
        line("read", &r.read)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_on_a_temporary_directory_writes_reads_and_removes() {
        let root = std::env::temp_dir().join(format!("storlab-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir(&root).unwrap();
        let spec = CopySpec {
            size: 300_000,
            block_size: 65536,
            run_dir: RunDir {
                name: "c".into(),
                reuse: false,
                keep: false,
            },
            seed: 1,
        };
        let r = run(&Target::File(root.clone()), &spec).unwrap();
        assert_eq!((r.write.blocks, r.read.blocks), (5, 5));
        assert!(r.write.mb_per_s > 0.0 && r.read.mb_per_s > 0.0);
        assert!(text(&r).contains("write"));
        assert_eq!(
            std::fs::read_dir(&root).unwrap().count(),
            0,
            "run dir removed"
        );
        std::fs::remove_dir(&root).unwrap();
    }
}
