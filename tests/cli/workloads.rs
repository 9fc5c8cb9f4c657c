use crate::common::*;

/// Every workload and suite named in WORKLOADS.md.
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
    "ntfs-5",
    "exchange-1",
    "exchange-6",
    "sql-1",
    "sql-4",
    "backup",
    "restore",
    "vsphere-protocols",
    "nfs-vs-iscsi",
];

#[test]
fn workloads_lists_every_name() {
    let o = storlab(&["workloads"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for n in NAMES {
        assert!(
            out.lines().any(|l| l.split_whitespace().any(|w| w == *n)),
            "{n} missing from:\n{out}"
        );
    }
}

#[test]
fn show_prints_spec_and_provenance() {
    let o = storlab(&["workloads", "show", "vsphere-oltp-8k"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for want in ["8 KiB", "60", "000"] {
        assert!(out.contains(want), "show lacks {want:?}:\n{out}");
    }
    let o = storlab(&["workloads", "show", "db-8k-read"]);
    assert!(stdout(&o).contains("study silent"), "{}", stdout(&o));
    let o = storlab(&["workloads", "show", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope"));
}

#[test]
fn catalogue_quick_profile_fits_the_lab_default_backing() {
    // Every built-in workload and suite in the quick profile, sliced on one
    // lab target, must fit the lab's default backing store.
    use storlab::plan::{TargetKind, build};
    use storlab::target::Target;
    use storlab::workload::{Profile, catalogue};
    let backing = storlab::lab::LabConfig::new("/nonexistent").size;
    let one = vec![(Target::File("/lab/disk.img".into()), TargetKind::Single)];
    let mut names: Vec<&str> = catalogue::entries()
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    names.extend(catalogue::suites().iter().map(|s| s.name.as_str()));
    for name in names {
        for job in catalogue::resolve(name, Profile::Quick).unwrap() {
            for point in &job.points {
                let need = build(point, &one, 2).size_needed();
                assert!(
                    need <= backing,
                    "{name} / {}: needs {need} bytes, the lab's default backing holds {backing}",
                    point.label
                );
            }
        }
    }
}
