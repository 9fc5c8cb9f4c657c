//! Side-by-side comparison, the studies' method: the same workload on each
//! target in turn, the backing store restored to its initial state between
//! tests, every figure relative to a baseline target = 100, and CPU measured on
//! both sides (the load generator and each server process), because what a
//! protocol costs in CPU is the studies' most repeated finding.

use crate::lab::LabState;
use crate::model::{PointResult, ServerCpu};
use crate::runner::RunError;
use crate::stats::ProcCpu;
use crate::target::Target;
use crate::workload::Spec;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::PathBuf;

/// A server process whose CPU is charged to a target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerProc {
    /// Server name ("ganesha").
    pub name: String,
    /// Its PID.
    pub pid: u32,
}

/// One target of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Contender {
    /// Short name ("nfs3", or the URL).
    pub name: String,
    /// Where the I/O goes.
    pub target: Target,
    /// Server processes that serve it (empty for local targets).
    pub servers: Vec<ServerProc>,
    /// A storlab-prepared backing file to restore before each test, if any.
    pub backing: Option<PathBuf>,
}

/// The lab target names, in the studies' usual order.
pub const LAB_TARGETS: &[&str] = &["local", "nfs3", "nfs4", "iscsi", "nbd"];

/// Resolve `--targets` entries: a lab target name, `NAME=URL`, or a URL (named
/// by itself). Lab names need a lab that is up.
pub fn resolve(entries: &[String], lab: Option<&LabState>) -> Result<Vec<Contender>, String> {
    let mut out: Vec<Contender> = Vec::new();
    for e in entries {
        let (name, url) = match e.split_once('=') {
            Some((n, u)) if !n.contains(':') => (n.to_string(), Some(u.to_string())),
            _ if e.contains(':') => (e.clone(), Some(e.clone())),
            _ => (e.clone(), None),
        };
        let contender = match url {
            Some(u) => Contender {
                name,
                target: Target::parse(&u).map_err(|err| err.to_string())?,
                servers: Vec::new(),
                backing: None,
            },
            None => lab_contender(&name, lab)?,
        };
        if out.iter().any(|c| c.name == contender.name) {
            return Err(format!("target {:?} is named twice", contender.name));
        }
        out.push(contender);
    }
    if out.is_empty() {
        return Err("no targets given (e.g. --targets local,nfs3,nfs4,iscsi,nbd)".into());
    }
    Ok(out)
}

fn lab_contender(name: &str, lab: Option<&LabState>) -> Result<Contender, String> {
    let allowed = LAB_TARGETS.join(", ");
    if !LAB_TARGETS.contains(&name) {
        return Err(format!(
            "unknown target {name:?} (allowed: a lab target ({allowed}), NAME=URL, or a URL)"
        ));
    }
    let lab = lab.ok_or_else(|| {
        format!("target {name:?} names a lab target, but no lab is up (run `storlab lab up` first)")
    })?;
    let targets = lab.targets.as_ref().ok_or_else(|| {
        format!(
            "the lab in {} is not ready (run `storlab lab down`, then `storlab lab up`)",
            lab.state_dir.display()
        )
    })?;
    let url = targets
        .list()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, u)| u.to_string())
        .unwrap_or_default();
    let server = match name {
        "nfs3" | "nfs4" => Some("ganesha"),
        "iscsi" => Some("tgtd"),
        "nbd" => Some("nbdkit"),
        _ => None,
    };
    let servers = server
        .and_then(|s| lab.server(s))
        .map(|s| {
            vec![ServerProc {
                name: s.name.clone(),
                pid: s.proc.pid,
            }]
        })
        .unwrap_or_default();
    Ok(Contender {
        name: name.to_string(),
        target: Target::parse(&url).map_err(|e| e.to_string())?,
        servers,
        backing: lab.backing.as_ref().map(|b| b.path.clone()),
    })
}

/// How a comparison runs one point on some targets (the runner, in the CLI).
pub type RunFn<'a> = dyn FnMut(&Spec, &[Target]) -> Result<PointResult, RunError> + 'a;

/// Run one point on one contender, measuring its servers' CPU around it.
pub fn run_measured(
    c: &Contender,
    spec: &Spec,
    run: &mut RunFn,
) -> Result<(PointResult, Vec<ServerCpu>), RunError> {
    let before: Vec<Option<ProcCpu>> = c
        .servers
        .iter()
        .map(|s| ProcCpu::of_pid(s.pid as i32).ok())
        .collect();
    let result = run(spec, std::slice::from_ref(&c.target))?;
    let cpu = c
        .servers
        .iter()
        .zip(before)
        .map(|(s, b)| {
            let after = ProcCpu::of_pid(s.pid as i32).ok();
            let cpu_s = match (b, after) {
                (Some(b), Some(a)) => (a - b).total_s(),
                _ => 0.0,
            };
            ServerCpu {
                name: s.name.clone(),
                cpu_s,
            }
        })
        .collect();
    Ok((result, cpu))
}

/// One row of the comparison table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row<'a> {
    /// Target name.
    pub target: &'a str,
    /// Its result for this point.
    pub point: &'a PointResult,
    /// Its servers' CPU during the point (`None`: no server, a local target).
    pub server_cpu_s: Option<f64>,
}

fn all_ios(p: &PointResult) -> u64 {
    p.intervals.iter().map(|r| r.stats.total_ios()).sum()
}

fn all_bytes(p: &PointResult) -> u64 {
    p.intervals.iter().map(|r| r.stats.total_bytes()).sum()
}

fn client_cpu_s(p: &PointResult) -> f64 {
    p.intervals
        .iter()
        .map(|r| r.cpu.proc_user_s + r.cpu.proc_sys_s)
        .sum()
}

fn rel(v: f64, base: f64) -> String {
    if base > 0.0 && v.is_finite() {
        format!("{:.0}", v / base * 100.0)
    } else {
        "-".into()
    }
}

/// The studies' table for one point: every target's absolute figures and, in
/// the `rel` columns, the figure relative to the baseline = 100. For latency
/// and CPU, lower is better.
pub fn table(title: &str, baseline: &str, rows: &[Row]) -> String {
    let base = rows.iter().find(|r| r.target == baseline);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{title}   (relative to {baseline} = 100; latency and CPU: lower is better)"
    );
    let head = [
        "target",
        "IOPS",
        "rel",
        "MB/s",
        "rel",
        "mean ms",
        "rel",
        "p99 ms",
        "rel",
        "client us/IO",
        "server us/IO",
        "rel",
        "server us/MB",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let per_io = |cpu: f64, ios: u64| if ios > 0 { cpu * 1e6 / ios as f64 } else { 0.0 };
    let b = base.map(|r| {
        let s = &r.point.summary;
        (
            s.total.iops,
            s.total.mb_s,
            s.total.lat_mean_us,
            s.total.p99_us,
            per_io(r.server_cpu_s.unwrap_or(0.0), all_ios(r.point))
                + per_io(client_cpu_s(r.point), all_ios(r.point)),
        )
    });
    for r in rows {
        let s = &r.point.summary;
        let ios = all_ios(r.point);
        let client = per_io(client_cpu_s(r.point), ios);
        let server = per_io(r.server_cpu_s.unwrap_or(0.0), ios);
        let mb = all_bytes(r.point) as f64 / 1e6;
        let server_mb = match r.server_cpu_s {
            Some(cpu) if mb > 0.0 => format!("{:.0}", cpu * 1e6 / mb),
            _ => "-".to_string(),
        };
        let (bi, bm, bl, bp, bc) = b.unwrap_or((0.0, 0.0, 0.0, 0.0, 0.0));
        cells.push(vec![
            r.target.to_string(),
            format!("{:.0}", s.total.iops),
            rel(s.total.iops, bi),
            format!("{:.1}", s.total.mb_s),
            rel(s.total.mb_s, bm),
            format!("{:.3}", s.total.lat_mean_us / 1000.0),
            rel(s.total.lat_mean_us, bl),
            format!("{:.3}", s.total.p99_us / 1000.0),
            rel(s.total.p99_us, bp),
            format!("{client:.1}"),
            if r.server_cpu_s.is_some() {
                format!("{server:.1}")
            } else {
                "-".to_string()
            },
            rel(client + server, bc),
            server_mb,
        ]);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &cells {
        for (i, c) in row.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "{c:<w$}", w = widths[0]);
            } else {
                let _ = write!(out, "  {c:>w$}", w = widths[i]);
            }
        }
        out.push('\n');
    }
    out.push_str("(server us/IO rel: client + server CPU per I/O relative to the baseline's)\n");
    out
}

/// For repeated points: each target's IOPS as mean ± 95% confidence interval,
/// and whether it differs from the baseline's beyond the noise (Welch's t-test).
/// Empty when nothing was repeated.
pub fn noise(baseline: &str, per_target: &[(&str, Vec<&PointResult>)]) -> String {
    use crate::report::stats_ci::{Estimate, within_noise};
    if per_target.iter().all(|(_, ps)| ps.len() < 2) {
        return String::new();
    }
    let iops = |ps: &[&PointResult]| {
        ps.iter()
            .map(|p| p.summary.total.iops)
            .collect::<Vec<f64>>()
    };
    let base = per_target
        .iter()
        .find(|(n, _)| *n == baseline)
        .map(|(_, ps)| iops(ps))
        .unwrap_or_default();
    let mut out = String::new();
    for (name, ps) in per_target {
        let v = iops(ps);
        let e = Estimate::of(&v);
        let ci = e.ci95.map(|c| format!(" ± {c:.0}")).unwrap_or_default();
        let verdict = if *name == baseline {
            "baseline".to_string()
        } else if within_noise(&v, &base) {
            format!("within noise of {baseline}")
        } else {
            format!("differs from {baseline} beyond noise")
        };
        let _ = writeln!(
            out,
            "  {name}: IOPS {:.0}{ci} (95% CI, n = {}): {verdict}",
            e.mean, e.n
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_named_urls_resolve_without_a_lab() {
        let c = resolve(&["null:".into(), "fast=file:/tmp/x".into()], None).unwrap();
        assert_eq!(c[0].name, "null:");
        assert_eq!(c[1].name, "fast");
        assert_eq!(c[1].target, Target::File("/tmp/x".into()));
    }

    #[test]
    fn lab_names_need_a_lab_and_unknown_names_list_the_allowed() {
        let e = resolve(&["nfs3".into()], None).unwrap_err();
        assert!(e.contains("storlab lab up"), "{e}");
        let e = resolve(&["nfs5".into()], None).unwrap_err();
        assert!(
            e.contains("nfs5") && e.contains("local, nfs3, nfs4, iscsi, nbd"),
            "{e}"
        );
        let e = resolve(&["null:".into(), "null:".into()], None).unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }
}
