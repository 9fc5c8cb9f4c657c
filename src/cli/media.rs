//! `storlab media-serve` (hidden): serve the emulated media's FUSE file system
//! in the foreground until SIGTERM/SIGINT. The lab starts it through
//! [`crate::media::serve::MediaServer`]; see src/media/serve/.

use super::{CliError, ExitCode};
use crate::media::fuse::{CacheMode, Options};
use crate::media::serve::{self, ServeConfig};
use std::path::PathBuf;

/// Arguments of `storlab media-serve`.
#[derive(clap::Args, Debug)]
pub struct MediaServeArgs {
    /// The backing directory (holds the store file).
    #[arg(long, value_name = "DIR")]
    pub backing: PathBuf,
    /// Where to mount the file system (an existing directory).
    #[arg(long = "mount", value_name = "DIR")]
    pub mountpoint: PathBuf,
    /// The medium: ram, or fixed:US / fixed:READ_US,WRITE_US[,FLUSH_US].
    #[arg(long, default_value = "ram")]
    pub media: String,
    /// Reader threads on /dev/fuse.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// direct, page-cache or passthrough (default: passthrough for ram, else direct).
    #[arg(long)]
    pub cache: Option<String>,
    /// Write our PID here once the file system answers.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
}

/// Validate, then serve until a signal.
pub fn run(a: MediaServeArgs) -> Result<ExitCode, CliError> {
    let medium = serve::medium(&a.media).map_err(CliError::input)?;
    let mode = a
        .cache
        .as_deref()
        .map(CacheMode::parse)
        .transpose()
        .map_err(CliError::input)?;
    if !(1..=64).contains(&a.threads) {
        return Err(CliError::input(format!(
            "--threads {}: allowed 1 to 64",
            a.threads
        )));
    }
    for (opt, dir) in [("--backing", &a.backing), ("--mount", &a.mountpoint)] {
        if !dir.is_dir() {
            return Err(CliError::input(format!(
                "{opt} {}: not a directory",
                dir.display()
            )));
        }
    }
    crate::media::fuse::mount::check_apart(&a.backing, &a.mountpoint).map_err(CliError::input)?;
    serve::run(ServeConfig {
        backing: a.backing,
        mountpoint: a.mountpoint,
        medium,
        options: Options {
            threads: a.threads,
            mode,
        },
        ready_file: a.ready_file,
    })
    .map_err(CliError::failed)?;
    Ok(ExitCode::Ok)
}
