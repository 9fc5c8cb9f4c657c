//! Splitting a load point over hosts: which VMs each host runs, and the plan
//! of one host's share. Worker numbers, seeds and disk names stay those of the
//! whole point, so the hosts' results add up to the point's.

use crate::plan::{self, Plan, TargetKind, WorkerId};
use crate::target::Target;
use crate::workload::Spec;

/// Every VM number of `spec`.
pub fn all_vms(spec: &Spec) -> Vec<u32> {
    (0..spec.total_vms() as u32).collect()
}

/// Every worker of `spec`, by index over the point (the order of [`plan::build`]).
pub fn worker_ids(spec: &Spec) -> Vec<WorkerId> {
    let mut out = Vec::new();
    let mut vm = 0u32;
    for g in &spec.groups {
        for _ in 0..g.vms {
            for worker in 0..g.workers_per_vm {
                out.push(WorkerId {
                    group: g.name.clone(),
                    vm,
                    worker,
                });
            }
            vm += 1;
        }
    }
    out
}

/// Deal `vms` VMs over `hosts` hosts: round-robin by default (VM `v` to host
/// `v % hosts`), or in blocks of `per_host` (host `h` gets VMs
/// `h * per_host ..`); a host may get none. Errors when the blocks cannot
/// hold every VM.
pub fn deal(vms: u32, hosts: usize, per_host: Option<u32>) -> Result<Vec<Vec<u32>>, String> {
    let mut out = vec![Vec::new(); hosts];
    if hosts == 0 {
        return Err("no host to run on".into());
    }
    match per_host {
        None => {
            for v in 0..vms {
                out[v as usize % hosts].push(v);
            }
        }
        Some(0) => return Err("invalid --vms-per-host = 0 (allowed: 1 or more)".into()),
        Some(n) => {
            if vms as u64 > n as u64 * hosts as u64 {
                return Err(format!(
                    "{vms} VMs do not fit on {hosts} host(s) x {n} VMs (--vms-per-host {n}); \
                     add hosts or raise --vms-per-host"
                ));
            }
            for v in 0..vms {
                out[(v / n) as usize].push(v);
            }
        }
    }
    Ok(out)
}

/// The plan of one host's share: the point's plan with only the workers of
/// `vms` (ascending), their disks, dealt round-robin over at most
/// `max_threads` threads. With every VM it equals [`plan::build`]'s plan.
pub fn host_plan(
    spec: &Spec,
    targets: &[(Target, TargetKind)],
    vms: &[u32],
    max_threads: usize,
) -> Plan {
    let full = plan::build(spec, targets, max_threads);
    let mut workers: Vec<_> = full
        .threads
        .into_iter()
        .flat_map(|t| t.workers)
        .filter(|w| vms.binary_search(&w.id.vm).is_ok())
        .collect();
    workers.sort_by_key(|w| w.index);
    // Keep only the disks these workers use, in their original order.
    let mut used = vec![false; full.disks.len()];
    for w in &workers {
        for &d in &w.disks {
            used[d as usize] = true;
        }
    }
    let mut remap = vec![u32::MAX; full.disks.len()];
    let mut disks = Vec::new();
    for (i, d) in full.disks.into_iter().enumerate() {
        if used[i] {
            remap[i] = disks.len() as u32;
            disks.push(d);
        }
    }
    for w in &mut workers {
        for d in &mut w.disks {
            *d = remap[*d as usize];
        }
    }
    plan::deal_to_threads(disks, workers, max_threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(vms: u32, workers: u32, disks: u32) -> Spec {
        let mut s = crate::workload::test_spec(vms, workers, disks);
        s.groups[0].access.read_pct = 100;
        s
    }

    #[test]
    fn every_vm_gives_the_full_plan() {
        let s = spec(6, 2, 2);
        for t in [
            vec![(Target::File("/d".into()), TargetKind::Directory)],
            vec![(Target::Null, TargetKind::Null)],
            vec![(Target::File("/f".into()), TargetKind::Single)],
        ] {
            assert_eq!(host_plan(&s, &t, &all_vms(&s), 4), plan::build(&s, &t, 4));
        }
    }

    #[test]
    fn shares_split_workers_and_disks() {
        let s = spec(5, 2, 2);
        let t = vec![(Target::File("/d".into()), TargetKind::Directory)];
        let shares = deal(5, 2, None).unwrap();
        assert_eq!(shares, vec![vec![0, 2, 4], vec![1, 3]]);
        let p = host_plan(&s, &t, &shares[1], 8);
        assert_eq!(p.disks.len(), 4);
        assert_eq!(p.threads.len(), 4);
        let mut idx: Vec<u32> = p
            .threads
            .iter()
            .flat_map(|t| t.workers.iter().map(|w| w.index))
            .collect();
        idx.sort_unstable();
        assert_eq!(idx, vec![2, 3, 6, 7]);
        assert!(
            p.disks[0]
                .path
                .as_ref()
                .unwrap()
                .ends_with("storlab-vm001-d0.dat")
        );
        assert_eq!(worker_ids(&s)[7].vm, 3);
    }

    #[test]
    fn blocks_per_host() {
        assert_eq!(
            deal(5, 3, Some(2)).unwrap(),
            vec![vec![0, 1], vec![2, 3], vec![4]]
        );
        let e = deal(7, 3, Some(2)).unwrap_err();
        assert!(e.contains("7 VMs") && e.contains("3 host(s) x 2"), "{e}");
    }

    #[test]
    fn hosts_get_the_slices_they_would_have_alone_and_never_overlap() {
        for (vms, workers, disks, hosts, per_host) in [
            (5, 2, 2, 2, None),
            (8, 1, 1, 3, None),
            (7, 3, 2, 3, Some(3)),
            (16, 1, 2, 4, Some(4)),
        ] {
            let s = spec(vms, workers, disks);
            let t = vec![(Target::File("/f".into()), TargetKind::Single)];
            let full = plan::build(&s, &t, 2);
            let by_index = |p: &Plan| -> Vec<(u32, Vec<u64>)> {
                let mut v: Vec<_> = p
                    .threads
                    .iter()
                    .flat_map(|t| &t.workers)
                    .map(|w| (w.index, w.bases.clone()))
                    .collect();
                v.sort();
                v
            };
            let alone = by_index(&full);
            let mut seen: Vec<(u64, u32)> = Vec::new(); // (slice start, vm)
            let mut workers_seen = 0;
            for share in deal(vms, hosts, per_host).unwrap() {
                let p = host_plan(&s, &t, &share, 2);
                // The disk to open still covers the whole working set.
                assert_eq!(p.disks.len(), usize::from(!share.is_empty()));
                if let Some(d) = p.disks.first() {
                    assert_eq!(d, &full.disks[0]);
                }
                for (index, bases) in by_index(&p) {
                    assert_eq!(bases, alone[index as usize].1, "worker {index}");
                    workers_seen += 1;
                }
                for w in p.threads.iter().flat_map(|t| &t.workers) {
                    for &b in &w.bases {
                        seen.push((b, w.id.vm));
                    }
                }
            }
            assert_eq!(workers_seen, alone.len());
            // A slice is used by one VM only, on whichever host it runs.
            seen.sort();
            seen.dedup();
            let starts: Vec<u64> = seen.iter().map(|x| x.0).collect();
            let expect: Vec<u64> = (0..(vms * disks) as u64).map(|k| k * s.size).collect();
            assert_eq!(starts, expect, "{vms} VMs on {hosts} hosts");
        }
    }
}
