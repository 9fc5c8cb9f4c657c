//! The interval time series as CSV: one row per interval of every load point.

use crate::engine::runner::Phase;
use crate::result::RunRecord;
use std::fmt::Write;

/// The CSV header; columns are documented in docs/json-schema.md.
pub const HEADER: &str = "job,point,interval,phase,start_s,seconds,read_ios,read_bytes,write_ios,write_bytes,errors,iops,mb_s,lat_mean_us,lat_p99_us,lat_max_us,proc_user_s,proc_sys_s,host_busy_pct";

/// Quote a field if it needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Render every interval of `run`.
pub fn intervals(run: &RunRecord) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for job in &run.jobs {
        for p in &job.points {
            for r in &p.intervals {
                let s = &r.stats;
                let ios = s.read.ios + s.write.ios;
                let bytes = s.read.bytes + s.write.bytes;
                let secs = if r.seconds > 0.0 { r.seconds } else { 1.0 };
                let lat = s.total_lat();
                let _ = writeln!(
                    out,
                    "{},{},{},{},{:.3},{:.3},{},{},{},{},{},{:.1},{:.3},{:.1},{:.1},{:.1},{:.4},{:.4},{:.1}",
                    field(&job.name),
                    field(&p.label),
                    r.index,
                    if r.phase == Phase::Ramp {
                        "ramp"
                    } else {
                        "measure"
                    },
                    r.start_s,
                    r.seconds,
                    s.read.ios,
                    s.read.bytes,
                    s.write.ios,
                    s.write.bytes,
                    s.read.errors + s.write.errors,
                    ios as f64 / secs,
                    bytes as f64 / secs / 1e6,
                    lat.mean_ns() / 1e3,
                    lat.percentile(99.0) as f64 / 1e3,
                    lat.max_ns() as f64 / 1e3,
                    r.cpu.proc_user_s,
                    r.cpu.proc_sys_s,
                    r.cpu.host_busy_pct,
                );
            }
        }
    }
    out
}
