//! Study 003's findings: Oracle DSS sequential reads over 10 GbE NFS and
//! iSCSI against 4 Gb FC.

use super::{Check, Kind, Verdict, View, within_2x, within_15pct};
use crate::report::vocab::Metric;
use crate::study::Results;

const JOB: &str = "dss-seq-read";
const FC: &str = "FC 4Gb (block)";
const NFS: &str = "nfs3";
const ISCSI: &str = "iscsi";

/// Every finding of study 003.
pub fn findings(r: &Results) -> Vec<Check> {
    let v = View::of(r, &[]);
    // A lab run scaled 1:k ran its links and FC caps k times slower: its
    // Gb/s are shown k times larger, as the study's hardware would carry.
    let k = r.runs.first().map_or(1, |lr| lr.scale.max(1)) as f64;
    let scaled = if k > 1.0 {
        format!(" (measured on links scaled 1:{k:.0}, shown x{k:.0})")
    } else {
        String::new()
    };
    let gb = |t, m| v.value(JOB, None, t, m).map(|x| x * k);
    let avg = [NFS, ISCSI, FC].map(|t| gb(t, Metric::Gbits));
    let peak = [NFS, ISCSI, FC].map(|t| gb(t, Metric::PeakGbits));
    let bounds = v.bounds(JOB, &[NFS, ISCSI, FC]);
    let three = |x: [Option<f64>; 3]| {
        x.map(|v| v.map_or_else(|| "–".into(), |v| format!("{v:.2}")))
            .join(" / ")
    };
    let all_2x = |x: [Option<f64>; 3], p: [f64; 3]| {
        x.iter()
            .zip(p)
            .all(|(x, p)| x.is_some_and(|x| within_2x(x, p)))
    };
    let rel = |t: usize| match (avg[t], avg[2]) {
        (Some(a), Some(b)) if b > 0.0 => Some(100.0 * a / b),
        _ => None,
    };
    let (rn, ri) = (rel(0), rel(1));
    let f1_abs = all_2x(avg, [7.74, 6.95, 3.22]);
    let f1_rel =
        rn.is_some_and(|x| within_15pct(x, 240.0)) && ri.is_some_and(|x| within_15pct(x, 216.0));
    let f2 = all_2x(peak, [8.95, 7.21, 3.36]);
    let f3 = rn.is_some_and(|x| x > 200.0) && ri.is_some_and(|x| x > 200.0);
    let machine = v.machine(JOB, &[NFS, ISCSI, FC]);
    let caveat = |ok: bool| {
        let m = if machine {
            "; on a saturated machine"
        } else {
            ""
        };
        if ok {
            format!("{bounds}{m}")
        } else {
            format!("differs: {bounds}{m}")
        }
    };
    let verdict = |ok: bool| {
        if ok {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        }
    };
    let rels = format!(
        "relative {} / {} / 100",
        rn.map_or("–".into(), |x| format!("{x:.0}")),
        ri.map_or("–".into(), |x| format!("{x:.0}"))
    );
    vec![
        Check {
            id: "F003-1",
            kind: Kind::Absolute,
            published: "Oracle DSS sequential reads, average Gb/s NFS 7.74, iSCSI 6.95 (10 GbE), FC 3.22 (4 Gb): 240 / 216 / 100",
            measured: format!("NFS / iSCSI / FC {} Gb/s{scaled}; {rels}", three(avg)),
            verdict: verdict(f1_abs && f1_rel),
            why: caveat(f1_abs && f1_rel),
        },
        Check {
            id: "F003-2",
            kind: Kind::Absolute,
            published: "peak Gb/s: 8.95 / 7.21 / 3.36",
            measured: format!("{} Gb/s{scaled}", three(peak)),
            verdict: verdict(f2),
            why: caveat(f2),
        },
        Check {
            id: "F003-3",
            kind: Kind::Relative,
            published: "10 GbE more than double FC's throughput",
            measured: rels,
            verdict: verdict(f3),
            why: caveat(f3),
        },
        cpu(&v),
    ]
}

/// Host CPU average 81% NFS, 99% iSCSI, 91% FC: iSCSI the dearest, NFS the
/// cheapest. storlab's: client + server CPU per MB moved.
fn cpu(v: &View) -> Check {
    let published = "host CPU average 81% / 99% / 91%, peak 85% / 100% / 98% (NFS / iSCSI / FC)";
    let per_mb = |t| {
        let per_io = v.value(JOB, None, t, Metric::BothCpuPerIo)?;
        let iops = v.value(JOB, None, t, Metric::Iops)?;
        let mb = v.value(JOB, None, t, Metric::MbS)?;
        (mb > 0.0).then(|| per_io * iops / mb)
    };
    let (Some(n), Some(i)) = (per_mb(NFS), per_mb(ISCSI)) else {
        return super::not_measured(
            "F003-4",
            Kind::HostCpu,
            published,
            "CPU figures for NFS and iSCSI",
        );
    };
    // Closer than 5% is a tie: run-to-run noise on this machine, no direction.
    let ok = i > 1.05 * n;
    Check {
        id: "F003-4",
        kind: Kind::HostCpu,
        published,
        measured: format!(
            "client + server CPU per MB (storlab's clients with ganesha or tgtd; the study's hosts ran ESX's initiators): NFS {n:.0} µs, iSCSI {i:.0} µs{}",
            per_mb(FC).map_or(String::new(), |f| format!(", FC (client only) {f:.0} µs"))
        ),
        verdict: if ok {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        },
        why: if ok {
            "the same direction between the protocols: iSCSI dearer than NFS per byte by more than 5% (FC's figure is the block path's client alone, so not compared)".into()
        } else {
            format!(
                "iSCSI is not dearer than NFS by more than 5% here (closer is a tie, which \
                 moves either way from run to run); {}",
                v.bounds(JOB, &[NFS, ISCSI])
            )
        },
    }
}
