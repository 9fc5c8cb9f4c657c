//! The five studies as data: what each runs, where, and its renderer. The
//! workloads are the built-in catalogue's (src/workload/catalogue/builtin.toml);
//! the findings are the studies' own words, shortened (docs/studies.md).

use super::{DEFAULT_BASELINE, Lab, Part, Study, dss, findings, freenas, ramp, vsphere, zfs};

/// Every study, in the seeds' order.
pub static STUDIES: [Study; 5] = [
    Study {
        name: "vsphere-fc-fcoe-iscsi-nfs",
        number: "000",
        baseline: "fc4",
        title: "VMware and NetApp: vSphere 4.1 FC (4 and 8 Gb), FCoE, iSCSI and NFS",
        finding: "at 32..128 VMs every protocol within 5% of 4 Gb FC in IOPS and latency; \
                  host CPU within about 3 points; single-VM OLTP within 3% (8% on 1 GbE)",
        // The study's bars: 4 and 8 Gb FC, 10 Gb FCoE, NFS and iSCSI at 1 GbE
        // and 10 GbE, on one array. The block paths cross no Ethernet, so
        // they run on whichever lab; the protocols once per link.
        labs: &[
            Lab {
                name: "1gbe",
                medium: None,
                link: Some("1gbe"),
                scale: 1,
                suffix: Some("1GbE"),
                parts: &[Part {
                    workloads: VSPHERE,
                    targets: &["fc4", "nfs3", "iscsi"],
                }],
            },
            Lab {
                name: "10gbe",
                medium: None,
                link: Some("10gbe"),
                scale: 1,
                suffix: Some("10GbE"),
                parts: &[Part {
                    workloads: VSPHERE,
                    targets: &["fc8", "fcoe10", "nfs3", "iscsi"],
                }],
            },
        ],
        render: vsphere::render,
        findings: findings::vsphere,
    },
    Study {
        name: "fc-8gb-vmware-ramp",
        number: "001",
        baseline: DEFAULT_BASELINE,
        title: "openBench Labs: an 8 Gb FC SAN for a VMware host",
        finding: "one VM over 60,000 IOPS of 8 KB reads; 8 VMs reading with growing block \
                  sizes converge on the wire: about 800 MB/s on 8 Gb FC, 400 MB/s on 4 Gb FC; \
                  32 KB reads and writes together about 1.3 GB/s full duplex",
        // The study measured FC only, against TMS RamSan-400 RAM-SSD arrays.
        labs: &[Lab {
            name: "ramsan-400",
            medium: Some("ramsan-400"),
            link: None,
            scale: 1,
            suffix: None,
            parts: &[Part {
                workloads: &["db-8k-read", "blocksize-ramp-read", "seq-32k-duplex"],
                targets: &["fc8", "fc4"],
            }],
        }],
        render: ramp::render,
        findings: findings::ramp,
    },
    Study {
        name: "zfs-nfs-iscsi-vmware",
        number: "002",
        baseline: DEFAULT_BASELINE,
        title: "A ZFS store for VMware over NFS and iSCSI",
        finding: "8K synchronous random writes: a log device cut mean latency from 34 to 8 ms \
                  (4x the IOPS); NFS used about twice the host CPU of iSCSI for the same 32K reads; \
                  NFS streams near 1 GbE's rate; the X4500's raidz at 600 MB/s writes, 800 reads",
        // The ZFS mirror served the ESX hosts over 1 GbE, with and without
        // its DRAM log device; the X4500 ran dd on its own pool.
        labs: &[
            Lab {
                name: "raidz-sata",
                medium: Some("raidz-sata"),
                link: Some("1gbe"),
                scale: 1,
                suffix: None,
                parts: &[
                    Part {
                        workloads: &["sqlio-8k-randwrite", "seq-32k-read"],
                        targets: &["fc8", "nfs3", "iscsi"],
                    },
                    // dd in a VM on the NFS datastore: ESX writes FILE_SYNC.
                    Part {
                        workloads: &["dd-64k-read", "dd-64k-mixed"],
                        targets: &["nfs3?stable=file"],
                    },
                ],
            },
            Lab {
                name: "raidz-sata-slog",
                medium: Some("raidz-sata-slog"),
                link: Some("1gbe"),
                scale: 1,
                suffix: None,
                parts: &[Part {
                    workloads: &["sqlio-8k-randwrite"],
                    targets: &["fc8", "nfs3", "iscsi"],
                }],
            },
            Lab {
                name: "x4500-raidz",
                medium: Some("x4500-raidz"),
                link: None,
                scale: 1,
                suffix: None,
                parts: &[Part {
                    workloads: &["dd-64k-write", "dd-64k-read", "dd-64k-mixed"],
                    targets: &["block"],
                }],
            },
        ],
        render: zfs::render,
        findings: findings::zfs,
    },
    Study {
        name: "oracle-dss-10gbe-fc",
        number: "003",
        baseline: "fc4",
        title: "Chelsio, BLADE and NetApp: Oracle DSS over 10 GbE iSCSI and NFS vs 4 Gb FC",
        finding: "average 7.74 Gb/s NFS, 6.95 iSCSI, 3.22 FC (peaks near each wire's limit); \
                  host CPU 81% NFS, 99% iSCSI, 91% FC",
        // 10 GbE and 4 Gb FC carry more than two cores can drive through a
        // user-space client, server and media layer at once: the links run
        // four times slower (2.5 Gb/s and 1 Gb FC) and the figures are shown
        // four times larger, which the report says.
        labs: &[Lab {
            name: "10gbe",
            medium: None,
            link: Some("10gbe"),
            scale: 4,
            suffix: None,
            parts: &[Part {
                workloads: &["dss-seq-read"],
                targets: &["fc4", "nfs3", "iscsi"],
            }],
        }],
        render: dss::render,
        findings: findings::dss,
    },
    Study {
        name: "freenas-nfs-iscsi",
        number: "004",
        baseline: DEFAULT_BASELINE,
        title: "NFS vs iSCSI on FreeNAS 8 (ZFS mirror)",
        finding: "3.05 GB copy: to the store 16m35s over NFS (sync writes) vs 49 s over iSCSI, \
                  from it about 2m15s on both; NFS for reads, iSCSI for writes",
        // ESXi writes to an NFS datastore with FILE_SYNC (`stable=file`), to
        // an iSCSI LUN without: the copy's difference. The box: a ZFS mirror
        // of two SATA disks with 8 GB of RAM, no log device, over 1 GbE.
        labs: &[Lab {
            name: "freenas-mirror",
            medium: Some("freenas-mirror"),
            link: Some("1gbe"),
            scale: 1,
            suffix: None,
            parts: &[Part {
                workloads: &["file-copy", "atto-sweep", "iometer-17"],
                targets: &["fc8", "nfs3?stable=file", "iscsi"],
            }],
        }],
        render: freenas::render,
        findings: findings::freenas,
    },
];

/// Study 000's three tests, on every one of its labs.
const VSPHERE: &[&str] = &["vsphere-shared-4k", "vsphere-shared-8k", "vsphere-oltp-8k"];

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
            for t in s.labs.iter().flat_map(|l| l.parts).flat_map(|p| p.targets) {
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
