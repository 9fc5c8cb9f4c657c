//! Study 004's presentation: how long a 3.05 GB file takes to copy to and
//! from the store, the ATTO curve (MB/s written and read at each transfer
//! size, 0.5 KiB to 8 MiB) and the summary of the 17 named Iometer workloads,
//! each protocol side by side.

use super::figures::{Grid, block_size, job_keys, mean, point};
use super::{Results, Section};
use crate::report::format::{TextTable, fmt_num};
use crate::report::relative::Comparison;
use crate::report::vocab::{Metric, format_size};
use crate::workload::Profile;

const COPY: &str = "file-copy";
const ATTO: &str = "atto-sweep";
const IOMETER: &str = "iometer-17";

/// The study's file: 3.05 GB (binary), as the catalogue's full profile copies.
const STUDY_FILE: f64 = 3124.0 * 1048576.0;

/// The study's sections.
pub fn render(r: &Results) -> Vec<Section> {
    let Some(c) = r.comparison(0) else {
        return vec![super::nothing_measured()];
    };
    let out: Vec<Section> = [copy(&c, r.profile), atto(&c), iometer(&c)]
        .into_iter()
        .flatten()
        .collect();
    if out.is_empty() {
        return vec![super::nothing_measured()];
    }
    out
}

/// A duration as the study wrote it: "16m 35s", "49.0 s"; below 10 s to
/// the hundredth, below 0.1 s in ms (a quick profile's copy from RAM).
fn duration(s: f64) -> String {
    if s >= 59.95 {
        let whole = s.round() as u64;
        format!("{}m {:02}s", whole / 60, whole % 60)
    } else if s >= 9.995 {
        format!("{s:.1} s")
    } else if s >= 0.1 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

/// Whether a point reads (its first group reads more than it writes).
fn reads(c: &Comparison, k: usize, t: usize) -> Option<bool> {
    let p = point(c, k, t)?;
    Some(p.spec.groups.first()?.access.read_pct >= 50)
}

/// The copy to and from the store, per target: time and MB/s (and, on the
/// quick profile, the study's 3.05 GB at that rate).
fn copy(c: &Comparison, profile: Profile) -> Option<Section> {
    let keys = job_keys(c, COPY);
    let quick = profile == Profile::Quick;
    let mut head = vec!["target".to_string()];
    for dir in ["to the store", "from the store"] {
        head.extend([format!("copy {dir}"), "MB/s".into()]);
        if quick {
            head.push("3.05 GB at this rate".into());
        }
    }
    let mut rows = Vec::new();
    for t in 0..c.targets.len() {
        let mut row = vec![c.targets[t].clone()];
        for want_read in [false, true] {
            let k = keys.iter().find(|&&k| reads(c, k, t) == Some(want_read));
            let p = k.and_then(|&k| point(c, k, t));
            let mb_s = k.and_then(|&k| mean(c, Metric::MbS, k, t));
            row.push(p.map_or("–".into(), |p| duration(p.summary.seconds)));
            row.push(mb_s.map_or("–".into(), fmt_num));
            if quick {
                let est = mb_s.filter(|&v| v > 0.0).map(|v| STUDY_FILE / (v * 1e6));
                row.push(est.map_or("–".into(), duration));
            }
        }
        if row[1..].iter().any(|x| x != "–") {
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return None;
    }
    let bytes = keys
        .first()
        .and_then(|&k| (0..c.targets.len()).find_map(|t| point(c, k, t)))
        .map_or(0, |p| p.summary.total.bytes);
    Some(Section {
        title: format!("File copy to and from the store ({COPY})"),
        note: format!(
            "One stream of 1 MiB sequential writes (the copy to the store), then reads (the copy \
             back), {} each way{}.",
            format_size(bytes),
            if quick {
                "; the quick profile copies less, so the time the study's 3.05 GB would take at \
                 the same rate is beside it"
            } else {
                ""
            }
        ),
        tables: vec![TextTable {
            title: "Copy times".into(),
            head,
            rows,
            note: String::new(),
        }],
        charts: Vec::new(),
    })
}

/// The ATTO curve: MB/s written and read at each transfer size.
fn atto(c: &Comparison) -> Option<Section> {
    let keys = job_keys(c, ATTO);
    let mut sizes: Vec<u64> = Vec::new();
    for &k in &keys {
        if let Some(b) = (0..c.targets.len()).find_map(|t| point(c, k, t).map(block_size))
            && !sizes.contains(&b)
        {
            sizes.push(b);
        }
    }
    let targets: Vec<usize> = (0..c.targets.len())
        .filter(|&t| keys.iter().any(|&k| point(c, k, t).is_some()))
        .collect();
    if targets.is_empty() {
        return None;
    }
    // The point of target `t` at size `b` in one direction, and its MB/s.
    let key = |t: usize, b: u64, read: bool| {
        keys.iter().copied().find(|&k| {
            point(c, k, t).is_some_and(|p| block_size(p) == b) && reads(c, k, t) == Some(read)
        })
    };
    let at =
        |t: usize, b: u64, read: bool| key(t, b, read).and_then(|k| mean(c, Metric::MbS, k, t));
    let grid = |read: bool| Grid {
        rows: sizes.iter().map(|&b| format_size(b)).collect(),
        cols: targets.iter().map(|&t| c.targets[t].clone()).collect(),
        cells: sizes
            .iter()
            .map(|&b| targets.iter().map(|&t| at(t, b, read)).collect())
            .collect(),
        marks: sizes
            .iter()
            .map(|&b| {
                targets
                    .iter()
                    .map(|&t| key(t, b, read).is_some_and(|k| c.machine_bound(k, t)))
                    .collect()
            })
            .collect(),
    };
    let (write, read) = (grid(false), grid(true));
    let both = Grid {
        cols: targets
            .iter()
            .flat_map(|&t| ["write", "read"].map(|d| format!("{} {d}", c.targets[t])))
            .collect(),
        cells: write
            .cells
            .iter()
            .zip(&read.cells)
            .map(|(w, r)| w.iter().zip(r).flat_map(|(a, b)| [*a, *b]).collect())
            .collect(),
        marks: write
            .marks
            .iter()
            .zip(&read.marks)
            .map(|(w, r)| w.iter().zip(r).flat_map(|(a, b)| [*a, *b]).collect())
            .collect(),
        ..write.clone()
    };
    Some(Section {
        title: format!("ATTO transfer-size sweep ({ATTO})"),
        note: "Each transfer size written, then read, sequentially with 4 I/Os in flight and \
               direct I/O (ATTO's defaults): MB/s per size, as ATTO's chart."
            .into(),
        tables: vec![both.table("MB/s by transfer size", "size", fmt_num)],
        charts: vec![
            write.lines(
                "ATTO: write MB/s by transfer size",
                &sizes,
                "MB/s",
                Vec::new(),
            ),
            read.lines(
                "ATTO: read MB/s by transfer size",
                &sizes,
                "MB/s",
                Vec::new(),
            ),
        ],
    })
}

/// The 17 named Iometer workloads: IOPS, MB/s and mean latency per protocol.
fn iometer(c: &Comparison) -> Option<Section> {
    let iops = Grid::metric(c, IOMETER, Metric::Iops);
    if iops.is_empty() {
        return None;
    }
    let all = Grid::metrics(c, IOMETER, &[Metric::Iops, Metric::MbS, Metric::LatMean]);
    Some(Section {
        title: format!("The 17 Iometer workloads ({IOMETER})"),
        note: "NTFS (4K), Exchange (8K), SQL (64K), backup and restore (256K) workloads, one \
               after another: IOPS, MB/s and mean latency per protocol."
            .into(),
        tables: vec![all.table("Iometer summary", "workload", fmt_num)],
        charts: vec![iops.bars("Iometer: IOPS per workload", "IOPS", "IOPS", None)],
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{point as synth, results, run_with, with_bs};
    use super::*;
    use crate::study::find;

    /// A point of `label` on `target` at size `bs`, reading or writing.
    fn p(label: &str, target: &str, scale: f64, bs: u64, read: bool) -> crate::model::PointResult {
        let mut p = with_bs(synth(label, target, scale), bs);
        p.spec.groups[0].access.read_pct = if read { 100 } else { 0 };
        p
    }

    #[test]
    fn copy_atto_and_iometer_tables_side_by_side() {
        let mut pts = Vec::new();
        for (t, scale) in [("local", 1.0), ("nfs3", 0.5)] {
            pts.push((COPY, p("write", t, scale, 1 << 20, false)));
            pts.push((COPY, p("read", t, scale, 1 << 20, true)));
            for b in [512u64, 8 << 20] {
                for read in [false, true] {
                    let dir = if read { "read" } else { "write" };
                    pts.push((ATTO, p(&format!("bs={b} {dir}"), t, scale, b, read)));
                }
            }
            pts.push((IOMETER, p("ntfs-1", t, scale, 4096, true)));
        }
        let study = find("004").unwrap();
        let s = render(&results(study, vec![run_with(pts)]));
        assert_eq!(s.len(), 3);
        let copy = &s[0].tables[0];
        assert_eq!(copy.head.len(), 7, "{:?}", copy.head);
        // 8.192 MB/s: the study's 3124 MiB take 400 s = 6m 40s.
        assert_eq!(
            copy.rows[0],
            [
                "local", "1.00 s", "8.192", "6m 40s", "1.00 s", "8.192", "6m 40s"
            ]
        );
        assert_eq!(copy.rows[1][2], "4.096");
        let atto = &s[1].tables[0];
        assert_eq!(
            atto.head,
            [
                "size",
                "local write",
                "local read",
                "nfs3 write",
                "nfs3 read"
            ]
        );
        assert_eq!(atto.rows[0][0], "512 B");
        assert_eq!(atto.rows[1], ["8 MiB", "8.192", "8.192", "4.096", "4.096"]);
        assert_eq!(s[1].charts.len(), 2);
        let io = &s[2].tables[0];
        assert_eq!(io.rows[0][0], "ntfs-1");
        assert_eq!(io.head[1..4], ["local IOPS", "local MB/s", "local mean ms"]);
        assert_eq!(duration(995.0), "16m 35s");
        assert_eq!(duration(49.0), "49.0 s");
        assert_eq!(duration(0.0104), "10.4 ms");
        assert_eq!(duration(0.0104), "10.4 ms");
    }
}
