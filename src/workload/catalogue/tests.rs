//! The built-in catalogue's values and the loader's rules and errors.

use super::*;
use crate::workload::{BlockSizes, SyncMode};
use std::time::Duration;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// Quick profile: most ramp of a time-bounded point.
const QUICK_RAMP: Duration = Duration::from_secs(1);
/// Quick profile: most time of any point (those bounded by io_size).
const QUICK_IO_CAP: Duration = Duration::from_secs(10);

/// Doubling block sizes from `lo` to `hi` inclusive.
fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    std::iter::successors(Some(lo), |s| Some(s * 2))
        .take_while(|s| *s <= hi)
        .collect()
}

/// Every name in WORKLOADS.md.
const NAMES: &[&str] = &[
    "vsphere-shared-4k",
    "vsphere-shared-8k",
    "vsphere-oltp-8k",
    "vsphere-prepare",
    "db-8k-read",
    "blocksize-ramp-read",
    "seq-32k-duplex",
    "seq-32k-read",
    "sqlio-8k-randwrite",
    "sqlio-64k-write-8vm",
    "dd-64k-write",
    "dd-64k-read",
    "dss-seq-read",
    "blocksize-sweep",
    "file-copy",
    "atto-sweep",
    "iometer-17",
    "ntfs-1",
    "ntfs-2",
    "ntfs-3",
    "ntfs-4",
    "ntfs-5",
    "exchange-1",
    "exchange-2",
    "exchange-3",
    "exchange-4",
    "exchange-5",
    "exchange-6",
    "sql-1",
    "sql-2",
    "sql-3",
    "sql-4",
    "backup",
    "restore",
];

#[test]
fn every_name_resolves_and_validates() {
    for profile in [Profile::Full, Profile::Quick] {
        for name in NAMES {
            let job = get(name, profile).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(job.name, *name);
            assert_eq!(job.profile, Some(profile));
            assert_eq!(resolve(name, profile).unwrap(), vec![job]);
            show_text(name, profile).unwrap();
        }
        for s in ["vsphere-protocols", "nfs-vs-iscsi"] {
            let jobs = resolve(s, profile).unwrap();
            let names: Vec<_> = jobs.iter().map(|j| j.name.as_str()).collect();
            assert_eq!(names, Catalogue::builtin().suite(s).unwrap().workloads);
        }
    }
    assert_eq!(entries().len(), NAMES.len());
}

type Shape = Vec<(
    String,
    Vec<(String, u32, u32, u32, BlockSizes, u8, u8, u32)>,
)>;

fn shape(job: &Job) -> Shape {
    job.points
        .iter()
        .map(|p| {
            let groups = p
                .groups
                .iter()
                .map(|g| {
                    let a = &g.access;
                    let s = (
                        g.vms,
                        g.workers_per_vm,
                        g.disks_per_vm,
                        a.bs.clone(),
                        a.read_pct,
                        a.random_pct,
                    );
                    (g.name.clone(), s.0, s.1, s.2, s.3, s.4, s.5, a.iodepth)
                })
                .collect();
            (p.label.clone(), groups)
        })
        .collect()
}

#[test]
fn quick_keeps_the_shape() {
    for e in entries() {
        let full = get(&e.name, Profile::Full).unwrap();
        let quick = get(&e.name, Profile::Quick).unwrap();
        assert_eq!(shape(&full), shape(&quick), "{}", e.name);
        for p in &quick.points {
            assert!(
                p.ramp <= QUICK_RAMP && p.runtime <= QUICK_IO_CAP,
                "{}",
                e.name
            );
            assert!(p.size <= 16 * MIB, "{}", e.name);
            assert!(p.io_limit.is_none_or(|b| b <= 16 * MIB), "{}", e.name);
        }
    }
}

#[test]
fn quick_vsphere_fits_a_laptop() {
    let job = get("vsphere-shared-4k", Profile::Quick).unwrap();
    let last = job.points.last().unwrap();
    let files: u64 = last
        .groups
        .iter()
        .map(|g| g.vms as u64 * g.disks_per_vm as u64)
        .sum();
    assert!(files * last.size <= GIB);
    let total: Duration = job.points.iter().map(|p| p.ramp + p.runtime).sum();
    assert!(total <= Duration::from_secs(20));
}

#[test]
fn study_values() {
    let j = get("vsphere-shared-4k", Profile::Full).unwrap();
    let vms: Vec<u32> = j.points.iter().map(|p| p.groups[0].vms).collect();
    assert_eq!(vms, [32, 64, 96, 128]);
    let p = &j.points[0];
    let g = &p.groups[0];
    assert_eq!(
        (g.workers_per_vm, g.disks_per_vm, g.access.iodepth),
        (1, 2, 2)
    );
    assert_eq!(
        (g.access.bs.max(), g.access.read_pct, g.access.random_pct),
        (4096, 75, 100)
    );
    assert_eq!(
        (p.size, p.ramp, p.runtime),
        (10 * GIB, Duration::from_secs(600), Duration::from_secs(300))
    );
    assert_eq!(
        j.points
            .iter()
            .map(|p| p.total_iodepth())
            .collect::<Vec<_>>(),
        [64, 128, 192, 256]
    );

    let o = get("vsphere-oltp-8k", Profile::Full).unwrap();
    assert_eq!(o.points[0].total_iodepth(), 128);
    assert_eq!(o.points[0].size, 200 * GIB);

    let d = get("seq-32k-duplex", Profile::Full).unwrap();
    assert_eq!(d.points.len(), 2);
    assert_eq!(d.points[0].groups.len(), 1);
    assert_eq!(d.points[1].groups.len(), 2);
    assert_eq!(d.points[1].groups[1].access.read_pct, 0);

    let r = get("blocksize-ramp-read", Profile::Full).unwrap();
    let sizes: Vec<u64> = r
        .points
        .iter()
        .map(|p| p.groups[0].access.bs.max())
        .collect();
    assert_eq!(sizes, doubling(512, MIB));
    assert_eq!((sizes.len(), r.points[0].groups[0].vms), (12, 8));

    let a = get("atto-sweep", Profile::Full).unwrap();
    assert_eq!(a.points.len(), 30);
    assert_eq!(a.points[0].label, "bs=512 write");
    assert_eq!(a.points[29].label, "bs=8m read");
    assert!(
        a.points
            .iter()
            .all(|p| p.direct && p.io_limit == Some(256 * MIB) && p.groups[0].access.iodepth == 4)
    );

    let s = get("sqlio-8k-randwrite", Profile::Full).unwrap();
    let p = &s.points[0];
    assert_eq!(
        (p.sync, p.size, p.runtime),
        (SyncMode::Sync, 32 * GIB, Duration::from_secs(300))
    );
    assert_eq!(
        (p.groups[0].workers_per_vm, p.groups[0].access.iodepth),
        (2, 4)
    );

    let dd = get("dd-64k-write", Profile::Full).unwrap();
    assert_eq!(dd.points[0].io_limit, Some(64 * GIB));
    let fc = get("file-copy", Profile::Full).unwrap();
    assert_eq!(fc.points[0].io_limit, Some(3124 * MIB));

    let i = get("iometer-17", Profile::Full).unwrap();
    assert_eq!(i.points.len(), 17);
    assert_eq!(i.points[10].label, "exchange-6");
    assert_eq!(
        (
            i.points[10].groups[0].access.read_pct,
            i.points[10].groups[0].access.random_pct
        ),
        (50, 50)
    );
}

#[test]
fn silent_values_say_so() {
    let j = get("db-8k-read", Profile::Full).unwrap();
    let iodepth = j.provenance.iter().find(|p| p.field == "iodepth").unwrap();
    assert!(
        iodepth.source.starts_with("storlab default: study silent"),
        "{}",
        iodepth.source
    );
    let show = show_text("db-8k-read", Profile::Full).unwrap();
    assert!(
        show.contains("iodepth") && show.contains("study silent"),
        "{show}"
    );
    let show = show_text("vsphere-shared-4k", Profile::Full).unwrap();
    assert!(show.contains("study 000"), "{show}");
}

#[test]
fn unknown_names_list_the_catalogue() {
    let e = get("vsphere-4k", Profile::Full).unwrap_err().to_string();
    assert!(
        e.starts_with("unknown workload \"vsphere-4k\" (allowed: vsphere-shared-4k, "),
        "{e}"
    );
    assert!(e.contains("suites: vsphere-protocols, nfs-vs-iscsi"), "{e}");
    assert!(resolve("nope", Profile::Quick).is_err());
    assert!(show_text("nope", Profile::Quick).is_err());
    let e = get("nfs-vs-iscsi", Profile::Full).unwrap_err().to_string();
    assert!(e.contains("is a suite"), "{e}");
}

#[test]
fn listing() {
    let text = list_text();
    for name in NAMES {
        assert!(text.contains(name), "{name}");
    }
    assert!(text.contains("vsphere-protocols") && text.contains("nfs-vs-iscsi"));
}
