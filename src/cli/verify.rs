//! `storlab verify TARGET`: re-read what a verify run wrote (its saved map, or
//! a durability journal) and check every block (docs/verify.md).

use super::{CliError, ExitCode};
use crate::target::Target;
use crate::verify::{self, Loaded, reread};
use std::path::PathBuf;

/// Arguments of `storlab verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// The target a verify run wrote: file:PATH or a protocol URL, as given to `run`.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Check the writes recorded in this durability journal (`run --journal FILE`)
    /// instead of the run's saved map.
    #[arg(long, value_name = "FILE", conflicts_with = "map")]
    pub journal: Option<PathBuf>,
    /// The saved map to check (default: the one the last verify run on TARGET saved).
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
    /// Read with O_DIRECT (bypass the page cache) where the backend has one.
    #[arg(long)]
    pub direct: bool,
    /// Reads in flight.
    #[arg(long, default_value = "16", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub depth: u32,
    /// Bad blocks printed in full (all are counted).
    #[arg(long, default_value = "100")]
    pub show: usize,
}

/// Run `storlab verify`.
pub fn run(args: VerifyArgs) -> Result<ExitCode, CliError> {
    let target = Target::parse(&args.target).map_err(|e| CliError::input(e.to_string()))?;
    let (path, journal) = match (&args.journal, &args.map) {
        (Some(j), _) => (j.clone(), true),
        (None, Some(m)) => (m.clone(), false),
        (None, None) => (verify::map_path(&target.storage().to_string()), false),
    };
    if !path.exists() {
        return Err(CliError::input(if journal || args.map.is_some() {
            format!("{} does not exist", path.display())
        } else {
            format!(
                "no saved verify map for {target} ({} does not exist): run a `storlab run --verify` on it first, \
                 or pass --journal FILE",
                path.display()
            )
        }));
    }
    let loaded = Loaded::from_file(&path, journal).map_err(CliError::input)?;
    if loaded.torn_bytes > 0 {
        eprintln!(
            "storlab: verify: ignored a torn last record of {} bytes in {} (a crash while appending; never claimed)",
            loaded.torn_bytes,
            path.display()
        );
    }
    let opts = reread::Options {
        depth: args.depth as usize,
        direct: args.direct,
        keep: args.show,
    };
    let out = reread::verify_target(&loaded, &target, &opts).map_err(CliError::failed)?;
    for b in &out.bad {
        eprintln!("storlab: verify: {b}");
    }
    let source = if journal { "journal" } else { "map" };
    println!(
        "verified {} block(s) of 512 B ({}) on {} store(s) of {target} from {source} {}: {} bad",
        out.blocks,
        crate::workload::units::format_size(out.blocks * verify::format::VBLOCK as u64),
        out.stores.len(),
        path.display(),
        out.bad_count
    );
    if out.bad_count > 0 {
        let first = out
            .bad
            .first()
            .map(|b| format!("; first: {b}"))
            .unwrap_or_default();
        return Err(CliError::failed(format!(
            "verify: {} of {} block(s) on {target} do not hold their last acknowledged write{first}",
            out.bad_count, out.blocks
        )));
    }
    Ok(ExitCode::Ok)
}
