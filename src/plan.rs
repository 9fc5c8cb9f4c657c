//! The plan: one load point laid out as threads → workers → disks.
//!
//! Many light workers share one engine thread (and one backend, one io_uring
//! ring), so 128 "VMs" at 2 outstanding I/Os each run on two cores without 128
//! threads. Workers are dealt to threads round-robin; each thread opens only the
//! disks its workers use.
//!
//! A single target (file, device, LUN, NBD export, NFS file) is one disk to
//! open however many VM disks map to it. With [`DiskLayout::Slice`] (the
//! default) VM disk `k` of the target uses its own slice `[offset + k·size,
//! offset + (k+1)·size)`, `k` counting the target's VM disks in VM order over
//! the whole load point, so a host of a fleet gets the same slices as a single
//! host would; with [`DiskLayout::Shared`] every VM disk uses `[offset, offset + size)`.

use crate::target::Target;
use crate::workload::pattern::Generator;
use crate::workload::{Access, DiskLayout, Spec};
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

/// One disk to open: a VM's file in a directory, a null region, or a single
/// target shared by several VM disks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disk {
    /// The target URL it lives on.
    pub target: String,
    /// Path of the file or device (`None` for null).
    pub path: Option<PathBuf>,
    /// Start of the region used on it, bytes.
    pub offset: u64,
    /// Size of the region used on it, bytes: the spec's size, or every VM
    /// disk's slice together on a sliced single target.
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

    /// End of the region used on it: the bytes the file, LUN or export must hold.
    pub fn end(&self) -> u64 {
        self.offset + self.size
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
    /// Per entry of `disks`: start of this VM's region on that disk, bytes
    /// (its slice of a sliced single target, else the spec's offset).
    pub bases: Vec<u64>,
    /// Size of each region, bytes (the spec's size).
    pub region_size: u64,
    /// Seed of its generator.
    pub seed: u64,
}

impl WorkerPlan {
    /// Its access-pattern generator: I/O to disk `i` stays in
    /// `[bases[i], bases[i] + region_size)`.
    pub fn generator(&self) -> Generator {
        Generator::new(&self.access, &self.bases, self.region_size, self.seed)
    }
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

impl Plan {
    /// Bytes the largest disk must hold (its region's end); 0 without disks.
    pub fn size_needed(&self) -> u64 {
        self.disks.iter().map(Disk::end).max().unwrap_or(0)
    }
}

/// Bytes one single target (a file, device, LUN, export or NFS file that
/// every disk shares) must hold for `spec`: with the slice layout each VM
/// disk takes its own slice of it.
pub fn single_target_need(spec: &Spec) -> u64 {
    build(spec, &[(Target::Null, TargetKind::Single)], 1).size_needed()
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
        Target::File(p) | Target::Fc { path: p, .. } => {
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
/// On a single target the VM disks get slices or share one region as
/// `spec.disk_layout` says (see the module docs).
pub fn build(spec: &Spec, targets: &[(Target, TargetKind)], max_threads: usize) -> Plan {
    assert!(!targets.is_empty(), "a plan needs at least one target");
    let mut disks = Vec::new();
    let mut workers = Vec::new();
    // Per target: VM disks mapped to it so far (the next slice number).
    let mut next_slice = vec![0u64; targets.len()];
    let mut vm = 0u32;
    for group in &spec.groups {
        for _ in 0..group.vms {
            let mut vm_disks = Vec::with_capacity(group.disks_per_vm as usize);
            for d in 0..group.disks_per_vm {
                let t = (vm as usize * group.disks_per_vm as usize + d as usize) % targets.len();
                let (target, kind) = &targets[t];
                let path = match (target.local_path(), kind) {
                    (Some(dir), TargetKind::Directory) => Some(dir.join(disk_file_name(vm, d))),
                    (p, _) => p.map(|p| p.to_path_buf()),
                };
                let slice = next_slice[t];
                next_slice[t] += 1;
                let offset = match (kind, spec.disk_layout) {
                    (TargetKind::Single, DiskLayout::Slice) => spec.offset + slice * spec.size,
                    _ => spec.offset,
                };
                vm_disks.push(disks.len() as u32);
                disks.push(Disk {
                    target: target.to_string(),
                    path,
                    offset,
                    size: spec.size,
                });
            }
            let bases: Vec<u64> = vm_disks.iter().map(|&d| disks[d as usize].offset).collect();
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
                    bases: bases.clone(),
                    region_size: spec.size,
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
/// many VM disks), keeping indices consistent; the merged disk's region covers
/// every VM disk's region on it. Null disks stay distinct: they cost nothing
/// and keep per-disk sequential streams apart.
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
            Some(i) => {
                let k = &mut kept[i];
                let (start, end) = (k.offset.min(d.offset), k.end().max(d.end()));
                k.offset = start;
                k.size = end - start;
                remap.push(i as u32);
            }
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

    /// Every VM disk's region as (target, start, end), from the workers' bases.
    fn vm_regions(p: &Plan) -> Vec<(u32, u32, String, u64, u64)> {
        let mut out: Vec<(u32, u32, String, u64, u64)> = p
            .threads
            .iter()
            .flat_map(|t| &t.workers)
            .filter(|w| w.id.worker == 0)
            .flat_map(|w| {
                w.disks
                    .iter()
                    .zip(&w.bases)
                    .enumerate()
                    .map(|(i, (&d, &b))| {
                        let target = p.disks[d as usize].target.clone();
                        (w.id.vm, i as u32, target, b, b + w.region_size)
                    })
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn single_targets_give_each_vm_disk_its_own_slice() {
        for (vms, workers, disks, ntargets) in [
            (1, 1, 1, 1),
            (4, 2, 1, 1),
            (3, 1, 2, 1),
            (128, 1, 2, 1),
            (5, 3, 2, 2),
            (7, 1, 3, 2),
        ] {
            let mut s = spec(vms, workers, disks);
            s.offset = 3 << 20;
            let t: Vec<_> = (0..ntargets)
                .map(|i| (Target::File(format!("/f{i}").into()), TargetKind::Single))
                .collect();
            let p = build(&s, &t, 3);
            let case = format!("{vms} VMs x {workers} workers x {disks} disks on {ntargets}");
            // One disk to open per target, covering every slice on it.
            assert_eq!(p.disks.len(), ntargets, "{case}");
            let regions = vm_regions(&p);
            assert_eq!(regions.len(), (vms * disks) as usize, "{case}");
            for (ti, d) in p.disks.iter().enumerate() {
                let mut on: Vec<(u64, u64)> = regions
                    .iter()
                    .filter(|r| r.2 == d.target)
                    .map(|r| (r.3, r.4))
                    .collect();
                on.sort();
                // Disk k of the target is exactly [offset + k*size, offset + (k+1)*size):
                // disjoint, contiguous, nothing outside.
                let expect: Vec<(u64, u64)> = (0..on.len() as u64)
                    .map(|k| (s.offset + k * s.size, s.offset + (k + 1) * s.size))
                    .collect();
                assert_eq!(on, expect, "{case}: target {ti}");
                assert_eq!((d.offset, d.end()), (s.offset, expect.last().unwrap().1));
            }
            // In VM order: VM v's disk d is slice v*disks+d of a lone target.
            if ntargets == 1 {
                for &(vm, d, _, start, _) in &regions {
                    let k = (vm * disks + d) as u64;
                    assert_eq!(start, s.offset + k * s.size, "{case}");
                }
            }
            assert_eq!(
                p.size_needed(),
                p.disks.iter().map(Disk::end).max().unwrap()
            );
            // Every worker of a VM uses that VM's slices.
            for w in p.threads.iter().flat_map(|t| &t.workers) {
                let mine: Vec<u64> = regions
                    .iter()
                    .filter(|r| r.0 == w.id.vm)
                    .map(|r| r.3)
                    .collect();
                assert_eq!(w.bases, mine, "{case}");
            }
        }
    }

    #[test]
    fn shared_layout_and_directories_use_one_region() {
        let mut s = spec(6, 2, 2);
        s.offset = 1 << 20;
        s.disk_layout = DiskLayout::Shared;
        let single = vec![(Target::File("/f".into()), TargetKind::Single)];
        let p = build(&s, &single, 2);
        assert_eq!(p.disks.len(), 1);
        assert_eq!((p.disks[0].offset, p.disks[0].size), (1 << 20, s.size));
        assert!(vm_regions(&p).iter().all(|r| r.3 == 1 << 20));
        assert_eq!(p.size_needed(), (1 << 20) + s.size);
        assert_eq!(single_target_need(&s), (1 << 20) + s.size);
        // Sliced, the 12 VM disks end 12 sizes past the offset.
        let mut sliced = s.clone();
        sliced.disk_layout = DiskLayout::Slice;
        assert_eq!(single_target_need(&sliced), (1 << 20) + 12 * s.size);
        // A directory gets a file per VM disk whatever the layout.
        for layout in [DiskLayout::Slice, DiskLayout::Shared] {
            s.disk_layout = layout;
            let dir = vec![(Target::File("/d".into()), TargetKind::Directory)];
            let p = build(&s, &dir, 2);
            assert_eq!(p.disks.len(), 12);
            assert!(
                p.disks
                    .iter()
                    .all(|d| d.offset == 1 << 20 && d.size == s.size)
            );
            assert_eq!(p.size_needed(), (1 << 20) + s.size);
        }
    }

    #[test]
    fn workers_draw_io_inside_their_vms_slice() {
        let s = spec(4, 2, 2);
        let t = vec![(Target::Null, TargetKind::Null)];
        let single = vec![(Target::File("/f".into()), TargetKind::Single)];
        for targets in [t, single] {
            let p = build(&s, &targets, 2);
            for w in p.threads.iter().flat_map(|t| &t.workers) {
                let mut g = w.generator();
                for i in 0..2_000 {
                    let d = i % w.disks.len();
                    let io = g.next(d);
                    let lo = w.bases[d];
                    assert!(io.offset >= lo && io.offset + io.len as u64 <= lo + s.size);
                }
            }
        }
    }

    #[test]
    fn disk_layout_from_job_files_and_flags() {
        use crate::workload::flags::Flags;
        use crate::workload::jobfile::parse;
        let job = parse("size = \"1m\"", "t").unwrap();
        assert_eq!(job.points[0].disk_layout, DiskLayout::Slice);
        let job = parse("disk_layout = \"shared\"", "t").unwrap();
        assert_eq!(job.points[0].disk_layout, DiskLayout::Shared);
        let e = parse("disk_layout = \"striped\"", "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid disk_layout = striped (allowed: slice, shared)"),
            "{e}"
        );
        let f = Flags {
            disk_layout: Some("shared".into()),
            ..Flags::default()
        };
        assert_eq!(
            f.apply(None).unwrap().points[0].disk_layout,
            DiskLayout::Shared
        );
        let f = Flags {
            disk_layout: Some("slices".into()),
            ..Flags::default()
        };
        let e = f.apply(None).unwrap_err().to_string();
        assert!(
            e.contains("invalid --disk_layout = slices (allowed: slice, shared)"),
            "{e}"
        );
    }
}
