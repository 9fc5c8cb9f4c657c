//! Side-by-side comparison, the studies' method: the same workload on each
//! target in turn, the backing store restored to its initial state between
//! tests, every figure relative to a baseline target = 100, and CPU measured on
//! both sides (the load generator and each server process), because what a
//! protocol costs in CPU is the studies' most repeated finding. The table
//! relative to the baseline is [`crate::report::relative`]'s, printed by
//! [`crate::report::text::comparison_tables`].

use crate::lab::{LabState, LabTarget};
use crate::model::{PointResult, ServerCpu};
use crate::runner::RunError;
use crate::stats::ProcCpu;
use crate::target::Target;
use crate::workload::Spec;
use serde::{Deserialize, Serialize};
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
    /// Where the I/O goes: one target for a comparison's contender, or a
    /// run's targets, over which its VM disks are spread.
    pub targets: Vec<Target>,
    /// Server processes that serve it (empty for local targets).
    pub servers: Vec<ServerProc>,
    /// A storlab-prepared backing file to restore before each test, if any.
    pub backing: Option<PathBuf>,
}

impl Contender {
    /// A run's targets as its one contender, named by them, with no server
    /// measured and no store to restore.
    pub fn of_targets(targets: Vec<Target>) -> Contender {
        Contender {
            name: targets
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(","),
            targets,
            servers: Vec::new(),
            backing: None,
        }
    }

    /// Its targets as the results name them.
    pub fn urls(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.to_string()).collect()
    }
}

/// The lab target names, in the studies' usual order: the block baseline
/// (uncapped, then at each FC link's and 10 Gb FCoE's payload rate), the
/// store file itself through the media mount, then the protocols
/// ([`LabTarget`]).
pub const LAB_TARGETS: &[&str] = &LabTarget::NAMES;

/// What `compare --lab` runs without `--targets`: the block baseline in the
/// FC role on 8 Gb FC (the studies' baseline = 100), then every protocol.
pub const DEFAULT_LAB_TARGETS: &[&str] = &[
    LabTarget::Fc8.name(),
    LabTarget::Nfs3.name(),
    LabTarget::Nfs4.name(),
    LabTarget::Iscsi.name(),
    LabTarget::Nbd.name(),
];

/// The name a lab target goes by in tables, as the studies name their
/// baseline: `fc8` is "FC 8Gb (block)", `fcoe10` "FCoE 10Gb (block)"
/// ([`LabTarget::label`]); other names are their own.
pub fn label(name: &str) -> String {
    LabTarget::parse(name).map_or_else(|_| name.to_string(), |t| t.label().to_string())
}

/// Resolve `--targets` entries: a lab target name (with URL options:
/// `nfs3?stable=file`), `NAME=URL`, or a URL (named by itself). Lab names need
/// a lab that is up.
pub fn resolve(entries: &[String], lab: Option<&LabState>) -> Result<Vec<Contender>, String> {
    let mut out: Vec<Contender> = Vec::new();
    for e in entries {
        let (name, url) = match e.split_once('=') {
            Some((n, u)) if !n.contains(':') && !n.contains('?') => {
                (n.to_string(), Some(u.to_string()))
            }
            _ if e.contains(':') => (e.clone(), Some(e.clone())),
            _ => (e.clone(), None),
        };
        let contender = match url {
            Some(u) => Contender {
                name,
                targets: vec![Target::parse(&u).map_err(|err| err.to_string())?],
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

/// A lab target, given as its name or as `NAME?OPTIONS`: the lab's URL for
/// it with the options added to its query (`nfs3?stable=file`); the options
/// are checked as the URL's own.
fn lab_contender(entry: &str, lab: Option<&LabState>) -> Result<Contender, String> {
    let (name, options) = match entry.split_once('?') {
        Some((n, o)) => (n, Some(o)),
        None => (entry, None),
    };
    let mut c = lab_contender_named(name, lab)?;
    if let Some(o) = options {
        let url = c.targets[0].to_string();
        let sep = if url.contains('?') { '&' } else { '?' };
        c.targets = vec![Target::parse(&format!("{url}{sep}{o}")).map_err(|e| e.to_string())?];
        c.name = format!("{}?{o}", c.name);
    }
    Ok(c)
}

fn lab_contender_named(name: &str, lab: Option<&LabState>) -> Result<Contender, String> {
    let t = LabTarget::parse(name).map_err(|_| {
        format!(
            "unknown target {name:?} (allowed: a lab target ({}), NAME=URL, or a URL)",
            LabTarget::allowed()
        )
    })?;
    let lab = lab.ok_or_else(|| {
        format!("target {name:?} names a lab target, but no lab is up (run `storlab lab up` first)")
    })?;
    let targets = lab.targets.as_ref().ok_or_else(|| {
        format!(
            "the lab in {} is not ready (run `storlab lab down`, then `storlab lab up`)",
            lab.state_dir.display()
        )
    })?;
    let url = targets.url(t).ok_or_else(|| {
        format!(
            "the lab in {} has no {name:?} target (it was brought up before the block baseline: \
             run `storlab lab down`, then `storlab lab up`)",
            lab.state_dir.display()
        )
    })?;
    let servers = t
        .server()
        .and_then(|s| lab.server(s))
        .map(|s| {
            vec![ServerProc {
                name: s.name.clone(),
                pid: s.proc.pid,
            }]
        })
        .unwrap_or_default();
    Ok(Contender {
        name: t.label().to_string(),
        targets: vec![Target::parse(&url).map_err(|e| e.to_string())?],
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
    let result = run(spec, &c.targets)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_named_urls_resolve_without_a_lab() {
        let c = resolve(&["null:".into(), "fast=file:/tmp/x".into()], None).unwrap();
        assert_eq!(c[0].name, "null:");
        assert_eq!(c[1].name, "fast");
        assert_eq!(c[1].targets, [Target::File("/tmp/x".into())]);
    }

    #[test]
    fn lab_names_need_a_lab_and_unknown_names_list_the_allowed() {
        let e = resolve(&["nfs3".into()], None).unwrap_err();
        assert!(e.contains("storlab lab up"), "{e}");
        let e = resolve(&["nfs5".into()], None).unwrap_err();
        assert!(
            e.contains("nfs5")
                && e.contains("fc8, fc16, fc32, fcoe10, local, nfs3, nfs4, nfs41, iscsi, nbd"),
            "{e}"
        );
        let e = resolve(&["null:".into(), "null:".into()], None).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        // A lab name with URL options is still a lab name.
        let e = resolve(&["nfs3?stable=file".into()], None).unwrap_err();
        assert!(
            e.contains("\"nfs3\"") && e.contains("storlab lab up"),
            "{e}"
        );
        let e = resolve(&["nfs5?stable=file".into()], None).unwrap_err();
        assert!(e.contains("unknown target \"nfs5\""), "{e}");
    }

    #[test]
    fn fc_targets_read_like_the_studies_baseline() {
        assert_eq!(label("fc8"), "FC 8Gb (block)");
        assert_eq!(label("fc32"), "FC 32Gb (block)");
        assert_eq!(label("fcoe10"), "FCoE 10Gb (block)");
        assert_eq!(label("fcoe25"), "fcoe25");
        assert_eq!(label("nfs3"), "nfs3");
        assert_eq!(label("fc7"), "fc7");
        for t in DEFAULT_LAB_TARGETS {
            assert!(LAB_TARGETS.contains(t));
        }
    }
}
