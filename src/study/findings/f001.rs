//! Study 001's findings: one VM and eight VMs on 8 Gb FC against a RAM-SSD
//! array, and the 4 Gb link's ceiling beside it.

use super::{Check, Kind, Verdict, View, within_2x};
use crate::report::vocab::Metric;
use crate::study::Results;

const FC8: &str = "FC 8Gb (block)";
const FC4: &str = "FC 4Gb (block)";

/// Every finding of study 001.
pub fn findings(r: &Results) -> Vec<Check> {
    let v = View::of(r, &[]);
    vec![one_vm(&v), converge(&v), eight_k(&v), duplex(&v)]
}

/// An absolute check of one figure against its published value.
fn absolute(
    v: &View,
    id: &'static str,
    published: &'static str,
    (job, labels): (&str, Vec<String>),
    figures: &[(&str, Option<f64>, f64)],
) -> Check {
    let measured: Vec<String> = figures
        .iter()
        .map(|(what, x, p)| match x {
            Some(x) => format!("{what} {x:.0} (study {p:.0})"),
            None => format!("{what} not measured"),
        })
        .collect();
    let ok = !figures.is_empty()
        && figures
            .iter()
            .all(|(_, x, p)| x.is_some_and(|x| within_2x(x, *p)));
    Check {
        id,
        kind: Kind::Absolute,
        published,
        measured: measured.join("; "),
        verdict: if ok {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        },
        why: {
            let bounds = v.bounds_at(job, &labels, &[FC8, FC4]);
            match (ok, v.machine_at(job, &labels, &[FC8])) {
                (true, true) => format!("within 2x, on a saturated machine ({bounds})"),
                (true, false) => format!("within 2x; {bounds}"),
                (false, _) => bounds,
            }
        },
    }
}

fn one_vm(v: &View) -> Check {
    let job = "db-8k-read";
    let fc8 = v.value(job, None, FC8, Metric::Iops);
    let mut c = absolute(
        v,
        "F001-1",
        "one VM, 8 KB reads from the RAM-SSD array: more than 60,000 IOPS (25% above a 4 Gb link)",
        (job, v.labels(job)),
        &[("IOPS on 8 Gb FC", fc8, 60_000.0)],
    );
    if let (Some(a), Some(b)) = (fc8, v.value(job, None, FC4, Metric::Iops)) {
        c.measured.push_str(&format!(
            "; 4 Gb FC {b:.0}, 8 Gb at {:.0}% of it",
            100.0 * a / b
        ));
    }
    c
}

/// The 8-VM ramp's largest blocks: 800 MB/s on 8 Gb FC, 400 on 4 Gb.
fn converge(v: &View) -> Check {
    let job = "blocksize-ramp-read";
    let large: Vec<String> = v
        .labels(job)
        .into_iter()
        .filter(|l| {
            v.points(job, Some(l), FC8).first().is_some_and(|p| {
                p.spec
                    .groups
                    .iter()
                    .all(|g| g.access.bs.min() >= 256 * 1024)
            })
        })
        .collect();
    let big = |t: &str| {
        large
            .iter()
            .filter_map(|l| v.value(job, Some(l), t, Metric::MbS))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    absolute(
        v,
        "F001-2",
        "8 VMs, growing block sizes: the total converges on about 800 MB/s on 8 Gb FC, 400 MB/s on 4 Gb",
        (job, large.clone()),
        &[
            ("MB/s on 8 Gb FC from 256 KiB", big(FC8), 800.0),
            ("on 4 Gb FC", big(FC4), 400.0),
        ],
    )
}

fn eight_k(v: &View) -> Check {
    let job = "blocksize-ramp-read";
    let label = v.label_where(job, |s| {
        s.groups
            .iter()
            .all(|g| g.access.bs.min() == 8192 && g.access.bs.max() == 8192)
    });
    let x = label
        .as_deref()
        .and_then(|l| v.value(job, Some(l), FC8, Metric::MbS));
    absolute(
        v,
        "F001-3",
        "8 KB reads over 8 VMs on 8 Gb FC: more than 400 MB/s",
        (job, label.clone().into_iter().collect()),
        &[("MB/s at 8 KiB on 8 Gb FC", x, 400.0)],
    )
}

fn duplex(v: &View) -> Check {
    let job = "seq-32k-duplex";
    let reads = v.value(job, Some("reads"), FC8, Metric::MbS);
    let both = v.value(job, Some("reads+writes"), FC8, Metric::MbS);
    absolute(
        v,
        "F001-4",
        "32 KB reads alone over 800 MB/s; with writes ~700 MB/s written and 600 read, about 1.3 GB/s full duplex",
        (job, v.labels(job)),
        &[
            ("reads alone MB/s", reads, 800.0),
            ("reads + writes MB/s", both, 1300.0),
        ],
    )
}
