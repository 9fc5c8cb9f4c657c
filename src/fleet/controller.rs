//! The controller side of `storlab run --hosts`: which agents, how the VMs
//! are dealt over them, and one load point run on all of them through the
//! same aggregator as a local run.

use super::remote::RemoteRunner;
use crate::model::PointResult;
use crate::runner::{
    self, HostCheck, HostLoss, HostPlan, HostRunner, Observer, Probe, RunError, share,
};
use crate::target::Target;
use crate::workload::Spec;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// How a fleet run is set up.
#[derive(Clone, Debug)]
pub struct FleetConfig {
    /// Agents, `HOST:PORT`, in order.
    pub hosts: Vec<String>,
    /// Bearer token of the agents.
    pub token: String,
    /// VMs per host in blocks; `None` deals VMs round-robin.
    pub vms_per_host: Option<u32>,
    /// What a lost host does to the point.
    pub on_loss: HostLoss,
    /// Most engine threads per agent; `None`: each agent's CPUs.
    pub threads: Option<usize>,
    /// Permission to write into files storlab did not create.
    pub allow_overwrite: bool,
    /// HTTPS to every agent, trusting this certificate (`--tls-ca`).
    pub tls: Option<super::remote::TlsTrust>,
}

/// Parse `--hosts`: a file with one `HOST:PORT` per line (`#` comments and
/// blank lines skipped) if such a file exists, else a comma-separated list.
pub fn parse_hosts(arg: &str) -> Result<Vec<String>, String> {
    let (items, origin): (Vec<String>, String) = if Path::new(arg).is_file() {
        let text = std::fs::read_to_string(arg)
            .map_err(|e| format!("cannot read hosts file {arg}: {e}"))?;
        (
            text.lines()
                .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
                .filter(|l| !l.is_empty())
                .collect(),
            format!("hosts file {arg}"),
        )
    } else {
        (
            arg.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            "--hosts".to_string(),
        )
    };
    if items.is_empty() {
        return Err(format!(
            "{origin} names no host (expected HOST:PORT,HOST:PORT or a file with one per line)"
        ));
    }
    let mut seen = Vec::new();
    for h in &items {
        let port = h.rsplit_once(':').map(|(_, p)| p);
        if port.is_none_or(|p| p.parse::<u16>().is_err()) || h.contains('/') {
            return Err(format!(
                "{origin}: invalid host {h:?} (expected HOST:PORT, e.g. 10.0.0.5:7878)"
            ));
        }
        if seen.contains(h) {
            return Err(format!("{origin}: host {h} is named twice"));
        }
        seen.push(h.clone());
    }
    Ok(items)
}

/// Say hello to the agent at `host` (`HOST:PORT`) with `token`: reachable,
/// token accepted, same protocol version, `targets` allowed; returns its
/// version and clock offset. The error names the agent and what is wrong.
pub fn check_agent(
    host: &str,
    token: &str,
    tls: Option<&super::remote::TlsTrust>,
    targets: &[Target],
) -> Result<HostCheck, RunError> {
    let plan = HostPlan {
        spec: crate::workload::jobfile::default_spec("check"),
        vms: Vec::new(),
        targets: targets.to_vec(),
        threads: None,
        allow_overwrite: false,
        lab_store: false,
    };
    RemoteRunner::new(host, token).with_tls(tls).check(&plan)
}

/// Check every agent of `cfg` before the first point (reachable, token,
/// protocol version, `targets` allowed), in parallel; returns one line for
/// the user with the versions and clock offsets. The error names every
/// failing host and why.
pub fn check_fleet(cfg: &FleetConfig, targets: &[Target]) -> Result<String, RunError> {
    let results: Vec<(String, Result<HostCheck, RunError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = cfg
            .hosts
            .iter()
            .map(|h| {
                s.spawn(move || {
                    (
                        h.clone(),
                        check_agent(h, &cfg.token, cfg.tls.as_ref(), targets),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("check thread"))
            .collect()
    });
    let mut errors = Vec::new();
    let mut offsets = Vec::new();
    for (host, r) in results {
        match r {
            Ok(c) => offsets.push((host, c.clock_offset_ns)),
            Err(e) => errors.push(e),
        }
    }
    if let Some(first) = errors.first() {
        let msg = errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(match first {
            RunError::Refused(_) => RunError::Refused(msg),
            _ => RunError::Host(msg),
        });
    }
    let worst = offsets
        .iter()
        .max_by_key(|(_, o)| o.unsigned_abs())
        .map(|(h, o)| format!("{:+.3} ms ({h})", *o as f64 / 1e6))
        .unwrap_or_default();
    Ok(format!(
        "{} agent(s) ready; largest clock offset {worst}, corrected at the start",
        offsets.len()
    ))
}

/// Run one load point over the agents of `cfg`. Hosts dealt no VM sit the
/// point out.
pub fn run_point(
    cfg: &FleetConfig,
    spec: &Spec,
    targets: &[Target],
    stop: &AtomicBool,
    probe: Option<&dyn Probe>,
    obs: &mut dyn Observer,
) -> Result<PointResult, RunError> {
    let shares = share::deal(spec.total_vms() as u32, cfg.hosts.len(), cfg.vms_per_host)
        .map_err(RunError::Setup)?;
    let mut hosts: Vec<Box<dyn HostRunner>> = Vec::new();
    let mut plans = Vec::new();
    for (host, vms) in cfg.hosts.iter().zip(shares) {
        if vms.is_empty() {
            continue;
        }
        hosts.push(Box::new(
            RemoteRunner::new(host, &cfg.token).with_tls(cfg.tls.as_ref()),
        ));
        plans.push(HostPlan {
            spec: spec.clone(),
            vms,
            targets: targets.to_vec(),
            threads: cfg.threads,
            allow_overwrite: cfg.allow_overwrite,
            lab_store: false,
        });
    }
    runner::run_hosts(spec, &mut hosts, &plans, cfg.on_loss, stop, probe, obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_from_a_list_or_a_file() {
        assert_eq!(
            parse_hosts("a:1, b:2").unwrap(),
            vec!["a:1".to_string(), "b:2".to_string()]
        );
        assert!(parse_hosts("a").unwrap_err().contains("HOST:PORT"));
        assert!(parse_hosts("a:1,a:1").unwrap_err().contains("twice"));
        let f = std::env::temp_dir().join(format!("storlab-hosts-{}", std::process::id()));
        std::fs::write(&f, "# fleet\n10.0.0.1:7878\n\n[::1]:7878  # v6\n").unwrap();
        assert_eq!(
            parse_hosts(f.to_str().unwrap()).unwrap(),
            vec!["10.0.0.1:7878".to_string(), "[::1]:7878".to_string()]
        );
        let _ = std::fs::remove_file(&f);
    }
}
