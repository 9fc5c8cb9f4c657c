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
    if half == "read" && !abs {
        why.push(
            "the study's copy back ran at 22.5 to 23.2 MB/s in all four of its set-ups \
             (ZFS and UFS, NFS and iSCSI), so what bound it was not the storage, and \
             seeds/004 does not say what it was (a copy through the vSphere Client's \
             datastore browser to a workstation would be one candidate): storlab's copy \
             back reads at the link's rate"
                .into(),
        );
    }
    Check {
        id,
        kind: Kind::Absolute,
        published,
        measured: format!(
            "NFS (FILE_SYNC writes, as ESXi's) {n:.2} MB/s, iSCSI {i:.2} MB/s: iSCSI {:.1}x",
            i / n
        ),
        verdict: if ok {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        },
        why: why.join("; "),
    }
}

/// Two rates closer than this are a tie: a single quick-profile point's
/// noise, or both protocols at the same link's rate; a tie shows no direction.
const TIE: f64 = 0.05;

/// NFS ahead for reads, iSCSI for writes, over every ATTO and Iometer point
/// where one is ahead by more than [`TIE`].
fn direction(v: &View) -> Check {
    let published =
        "ATTO 0.5 KB-8 MB and the Iometer workloads: NFS ahead for reads, iSCSI for writes";
    // (NFS ahead, iSCSI ahead, ties), for reads and for points with writes.
    let (mut reads, mut writes) = ([0usize; 3], [0usize; 3]);
    for job in ["atto-sweep", "iometer-17"] {
        for l in v.labels(job) {
            let Some(p) = v
                .points(job, Some(&l), ISCSI)
                .first()
                .map(|p| p.spec.clone())
            else {
                continue;
            };
            let (Some(n), Some(i)) = (
                v.value(job, Some(&l), NFS, Metric::MbS),
                v.value(job, Some(&l), ISCSI, Metric::MbS),
            ) else {
                continue;
            };
            let tally = if p.writes() { &mut writes } else { &mut reads };
            let k = if (n - i).abs() <= TIE * n.max(i) {
                2
            } else if n > i {
                0
            } else {
                1
            };
            tally[k] += 1;
        }
    }
    if reads.iter().chain(&writes).sum::<usize>() == 0 {
        return super::not_measured(
            "F004-3",
            Kind::Relative,
            published,
            "ATTO or Iometer points",
        );
    }
    let ok = reads[0] > reads[1] && writes[1] > writes[0];
    Check {
        id: "F004-3",
        kind: Kind::Relative,
        published,
        measured: format!(
            "reads: NFS ahead at {} points, iSCSI at {}, {} within {:.0}% of each other; with writes: iSCSI ahead at {}, NFS at {}, {} ties",
            reads[0],
            reads[1],
            reads[2],
            100.0 * TIE,
            writes[1],
            writes[0],
            writes[2]
        ),
        verdict: if ok {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        },
        why: if ok {
            "the same direction as the study's summary where one protocol is ahead by more \
             than 5%; closer points (most at the 1 GbE link's rate) show none"
                .into()
        } else {
            v.bounds("atto-sweep", &[NFS, ISCSI])
        },
    }
}
