//! The plan: one load point laid out as threads → workers → disks.
//!
//! Many light workers share one engine thread (and one backend, one io_uring
//! ring), so 128 "VMs" at 2 outstanding I/Os each run on two cores without 128
//! threads. Workers are dealt to threads round-robin; each thread opens only the
//! disks its workers use.

use crate::backends::target::Target;
use crate::workload::{Access, Spec};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which worker this is, in the studies' terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkerId {
    /// Group name.
    pub group: String,
    /// VM number over all groups, from 0.
    pub vm: u32,
    /// Worker number within the VM, from 0.
    pub worker: u32,
}

/// One disk (file, device or null region) of one VM.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disk {
    /// The target URL it lives on.
    pub target: String,
    /// Path of the file or device (`None` for null).
    pub path: Option<PathBuf>,
    /// Region start, bytes.
    pub offset: u64,
    /// Region size, bytes.
    pub size: u64,
}

impl Disk {
    /// How the disk is named in messages.
    pub fn name(&self) -> String {
        match &self.path {
            Some(p) => format!("file:{}", p.display()),
            None => self.target.clone(),
        }
    }
}

/// One worker: an access pattern over some disks.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerPlan {
    /// Its identity.
    pub id: WorkerId,
    /// Index over all workers of the point.
    pub index: u32,
    /// Its access pattern.
    pub access: Access,
    /// Indices into [`Plan::disks`].
    pub disks: Vec<u32>,
    /// Seed of its generator.
    pub seed: u64,
}

/// The workers one engine thread runs, and the disks they use.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadPlan {
    /// Workers on this thread.
    pub workers: Vec<WorkerPlan>,
    /// Indices into [`Plan::disks`] that this thread opens, in its local order.
    pub disks: Vec<u32>,
}

/// A load point laid out for execution.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// All disks.
    pub disks: Vec<Disk>,
    /// Engine threads.
    pub threads: Vec<ThreadPlan>,
}

/// How a target is laid out into disks: a directory gets one file per VM disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// The null backend.
    Null,
    /// A directory: storlab creates `storlab-vmNNN-dD.dat` files in it.
    Directory,
    /// A single file or block device, shared by every disk mapped to it.
    Single,
}

/// Decide how `target` is laid out (looks at the file system for `file:`).
pub fn target_kind(target: &Target) -> TargetKind {
    match target {
        Target::Null => TargetKind::Null,
        Target::File(p) => {
            if p.is_dir() {
                TargetKind::Directory
            } else {
                TargetKind::Single
            }
        }
        // A protocol target is one file, LUN or export shared by every disk.
        Target::Nfs { .. } | Target::Iscsi { .. } | Target::Nbd { .. } => TargetKind::Single,
    }
}

/// File name of a VM's disk inside a directory target.
pub fn disk_file_name(vm: u32, disk: u32) -> String {
    format!("storlab-vm{vm:03}-d{disk}.dat")
}

/// Lay out `spec` over `targets` on at most `max_threads` engine threads.
/// Disk `d` of VM `v` goes to target `(v * disks_per_vm + d) % targets.len()`,
/// so two disks per VM land on two targets as the studies' two controllers did.
pub fn build(spec: &Spec, targets: &[(Target, TargetKind)], max_threads: usize) -> Plan {
    assert!(!targets.is_empty(), "a plan needs at least one target");
    let mut disks = Vec::new();
    let mut workers = Vec::new();
    let mut vm = 0u32;
    for group in &spec.groups {
        for _ in 0..group.vms {
            let mut vm_disks = Vec::with_capacity(group.disks_per_vm as usize);
            for d in 0..group.disks_per_vm {
                let t = (vm as usize * group.disks_per_vm as usize + d as usize) % targets.len();
                let (target, kind) = &targets[t];
                let path = match (target, kind) {
                    (Target::File(dir), TargetKind::Directory) => {
                        Some(dir.join(disk_file_name(vm, d)))
                    }
                    (Target::File(p), _) => Some(p.clone()),
                    _ => None,
                };
                vm_disks.push(disks.len() as u32);
                disks.push(Disk {
                    target: target.to_string(),
                    path,
                    offset: spec.offset,
                    size: spec.size,
                });
            }
            for w in 0..group.workers_per_vm {
                let index = workers.len() as u32;
                workers.push(WorkerPlan {
                    id: WorkerId {
                        group: group.name.clone(),
                        vm,
                        worker: w,
                    },
                    index,
                    access: group.access.clone(),
                    disks: vm_disks.clone(),
                    seed: spec.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                });
            }
            vm += 1;
        }
    }
    // A single file or device shared by several VM disks is one disk to open.
    dedupe_shared_disks(&mut disks, &mut workers);
    deal_to_threads(disks, workers, max_threads)
}

/// Deal `workers` round-robin to at most `max_threads` engine threads; each
/// thread opens only the disks its workers use.
pub fn deal_to_threads(disks: Vec<Disk>, workers: Vec<WorkerPlan>, max_threads: usize) -> Plan {
    let nthreads = max_threads.clamp(1, workers.len().max(1));
    let mut threads: Vec<ThreadPlan> = (0..nthreads)
        .map(|_| ThreadPlan {
            workers: Vec::new(),
            disks: Vec::new(),
        })
        .collect();
    for (i, w) in workers.into_iter().enumerate() {
        threads[i % nthreads].workers.push(w);
    }
    for t in &mut threads {
        let mut used: Vec<u32> = t
            .workers
            .iter()
            .flat_map(|w| w.disks.iter().copied())
            .collect();
        used.sort_unstable();
        used.dedup();
        t.disks = used;
    }
    Plan { disks, threads }
}

/// Merge disks that are the same file, LUN or export (a single target mapped to
/// many VM disks), keeping indices consistent. Null disks stay distinct: they
/// cost nothing and keep per-disk sequential streams apart.
fn dedupe_shared_disks(disks: &mut Vec<Disk>, workers: &mut [WorkerPlan]) {
    let mut remap = Vec::with_capacity(disks.len());
    let mut kept: Vec<Disk> = Vec::new();
    for d in disks.drain(..) {
        let existing = (d.target != "null:")
            .then(|| {
                kept.iter()
                    .position(|k| k.target == d.target && k.path == d.path)
            })
            .flatten();
        match existing {
            Some(i) => remap.push(i as u32),
            None => {
                remap.push(kept.len() as u32);
                kept.push(d);
            }
        }
    }
    for w in workers.iter_mut() {
        for d in &mut w.disks {
            *d = remap[*d as usize];
        }
    }
    *disks = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(vms: u32, workers: u32, disks: u32) -> Spec {
        crate::workload::test_spec(vms, workers, disks)
    }

    #[test]
    fn directory_gets_a_file_per_vm_disk_and_threads_share_workers() {
        let t = vec![(Target::File("/d".into()), TargetKind::Directory)];
        let p = build(&spec(128, 1, 2), &t, 2);
        assert_eq!(p.disks.len(), 256);
        assert_eq!(p.threads.len(), 2);
        assert_eq!(p.threads[0].workers.len(), 64);
        assert_eq!(p.threads[0].disks.len(), 128);
        assert_eq!(
            p.disks[3].path.as_deref(),
            Some(std::path::Path::new("/d/storlab-vm001-d1.dat"))
        );
        let all: u32 = p
            .threads
            .iter()
            .map(|t| t.workers.iter().map(|w| w.disks.len() as u32).sum::<u32>())
            .sum();
        assert_eq!(all, 256);
    }

    #[test]
    fn two_targets_alternate_disks_and_single_file_is_shared() {
        let t = vec![
            (Target::File("/a".into()), TargetKind::Directory),
            (Target::File("/b".into()), TargetKind::Directory),
        ];
        let p = build(&spec(2, 1, 2), &t, 1);
        let targets: Vec<&str> = p.disks.iter().map(|d| d.target.as_str()).collect();
        assert_eq!(targets, ["file:/a", "file:/b", "file:/a", "file:/b"]);
        let single = vec![(Target::File("/f".into()), TargetKind::Single)];
        let p = build(&spec(4, 4, 2), &single, 2);
        assert_eq!(p.disks.len(), 1);
        assert!(p.threads.iter().all(|t| t.disks == [0]));
        assert_eq!(p.threads.iter().map(|t| t.workers.len()).sum::<usize>(), 16);
    }

    #[test]
    fn never_more_threads_than_workers() {
        let t = vec![(Target::Null, TargetKind::Null)];
        let p = build(&spec(1, 1, 1), &t, 8);
        assert_eq!(p.threads.len(), 1);
    }
}
