//! `--replay FILE` (run and compare): the trace read once and checked, and
//! the one-point job that replays it (`crate::workload::replay`).

use super::{CliError, JobArgs};
use crate::workload::Job;
use crate::workload::replay::{self, DEFAULT_DEPTH, Replay};
use crate::workload::validate::validate_job;
use std::path::Path;

/// The flags a trace decides for itself, refused beside `--replay`.
const DECIDED_BY_THE_TRACE: &[&str] = &[
    "bs",
    "bssplit",
    "rw",
    "rwmixread",
    "percentage_random",
    "numjobs",
    "vms",
    "disks",
    "io_size",
    "rate_iops",
    "rate",
    "rate_mode",
    "random_distribution",
    "thinktime",
    "thinktime_blocks",
    "thinktime_spin",
    "blockalign",
    "verify",
    "journal",
    "steadystate",
];

/// The job replaying the trace at `path`: read once to check every line
/// (the first bad one is the error, `FILE:LINE: what`), then one load point
/// ([`replay::point`]) with the flags' settings and `--iodepth` (default
/// [`DEFAULT_DEPTH`]) as the most I/Os in flight.
pub fn job(args: &JobArgs, path: &Path) -> Result<Job, CliError> {
    if let Some((key, _)) =
        (args.flags.given().into_iter()).find(|(k, _)| DECIDED_BY_THE_TRACE.contains(k))
    {
        return Err(CliError::input(format!(
            "--{key} does not go with --replay: the trace gives each I/O's direction, offset, \
             size and time (with --replay: --iodepth, --size, --offset, --disk_layout, --runtime, \
             --direct, --sync, --ioengine and the run options)"
        )));
    }
    let speed = speed(args.replay_speed.as_deref())?;
    let (format, shape) = replay::scan(path).map_err(|e| CliError::input(e.to_string()))?;
    if shape.ios == 0 {
        return Err(CliError::input(format!(
            "{}: the trace ({}) has no reads or writes to replay",
            path.display(),
            format.name()
        )));
    }
    if shape.trims + shape.syncs > 0 {
        eprintln!(
            "storlab: note: {}: {} trims and {} syncs or flushes of the trace are not replayed \
             (the engine issues reads and writes only)",
            path.display(),
            shape.trims,
            shape.syncs
        );
    }
    let mut base = args
        .flags
        .apply(None)
        .map_err(|e| CliError::input(e.to_string()))?;
    let mut spec = base.points.remove(0);
    if args.flags.runtime.is_none() {
        spec.runtime = std::time::Duration::ZERO;
    }
    let iodepth = match &args.flags.iodepth {
        Some(_) => spec.groups[0].access.iodepth,
        None => DEFAULT_DEPTH,
    };
    let description = format!(
        "replay of {} ({}: {} reads and {} writes over {:.3} s of trace time, {} device(s), speed {speed}x)",
        path.display(),
        format.name(),
        shape.reads,
        shape.ios - shape.reads,
        shape.span_ns as f64 / 1e9,
        shape.devices.len(),
    );
    let replay = Replay {
        path: path.to_path_buf(),
        format,
        speed,
        shape,
    };
    let job = Job {
        name: "replay".into(),
        description,
        profile: None,
        points: vec![replay::point(spec, replay, iodepth)],
        provenance: Vec::new(),
        curve: None,
    };
    validate_job(&job).map_err(|e| CliError::input(e.to_string()))?;
    Ok(job)
}

/// `--replay-speed`: a finite number above 0, 1 when not given.
fn speed(text: Option<&str>) -> Result<f64, CliError> {
    let Some(text) = text else { return Ok(1.0) };
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(CliError::input(format!(
            "invalid --replay-speed = {text} (allowed: a number above 0; 2 replays twice as fast, 0.5 half as fast)"
        ))),
    }
}

/// Refuse a replay on a fleet, before the trace is read: it is read in
/// this process only.
pub fn check_local(args: &JobArgs, hosts: bool) -> Result<(), CliError> {
    if hosts && args.replay.is_some() {
        return Err(CliError::input(
            "--replay runs in this process only, not with --hosts (the agents do not read the trace)",
        ));
    }
    Ok(())
}
