//! Live progress of a fleet run: the fleet totals of each interval, and the
//! slowest host in it (the one with the fewest I/Os per second).

use crate::runner::Observer;

use crate::model::IntervalRecord;
use crate::report::progress;
use crate::workload::Spec;
use std::io::IsTerminal;

/// Prints fleet progress to standard error.
pub struct FleetProgress {
    tty: bool,
    quiet: bool,
    job: String,
    /// (interval, host, IOPS) of the hosts that shipped intervals not yet final.
    seen: Vec<(u32, String, f64)>,
}

impl FleetProgress {
    /// Progress for `job`; `quiet` prints nothing.
    pub fn new(job: &str, quiet: bool) -> Self {
        FleetProgress {
            tty: std::io::stderr().is_terminal(),
            quiet,
            job: job.to_string(),
            seen: Vec::new(),
        }
    }

    /// Switch to another job's name.
    pub fn set_job(&mut self, job: &str) {
        self.job = job.to_string();
    }
}

fn iops(rec: &IntervalRecord) -> f64 {
    let secs = if rec.seconds > 0.0 { rec.seconds } else { 1.0 };
    rec.stats.total_ios() as f64 / secs
}

impl Observer for FleetProgress {
    fn host_interval(&mut self, host: &str, rec: &IntervalRecord) {
        self.seen.push((rec.index, host.to_string(), iops(rec)));
    }

    fn interval(&mut self, spec: &Spec, rec: &IntervalRecord, intervals: u32) {
        let hosts: Vec<&(u32, String, f64)> =
            self.seen.iter().filter(|s| s.0 == rec.index).collect();
        let slowest = hosts
            .iter()
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|s| format!("  {} hosts, slowest {} {:.0} IOPS", hosts.len(), s.1, s.2))
            .unwrap_or_default();
        self.seen.retain(|s| s.0 > rec.index);
        if self.quiet {
            return;
        }
        let l = format!(
            "{}{slowest}",
            progress::line(&self.job, spec, rec, intervals)
        );
        progress::print_line(self.tty, &l, rec.index + 1 >= intervals);
    }

    fn note(&mut self, msg: &str) {
        if !self.quiet {
            progress::print_note(self.tty, msg);
        }
    }
}
