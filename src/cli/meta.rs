//! `storlab meta`: the file and metadata workload (many small files in a
//! tree, a mix of file operations) or, with `--copy SIZE`, the copy of one
//! large file to the store and back, on a `file:` directory or over
//! storlab's NFS client.

use super::{CliError, ExitCode};
use crate::lab::LabTarget;
use crate::meta::copy::{self, CopySpec};
use crate::meta::mix::Mix;
use crate::meta::{self, Failure, MetaError, MetaSpec, RunDir};
use crate::model::meta::MetaResult;
use crate::model::{RunRecord, write_atomic};
use crate::target::Target;
use crate::workload::units::{parse_duration, parse_size};
use std::path::{Path, PathBuf};

/// Arguments of `storlab meta`.
#[derive(clap::Args, Debug)]
pub struct MetaArgs {
    /// The directory to work in: file:DIR, nfs://HOST[:PORT]/EXPORT[/DIR]?version=3|4|4.1, or
    /// a lab's NFS target by name (nfs3, nfs4, nfs41: the root of its export); storlab makes
    /// its own run directory inside it.
    #[arg(long, short = 't', value_name = "URL")]
    pub target: String,
    /// The lab whose target names --target may use (default: the default lab's).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Directories of the tree.
    #[arg(long, default_value = "10", value_name = "N")]
    pub dirs: String,
    /// Files per directory created at set-up.
    #[arg(long, default_value = "100", value_name = "M")]
    pub files: String,
    /// Bytes of every file (4k, 64k, 1m, ...).
    #[arg(long, default_value = "4k", value_name = "SIZE")]
    pub file_size: String,
    /// The operation mix: op=weight,... of create, write, read, stat, rename, delete, list
    /// (default create=10,write=10,read=30,stat=30,rename=5,delete=10,list=5).
    #[arg(long, value_name = "OP=W,...")]
    pub mix: Option<String>,
    /// Worker threads, each with its own client connection.
    #[arg(long, default_value = "4", value_name = "T")]
    pub threads: String,
    /// How long the mix runs (10s, 1m, ...).
    #[arg(long, default_value = "10s", value_name = "TIME")]
    pub runtime: String,
    /// Instead of the mix: copy one file of SIZE to the store and back.
    #[arg(long, value_name = "SIZE")]
    pub copy: Option<String>,
    /// The copy's block size.
    #[arg(long, default_value = "1m", value_name = "SIZE", requires = "copy")]
    pub bs: String,
    /// The run directory's name in the target directory (default storlab-meta-SECS-PID).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Use the run directory even if it exists and is not empty (storlab adds only its own entries).
    #[arg(long)]
    pub reuse_dir: bool,
    /// Leave what the run created in place (no clean-up).
    #[arg(long)]
    pub keep: bool,
    /// Seed of the random draws and data.
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// Write the result as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The results database.
    #[command(flatten)]
    pub record: super::RecordArgs,
}

/// A whole number option within `lo..=hi`; the error names the option.
fn count(opt: &str, v: &str, lo: u32, hi: u32) -> Result<u32, CliError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| CliError::input(format!("invalid {opt} \"{v}\" (allowed: {lo} to {hi})")))
}

/// A size option within `lo..=hi` bytes; the error names the option.
fn size(opt: &str, v: &str, lo: u64, hi: u64) -> Result<u64, CliError> {
    let n = parse_size(v).map_err(|e| CliError::input(format!("{opt}: {e}")))?;
    if !(lo..=hi).contains(&n) {
        return Err(CliError::input(format!(
            "invalid {opt} \"{v}\" (allowed: {lo} bytes to {hi} bytes)"
        )));
    }
    Ok(n)
}

/// The lab targets `--target` takes: its NFS targets.
fn lab_nfs() -> impl Iterator<Item = LabTarget> {
    LabTarget::all().filter(|t| t.nfs())
}

/// A lab's NFS target, as the directory at the root of its export.
fn lab_directory(target: LabTarget, state_dir: &Path) -> Result<Target, CliError> {
    let state = crate::lab::status(state_dir)
        .filter(|s| s.targets.is_some())
        .ok_or_else(|| {
            CliError::input(format!(
                "invalid --target \"{target}\": no lab is up in {} (run `storlab lab up` first, \
                 or give --state-dir)",
                state_dir.display()
            ))
        })?;
    let url = state
        .targets
        .as_ref()
        .and_then(|t| t.url(target))
        .ok_or_else(|| {
            CliError::input(format!(
                "invalid --target \"{target}\": the lab in {} has no such target",
                state_dir.display()
            ))
        })?;
    let mut t = Target::parse(&url).map_err(|e| CliError::failed(e.to_string()))?;
    if let Target::Nfs(n) = &mut t {
        n.path.clear();
    }
    Ok(t)
}

/// The target as a directory: file: or nfs:// only, or a lab's NFS target by
/// name (the lab in `state_dir`).
pub fn parse_target(s: &str, state_dir: &Path) -> Result<Target, CliError> {
    if let Some(t) = lab_nfs().find(|t| t.name() == s) {
        return lab_directory(t, state_dir);
    }
    let names: Vec<&str> = lab_nfs().map(LabTarget::name).collect();
    let allowed = format!(
        "allowed: file:DIR, nfs://HOST[:PORT]/EXPORT[/DIR]?version=3|4|4.1, or a lab's {}",
        names.join(", ")
    );
    let t = Target::parse_dir(s).map_err(|e| {
        CliError::input(format!(
            "invalid --target \"{s}\": {} ({allowed})",
            e.reason
        ))
    })?;
    match &t {
        Target::File(p) if !p.is_dir() => Err(CliError::input(format!(
            "invalid --target \"{s}\": {} is not an existing directory ({allowed})",
            p.display()
        ))),
        Target::File(_) | Target::Nfs { .. } => Ok(t),
        _ => Err(CliError::input(format!(
            "invalid --target \"{s}\": the metadata workload runs on directories ({allowed})"
        ))),
    }
}

/// Bad input (exit 2) or a failure (exit 1).
fn cli_error(e: MetaError) -> CliError {
    match e {
        MetaError::Input(m) => CliError::input(m),
        MetaError::Failed(m) => CliError::failed(m),
    }
}

/// What a run gave back: what it measured (if anything) and why it ended
/// early (if it did).
fn split<R>(
    r: Result<R, Failure<R>>,
    wrap: fn(R) -> MetaResult,
) -> (Option<MetaResult>, Option<MetaError>) {
    match r {
        Ok(r) => (Some(wrap(r)), None),
        Err(f) => (f.measured.map(|b| wrap(*b)), Some(f.error)),
    }
}

fn store_err(e: impl std::fmt::Display) -> CliError {
    CliError::failed(format!("results database: {e}"))
}

/// Run `storlab meta` (`argv`: the command line, recorded with the run).
pub fn run(a: MetaArgs, argv: Vec<String>) -> Result<ExitCode, CliError> {
    let state_dir = a
        .state_dir
        .clone()
        .unwrap_or_else(crate::lab::default_state_dir);
    let target = parse_target(&a.target, &state_dir)?;
    let name = a.name.clone().unwrap_or_else(RunDir::default_name);
    RunDir::check_name(&name).map_err(CliError::input)?;
    let run_dir = RunDir {
        name,
        reuse: a.reuse_dir,
        keep: a.keep,
    };
    if let Some(p) = &a.json
        && let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(CliError::input(format!(
            "--json {}: directory {} does not exist",
            p.display(),
            parent.display()
        )));
    }
    // Checked before anything runs, as `storlab run` does.
    enum Spec {
        Copy(CopySpec),
        Mix(MetaSpec),
    }
    let spec = match &a.copy {
        Some(total) => Spec::Copy(CopySpec {
            size: size("--copy", total, 1, 1 << 44)?,
            block_size: size("--bs", &a.bs, 512, 64 << 20)?,
            run_dir,
            seed: a.seed,
        }),
        None => {
            let mix = match &a.mix {
                Some(m) => Mix::parse(m).map_err(CliError::input)?,
                None => Mix::default(),
            };
            Spec::Mix(MetaSpec {
                dirs: count("--dirs", &a.dirs, 1, 100_000)?,
                files: count("--files", &a.files, 0, 10_000_000)?,
                file_size: size("--file-size", &a.file_size, 0, 1 << 30)?,
                mix,
                threads: count("--threads", &a.threads, 1, 1024)?,
                runtime: parse_duration(&a.runtime)
                    .map_err(|e| CliError::input(format!("--runtime: {e}")))?,
                run_dir,
                seed: a.seed,
                interrupt: Some(&super::signals::STOP),
            })
        }
    };
    let store = a.record.open()?;
    // The run is recorded as it starts (target and spec, nothing measured),
    // so a storlab killed mid-run leaves it listed as incomplete.
    let mut record = RunRecord::new(argv);
    record.environment.network = crate::lab::registry::network_of(&[target.to_string()]);
    record.meta = Some(match &spec {
        Spec::Copy(s) => MetaResult::Copy(copy::planned(&target, s)),
        Spec::Mix(s) => MetaResult::Meta(meta::planned(&target, s)),
    });
    let id = match &store {
        Some(s) => Some(s.begin_run(&record).map_err(store_err)?),
        None => None,
    };
    let (measured, error) = match &spec {
        Spec::Copy(s) => split(copy::run(&target, s), MetaResult::Copy),
        Spec::Mix(s) => {
            super::signals::install();
            split(meta::run(&target, s), MetaResult::Meta)
        }
    };
    let interrupted = super::signals::STOP.load(std::sync::atomic::Ordering::SeqCst);
    if let Some(m) = &measured {
        print!(
            "{}",
            match m {
                MetaResult::Meta(r) => meta::text(r),
                MetaResult::Copy(r) => copy::text(r),
            }
        );
        if let Some(p) = &a.json {
            let bytes = match m {
                MetaResult::Meta(r) => serde_json::to_vec_pretty(r),
                MetaResult::Copy(r) => serde_json::to_vec_pretty(r),
            }
            .map_err(|e| CliError::failed(format!("cannot encode the result: {e}")))?;
            write_atomic(p, &bytes)
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", p.display())))?;
        }
    }
    if let (Some(s), Some(id)) = (&store, id) {
        let saved = measured.is_some();
        if let Some(m) = measured {
            record.meta = Some(m);
        }
        record.error = error.as_ref().map(|e| e.to_string());
        record.interrupted = interrupted;
        record.complete = true;
        s.finish_run(id, &record).map_err(store_err)?;
        if saved {
            eprintln!("storlab: saved as run {id} (storlab results show {id})");
        }
    }
    if let Some(e) = error {
        return Err(cli_error(e));
    }
    if interrupted {
        let left = if a.keep {
            "what it created was kept (--keep)"
        } else {
            "what it created was removed"
        };
        return Err(CliError {
            code: ExitCode::Interrupted,
            message: format!("interrupted: the mix ended early; {left}"),
        });
    }
    Ok(ExitCode::Ok)
}
