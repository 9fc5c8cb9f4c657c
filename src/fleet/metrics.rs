//! The agent's live counters, served at `GET /metrics` in Prometheus text
//! format. Counters only grow over the agent's life; they are advanced once
//! per interval, when the agent's engine threads ship one.

use super::wire::{PROTOCOL_VERSION, RunState, STORLAB_VERSION};
use crate::stats::{DirStats, Snapshot};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one direction.
#[derive(Debug, Default)]
struct DirCounters {
    ios: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

impl DirCounters {
    fn add(&self, d: &DirStats) {
        self.ios.fetch_add(d.ios, Ordering::Relaxed);
        self.bytes.fetch_add(d.bytes, Ordering::Relaxed);
        self.errors.fetch_add(d.errors, Ordering::Relaxed);
    }
}

/// The agent's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    read: DirCounters,
    write: DirCounters,
    intervals: AtomicU64,
    runs: AtomicU64,
    refused: AtomicU64,
}

impl Metrics {
    /// Count one interval's snapshot.
    pub fn add_interval(&self, s: &Snapshot) {
        self.read.add(&s.read);
        self.write.add(&s.write);
        self.intervals.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a started run.
    pub fn run_started(&self) {
        self.runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a refused request (version, token, allow list).
    pub fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition for host `host` in state `state`.
    pub fn render(&self, host: &str, state: RunState) -> String {
        let mut out = String::new();
        let host = escape(host);
        let mut counter = |name: &str, help: &str, rows: &[(&str, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            for (labels, v) in rows {
                let _ = writeln!(out, "{name}{{host=\"{host}\"{labels}}} {v}");
            }
        };
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, help, pick) in [
            (
                "storlab_agent_ios_total",
                "Completed I/Os since the agent started.",
                (|d: &DirCounters| &d.ios) as fn(&DirCounters) -> &AtomicU64,
            ),
            (
                "storlab_agent_bytes_total",
                "Bytes moved by completed I/Os since the agent started.",
                |d: &DirCounters| &d.bytes,
            ),
            (
                "storlab_agent_errors_total",
                "Failed I/Os since the agent started.",
                |d: &DirCounters| &d.errors,
            ),
        ] {
            counter(
                name,
                help,
                &[
                    (",direction=\"read\"", get(pick(&self.read))),
                    (",direction=\"write\"", get(pick(&self.write))),
                ],
            );
        }
        counter(
            "storlab_agent_intervals_total",
            "Intervals shipped since the agent started.",
            &[("", get(&self.intervals))],
        );
        counter(
            "storlab_agent_runs_total",
            "Runs started since the agent started.",
            &[("", get(&self.runs))],
        );
        counter(
            "storlab_agent_refused_requests_total",
            "Requests refused (protocol version, token, allow list).",
            &[("", get(&self.refused))],
        );
        let _ = writeln!(
            out,
            "# HELP storlab_agent_run_state 1 for the agent's current run state."
        );
        let _ = writeln!(out, "# TYPE storlab_agent_run_state gauge");
        for s in RunState::ALL {
            let _ = writeln!(
                out,
                "storlab_agent_run_state{{host=\"{host}\",state=\"{}\"}} {}",
                s.name(),
                u8::from(s == state)
            );
        }
        let _ = writeln!(out, "# HELP storlab_agent_info The agent's versions.");
        let _ = writeln!(out, "# TYPE storlab_agent_info gauge");
        let _ = writeln!(
            out,
            "storlab_agent_info{{host=\"{host}\",version=\"{STORLAB_VERSION}\",protocol=\"{PROTOCOL_VERSION}\"}} 1"
        );
        out
    }
}

/// Escape a label value (backslash, quote, newline).
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Recorder;
    use crate::workload::Dir;

    #[test]
    fn renders_counters_and_state() {
        let m = Metrics::default();
        let mut r = Recorder::new();
        r.record(Dir::Read, 4096, 10);
        r.record(Dir::Read, 4096, 10);
        r.record_error(Dir::Write);
        m.add_interval(&r.take());
        let text = m.render("h\"1", RunState::Running);
        assert!(text.contains("storlab_agent_ios_total{host=\"h\\\"1\",direction=\"read\"} 2"));
        assert!(
            text.contains("storlab_agent_bytes_total{host=\"h\\\"1\",direction=\"read\"} 8192")
        );
        assert!(text.contains("storlab_agent_errors_total{host=\"h\\\"1\",direction=\"write\"} 1"));
        assert!(text.contains("state=\"running\"} 1"));
        assert!(text.contains("state=\"idle\"} 0"));
        assert!(text.contains("# TYPE storlab_agent_ios_total counter"));
    }
}
