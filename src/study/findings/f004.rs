//! Study 004's findings: a large file copied to and from a FreeNAS ZFS
//! mirror over NFS (synchronous writes) and iSCSI, and which protocol wins
//! reads and writes over the ATTO and Iometer workloads.

use super::{Check, Kind, Verdict, View, within_2x, within_15pct};
use crate::report::vocab::Metric;
use crate::study::Results;

const NFS: &str = "nfs3?stable=file";
const ISCSI: &str = "iscsi";

/// Every finding of study 004.
pub fn findings(r: &Results) -> Vec<Check> {
    let v = View::of(r, &[]);
    vec![
        copy(&v, "F004-1", "write", (3.04, 61.63)),
        copy(&v, "F004-2", "read", (22.71, 23.23)),
        direction(&v),
    ]
}

/// One half of the copy: both rates within 2x and their ratio within 15%.
fn copy(v: &View, id: &'static str, half: &str, (nfs, iscsi): (f64, f64)) -> Check {
    let published = if half == "write" {
        "3.05 GB copied to the datastore: NFS 16m35s (3.04 MB/s), iSCSI 49 s (61.63 MB/s): 20x"
    } else {
        "the copy back: NFS 2m16s (22.71 MB/s), iSCSI 2m10s (23.23 MB/s): even"
    };
    let job = "file-copy";
    let (Some(n), Some(i)) = (
        v.value(job, Some(half), NFS, Metric::MbS),
        v.value(job, Some(half), ISCSI, Metric::MbS),
    ) else {
        return super::not_measured(id, Kind::Absolute, published, "copy over NFS and iSCSI");
    };
    let abs = within_2x(n, nfs) && within_2x(i, iscsi);
    let rel = within_15pct(i / n, iscsi / nfs);
    let ok = abs && rel;
    let mut why = Vec::new();
    if !within_2x(n, nfs) {
        why.push(format!("NFS not within 2x of {nfs}"));
    }
    if !within_2x(i, iscsi) {
        why.push(format!("iSCSI not within 2x of {iscsi}"));
    }
    if !rel {
        why.push(format!("the ratio not within 15% of {:.1}x", iscsi / nfs));
    }
    why.push(v.bounds(job, &[NFS, ISCSI]));
    Check {
        id,
        kind: Kind::Absolute,
        published,
        measured: format!(
            "NFS (FILE_SYNC writes, as ESXi's) {n:.2} MB/s, iSCSI {i:.2} MB/s: iSCSI {:.1}x",
            i / n
        ),
        verdict: if ok { Verdict::Reproduced } else { Verdict::Differs },
        why: why.join("; "),
    }
}

/// NFS ahead for reads, iSCSI for writes, over every ATTO and Iometer point.
fn direction(v: &View) -> Check {
    let published = "ATTO 0.5 KB-8 MB and the Iometer workloads: NFS ahead for reads, iSCSI for writes";
    let (mut reads, mut nfs_reads, mut writes, mut iscsi_writes) = (0, 0, 0, 0);
    for job in ["atto-sweep", "iometer-17"] {
        for l in v.labels(job) {
            let Some(p) = v.points(job, Some(&l), ISCSI).first().map(|p| p.spec.clone()) else {
                continue;
            };
            let (Some(n), Some(i)) = (
                v.value(job, Some(&l), NFS, Metric::MbS),
                v.value(job, Some(&l), ISCSI, Metric::MbS),
            ) else {
                continue;
            };
            if p.writes() {
                writes += 1;
                iscsi_writes += usize::from(i > n);
            } else {
                reads += 1;
                nfs_reads += usize::from(n > i);
            }
        }
    }
    if reads + writes == 0 {
        return super::not_measured("F004-3", Kind::Relative, published, "ATTO or Iometer points");
    }
    let ok = 2 * nfs_reads > reads && 2 * iscsi_writes > writes;
    Check {
        id: "F004-3",
        kind: Kind::Relative,
        published,
        measured: format!(
            "NFS ahead in {nfs_reads} of {reads} read points, iSCSI in {iscsi_writes} of {writes} points with writes"
        ),
        verdict: if ok { Verdict::Reproduced } else { Verdict::Differs },
        why: if ok {
            "the same direction as the study's summary".into()
        } else {
            v.bounds("atto-sweep", &[NFS, ISCSI])
        },
    }
}
