//! Live progress: one rewritten line on a terminal, plain lines otherwise.

use super::vocab::{Figures, Metric};
use crate::model::{IntervalRecord, Phase};
use crate::runner::Observer;
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

/// One progress line for an interval: its IOPS, MB/s, mean latency and
/// errors, named and written as every other output writes them.
pub fn line(job: &str, spec: &Spec, rec: &IntervalRecord, intervals: u32) -> String {
    let summary = rec.summary();
    let f = Figures::of(&summary);
    let show = |m: Metric| {
        let v = m.cell(&f);
        format!("{v} {}", m.unit().symbol())
    };
    let elapsed = rec.start_s + rec.seconds;
    let total = intervals as f64 * spec.interval.as_secs_f64();
    let phase = if rec.phase == Phase::Ramp {
        "ramp"
    } else {
        "run "
    };
    let errors = summary.total.errors;
    format!(
        "{job} [{}] {phase} {elapsed:>6.1} s, {}  {:>14}  {:>13}  mean {:>10}{}",
        spec.label,
        if intervals == u32::MAX && spec.replay.is_some() {
            "until the trace ends".to_string()
        } else if intervals == u32::MAX {
            "until io_size".to_string()
        } else {
            format!("{:.0} s left", (total - elapsed).max(0.0))
        },
        show(Metric::Iops),
        show(Metric::MbS),
        show(Metric::LatMean),
        if errors > 0 {
            format!("  {errors} {}", Metric::Errors.name())
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
