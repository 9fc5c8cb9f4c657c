//! The five studies as data: what each runs, where, and its renderer. The
//! workloads are the built-in catalogue's (src/workload/catalogue/builtin.toml);
//! the findings are the studies' own words, shortened (docs/studies.md).

use super::{DEFAULT_BASELINE, Part, Study, dss, freenas, ramp, vsphere, zfs};

/// Every study, in the seeds' order.
pub static STUDIES: [Study; 5] = [
    Study {
        name: "vsphere-fc-fcoe-iscsi-nfs",
        number: "000",
        baseline: "fc4",
        title: "VMware and NetApp: vSphere 4.1 FC (4 and 8 Gb), FCoE, iSCSI and NFS",
        finding: "at 32..128 VMs every protocol within 5% of 4 Gb FC in IOPS and latency; \
                  host CPU within about 3 points; single-VM OLTP within 3% (8% on 1 GbE)",
        parts: &[Part {
            workloads: &["vsphere-shared-4k", "vsphere-shared-8k", "vsphere-oltp-8k"],
            targets: &["iscsi", "nfs3"],
            every_medium: true,
        }],
        media: &[],
        render: vsphere::render,
    },
    Study {
        name: "fc-8gb-vmware-ramp",
        number: "001",
        baseline: DEFAULT_BASELINE,
        title: "openBench Labs: an 8 Gb FC SAN for a VMware host",
        finding: "8 VMs reading with growing block sizes converge on the wire: about 800 MB/s \
                  on 8 Gb FC, 400 MB/s on 4 Gb FC",
        parts: &[Part {
            workloads: &["blocksize-ramp-read"],
            targets: &["iscsi", "nfs3", "nbd"],
            every_medium: true,
        }],
        media: &[],
        render: ramp::render,
    },
    Study {
        name: "zfs-nfs-iscsi-vmware",
        number: "002",
        baseline: DEFAULT_BASELINE,
        title: "A ZFS store for VMware over NFS and iSCSI",
        finding: "8K synchronous random writes: a log device cut mean latency from 34 to 8 ms \
                  (4x the IOPS); NFS used about twice the host CPU of iSCSI for the same 32K reads",
        parts: &[
            Part {
                workloads: &["sqlio-8k-randwrite"],
                targets: &["nfs3", "iscsi"],
                every_medium: true,
            },
            Part {
                workloads: &["seq-32k-read"],
                targets: &["nfs3", "iscsi"],
                every_medium: false,
            },
        ],
        media: &["raidz-sata", "raidz-sata-slog"],
        render: zfs::render,
    },
    Study {
        name: "oracle-dss-10gbe-fc",
        number: "003",
        baseline: "fc4",
        title: "Chelsio, BLADE and NetApp: Oracle DSS over 10 GbE iSCSI and NFS vs 4 Gb FC",
        finding: "average 7.74 Gb/s NFS, 6.95 iSCSI, 3.22 FC (peaks near each wire's limit); \
                  host CPU 81% NFS, 99% iSCSI, 91% FC",
        parts: &[Part {
            workloads: &["dss-seq-read"],
            targets: &["nfs3", "iscsi"],
            every_medium: true,
        }],
        media: &[],
        render: dss::render,
    },
    Study {
        name: "freenas-nfs-iscsi",
        number: "004",
        baseline: DEFAULT_BASELINE,
        title: "NFS vs iSCSI on FreeNAS 8 (ZFS mirror)",
        finding: "3.05 GB copy: to the store 16m35s over NFS (sync writes) vs 49 s over iSCSI, \
                  from it about 2m15s on both; NFS for reads, iSCSI for writes",
        // ESXi writes to an NFS datastore with FILE_SYNC (`stable=file`), to
        // an iSCSI LUN without: the copy's difference. The pool: SATA disks
        // with no log device, as FreeNAS 8 had.
        parts: &[Part {
            workloads: &["file-copy", "atto-sweep", "iometer-17"],
            targets: &["nfs3?stable=file", "iscsi"],
            every_medium: true,
        }],
        media: &["raidz-sata"],
        render: freenas::render,
    },
];

/// The study called `name` (or numbered `name`: "002"); the error lists them.
pub fn find(name: &str) -> Result<&'static Study, String> {
    STUDIES
        .iter()
        .find(|s| s.name == name || s.number == name)
        .ok_or_else(|| {
            let names: Vec<&str> = STUDIES.iter().map(|s| s.name).collect();
            format!(
                "unknown study {name:?} (allowed: {}, or a number 000..004; see `storlab study list`)",
                names.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Profile;
    use crate::workload::catalogue::Catalogue;

    #[test]
    fn every_workload_of_every_study_is_catalogued() {
        let cat = Catalogue::user(&[]).unwrap();
        for s in &STUDIES {
            for w in s.workloads() {
                for p in [Profile::Quick, Profile::Full] {
                    let jobs = cat
                        .resolve(w, p)
                        .unwrap_or_else(|e| panic!("{}: {w}: {e}", s.name));
                    assert!(!jobs.is_empty(), "{}: {w}", s.name);
                }
            }
        }
    }

    #[test]
    fn studies_are_found_by_name_or_number_and_unknown_ones_list_them() {
        assert_eq!(find("002").unwrap().name, "zfs-nfs-iscsi-vmware");
        assert_eq!(find("oracle-dss-10gbe-fc").unwrap().number, "003");
        let e = find("nope").unwrap_err();
        for s in &STUDIES {
            assert!(e.contains(s.name), "{e}");
        }
        let names: Vec<&str> = STUDIES.iter().map(|s| s.name).collect();
        let numbers: Vec<&str> = STUDIES.iter().map(|s| s.number).collect();
        assert_eq!(numbers, ["000", "001", "002", "003", "004"]);
        assert!(!names.contains(&"list"), "`storlab study list` lists them");
    }

    #[test]
    fn every_target_of_every_study_is_a_lab_target_with_valid_options() {
        for s in &STUDIES {
            for t in s.parts.iter().flat_map(|p| p.targets) {
                let (name, options) = t.split_once('?').unwrap_or((t, ""));
                assert!(
                    crate::compare::LAB_TARGETS.contains(&name),
                    "{}: {t}",
                    s.name
                );
                if !options.is_empty() {
                    let url = format!("nfs://h/e/f?{options}");
                    assert!(
                        crate::target::Target::parse(&url).is_ok(),
                        "{}: {t}",
                        s.name
                    );
                }
            }
        }
    }
}
