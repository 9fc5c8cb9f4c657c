//! `storlab media-serve` (hidden): serve the emulated media's FUSE file system
//! in the foreground until SIGTERM/SIGINT. The lab starts it through
//! [`crate::media::serve::MediaServer`]; see src/media/serve/.
//! `storlab media`: list the presets, or print the model's prediction for one.

use super::{CliError, ExitCode};
use crate::media::fuse::{CacheMode, Options};
use crate::media::model::Workload;
use crate::media::presets;
use crate::media::serve::{self, ServeConfig};
use crate::workload::units::{format_size, parse_pct, parse_size};
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
    /// The medium: a preset (`storlab media` lists them), or
    /// fixed:US / fixed:READ_US,WRITE_US[,FLUSH_US].
    #[arg(long, default_value = "ram")]
    pub media: String,
    /// A preset file of the user's own media (docs/media.md).
    #[arg(long, value_name = "FILE")]
    pub media_file: Option<PathBuf>,
    /// Reader threads on /dev/fuse.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// direct, page-cache or passthrough (default: passthrough for ram, else direct).
    #[arg(long)]
    pub cache: Option<String>,
    /// Do not measure the server's own round trip at mount nor charge it
    /// against the medium's times (replies then come that much late).
    #[arg(long)]
    pub no_calibrate: bool,
    /// Write our PID here once the file system answers.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// The store's file name in the backing directory: only its changes are
    /// recorded for the lab's ranged restores (default: every file's).
    #[arg(long, value_name = "NAME")]
    pub store: Option<String>,
}

/// Validate, then serve until a signal.
pub fn run(a: MediaServeArgs) -> Result<ExitCode, CliError> {
    let medium = presets::resolve(&a.media, a.media_file.as_deref()).map_err(CliError::input)?;
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
            calibrate: !a.no_calibrate,
            store: a.store,
        },
        ready_file: a.ready_file,
    })
    .map_err(CliError::failed)?;
    Ok(ExitCode::Ok)
}

/// Arguments of `storlab media`.
#[derive(clap::Args, Debug)]
pub struct MediaArgs {
    /// A preset file of the user's own media, listed after the built-in ones.
    #[arg(long, value_name = "FILE")]
    pub media_file: Option<PathBuf>,
    /// Print the model's steady-state IOPS and mean latency for this preset.
    #[arg(long, value_name = "PRESET")]
    pub predict: Option<String>,
    /// I/O size (with --predict).
    #[arg(long, default_value = "4k", value_parser = parse_size)]
    pub bs: u64,
    /// Share of reads, % (with --predict).
    #[arg(long, default_value = "100", value_parser = parse_pct)]
    pub rwmixread: u8,
    /// Share of random I/O, % (with --predict).
    #[arg(long, default_value = "100", value_parser = parse_pct)]
    pub random: u8,
    /// Outstanding I/Os, one or more (with --predict).
    #[arg(long, default_value = "1", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub iodepth: Vec<u32>,
    /// The region the workload touches (with --predict).
    #[arg(long, default_value = "1g", value_parser = parse_size)]
    pub size: u64,
    /// Writes are synchronous (with --predict).
    #[arg(long)]
    pub sync: bool,
    /// Sequential streams sharing the medium at once, their I/Os among the
    /// --iodepth (with --predict and --random below 100).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub streams: u32,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// List the presets, or print a prediction.
pub fn media(a: MediaArgs) -> Result<ExitCode, CliError> {
    let file = a.media_file.as_deref();
    let Some(name) = &a.predict else {
        let all = presets::load(file).map_err(CliError::input)?;
        for p in all {
            let default = if p.name == presets::DEFAULT_MEDIA {
                " (default)"
            } else {
                ""
            };
            println!("{:<16} {}{default}", p.name, p.description);
        }
        return Ok(ExitCode::Ok);
    };
    let mut rows = Vec::new();
    for &qd in &a.iodepth {
        let w = Workload {
            bs: a.bs,
            read: f64::from(a.rwmixread) / 100.0,
            random: f64::from(a.random) / 100.0,
            qd,
            span: a.size,
            sync: a.sync,
            streams: a.streams,
        };
        let p = presets::predict(name, file, &w).map_err(CliError::input)?;
        rows.push((qd, p));
    }
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(qd, p)| {
                serde_json::json!({"media": name, "bs": a.bs, "rwmixread": a.rwmixread,
                    "random": a.random, "streams": a.streams, "iodepth": qd, "iops": p.iops, "mean_latency_us": p.latency_ns / 1e3})
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return Ok(ExitCode::Ok);
    }
    println!(
        "{name}: {}, {}% read, {}% random, over {}{}{}",
        format_size(a.bs),
        a.rwmixread,
        a.random,
        format_size(a.size),
        if a.sync { ", sync writes" } else { "" },
        if a.streams > 1 {
            format!(", {} sequential streams", a.streams)
        } else {
            String::new()
        }
    );
    println!("{:>8} {:>12} {:>16}", "iodepth", "IOPS", "mean latency us");
    for (qd, p) in rows {
        println!("{qd:>8} {:>12.0} {:>16.1}", p.iops, p.latency_ns / 1e3);
    }
    Ok(ExitCode::Ok)
}
