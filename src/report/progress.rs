//! Live progress: one rewritten line on a terminal, plain lines otherwise.

use crate::runner::Observer;

use crate::model::{IntervalRecord, Phase};
use crate::workload::Spec;
use std::io::{IsTerminal, Write};

/// Prints progress to standard error.
pub struct Progress {
    tty: bool,
    quiet: bool,
    job: String,
}

impl Progress {
    /// Progress for `job`; `quiet` prints nothing.
    pub fn new(job: &str, quiet: bool) -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            quiet,
            job: job.to_string(),
        }
    }

    /// Switch to another job's name.
    pub fn set_job(&mut self, job: &str) {
        self.job = job.to_string();
    }

    /// End a rewritten line before other output.
    pub fn finish_line(&mut self) {
        if self.tty && !self.quiet {
            eprintln!();
        }
    }
}

/// One progress line for an interval.
pub fn line(job: &str, spec: &Spec, rec: &IntervalRecord, intervals: u32) -> String {
    let s = &rec.stats;
    let secs = if rec.seconds > 0.0 { rec.seconds } else { 1.0 };
    let ios = (s.read.ios + s.write.ios) as f64;
    let mb = (s.read.bytes + s.write.bytes) as f64 / 1e6;
    let elapsed = rec.start_s + rec.seconds;
    let total = intervals as f64 * spec.interval.as_secs_f64();
    let phase = if rec.phase == Phase::Ramp {
        "ramp"
    } else {
        "run "
    };
    format!(
        "{job} [{}] {phase} {elapsed:>6.1} s, {}  {:>9.0} IOPS  {:>8.1} MB/s  mean {:>7.3} ms{}",
        spec.label,
        if intervals == u32::MAX {
            "until io_size".to_string()
        } else {
            format!("{:.0} s left", (total - elapsed).max(0.0))
        },
        ios / secs,
        mb / secs,
        s.total_lat().mean_ns() / 1e6,
        if s.read.errors + s.write.errors > 0 {
            format!("  {} errors", s.read.errors + s.write.errors)
        } else {
            String::new()
        }
    )
}

/// Print a progress line on stderr: rewritten in place on a terminal (ended
/// with a newline after the `last` interval), a plain line otherwise.
pub fn print_line(tty: bool, l: &str, last: bool) {
    let mut err = std::io::stderr().lock();
    if tty {
        let _ = write!(err, "\r\x1b[2K{l}");
        if last {
            let _ = writeln!(err);
        }
    } else {
        let _ = writeln!(err, "{l}");
    }
    let _ = err.flush();
}

/// Print a note on stderr, clearing a rewritten progress line first.
pub fn print_note(tty: bool, msg: &str) {
    eprintln!("{}{msg}", if tty { "\r\x1b[2K" } else { "" });
}

impl Observer for Progress {
    fn interval(&mut self, spec: &Spec, rec: &IntervalRecord, intervals: u32) {
        if !self.quiet {
            print_line(
                self.tty,
                &line(&self.job, spec, rec, intervals),
                rec.index + 1 >= intervals,
            );
        }
    }

    fn note(&mut self, msg: &str) {
        if !self.quiet {
            print_note(self.tty, msg);
        }
    }
}
