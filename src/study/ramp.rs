//! Study 001's presentation: eight VMs reading sequentially while the block
//! size grows, total MB/s per block size per protocol against the payload
//! rate of a 4 Gb and an 8 Gb FC link (the wire model's, src/linkmodel/),
//! which is where the study's FC runs converged (about 400 and 800 MB/s).

use super::figures::{Grid, block_size, point};
use super::{Results, Section};
use crate::linkmodel::Dir;
use crate::linkmodel::lab::fc_cap;
use crate::report::format::fmt_num;
use crate::report::vocab::{Metric, format_size};

const JOB: &str = "blocksize-ramp-read";

/// The FC links drawn as lines: (wire model name, label).
const LINES: [(&str, &str); 2] = [("4gfc", "4 Gb FC"), ("8gfc", "8 Gb FC")];

/// The study's sections.
pub fn render(r: &Results) -> Vec<Section> {
    let Some(c) = r.comparison(0) else {
        return vec![super::nothing_measured()];
    };
    let mut total = Grid::metric(&c, JOB, Metric::MbS);
    if total.is_empty() {
        return vec![super::nothing_measured()];
    }
    // Each row's block size and VM count, from the first target that ran it.
    let keys = super::figures::job_keys(&c, JOB);
    let shape: Vec<(u64, u64)> = keys
        .iter()
        .map(|&k| {
            (0..c.targets.len())
                .find_map(|t| point(&c, k, t))
                .map_or((0, 1), |p| (block_size(p), p.spec.total_vms().max(1)))
        })
        .collect();
    let sizes: Vec<u64> = shape.iter().map(|s| s.0).collect();
    total.rows = sizes.iter().map(|&b| format_size(b)).collect();
    let per_vm = Grid {
        cells: total
            .cells
            .iter()
            .zip(&shape)
            .map(|(row, s)| row.iter().map(|v| v.map(|v| v / s.1 as f64)).collect())
            .collect(),
        ..total.clone()
    };
    let lines: Vec<(String, Vec<f64>)> = LINES
        .iter()
        .map(|(link, label)| {
            let rates = sizes
                .iter()
                .map(|&b| fc_cap(link, b, Dir::Read).map_or(0.0, |r| r / 1e6))
                .collect();
            (format!("{label} line"), rates)
        })
        .collect();
    let mut with_lines = total.clone();
    for (name, rates) in &lines {
        with_lines.cols.push(name.clone());
        for (row, r) in with_lines.cells.iter_mut().zip(rates) {
            row.push(Some(*r));
        }
    }
    let chart_lines: Vec<(String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(name, rates)| {
            let pts = sizes
                .iter()
                .zip(rates)
                .map(|(&b, &r)| (b as f64 / 1024.0, r))
                .collect();
            (name.clone(), pts)
        })
        .collect();
    // The protocols alone beside the lines, as the baseline's scale can dwarf them.
    let base = c.baseline_name();
    let keep: Vec<usize> = (0..total.cols.len())
        .filter(|&i| total.cols[i] != base)
        .collect();
    let protocols = Grid {
        cols: keep.iter().map(|&i| total.cols[i].clone()).collect(),
        cells: total
            .cells
            .iter()
            .map(|row| keep.iter().map(|&i| row[i]).collect())
            .collect(),
        marks: (0..total.rows.len())
            .map(|r| keep.iter().map(|&i| total.marked(r, i)).collect())
            .collect(),
        ..total.clone()
    };
    let vms = shape.first().map_or(1, |s| s.1);
    vec![Section {
        title: format!("{vms} VMs reading, block size growing ({JOB})"),
        note: format!(
            "Total MB/s of {vms} VMs of sequential reads at each block size, per protocol, beside \
             the payload rate a 4 Gb and an 8 Gb FC link carry at that size (the wire model: \
             `storlab wire --protocol fc`). On FC the study's totals converged on those lines."
        ),
        tables: vec![
            with_lines.table("Total MB/s by block size", "block", fmt_num),
            per_vm.table("MB/s per VM", "block", fmt_num),
        ],
        charts: vec![
            total.lines(
                "Total MB/s by block size against the FC lines",
                &sizes,
                "MB/s",
                chart_lines.clone(),
            ),
            protocols.lines(
                &format!("The protocols alone (without {base}) against the FC lines"),
                &sizes,
                "MB/s",
                chart_lines,
            ),
        ],
    }]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{point, results, run_with, with_bs};
    use super::*;
    use crate::study::find;

    #[test]
    fn every_block_size_is_a_row_with_the_fc_lines_of_the_wire_model() {
        let sizes = [512u64, 65536, 1 << 20];
        let mut pts = Vec::new();
        for (t, scale) in [("local", 1.0), ("iscsi", 0.5)] {
            for &b in &sizes {
                pts.push((JOB, with_bs(point(&format!("bs={b}"), t, scale), b)));
            }
        }
        let study = find("001").unwrap();
        let r = results(study, vec![run_with(pts)]);
        let s = render(&r);
        let t = &s[0].tables[0];
        assert_eq!(
            t.head,
            ["block", "local", "iscsi", "4 Gb FC line", "8 Gb FC line"]
        );
        assert_eq!(t.rows[0][0], "512 B");
        assert_eq!(t.rows[2][0], "1 MiB");
        // 1000 IOPS of 8 KiB (the synthetic point's bytes) = 8.192 MB/s.
        assert_eq!(t.rows[0][1], "8.192");
        assert_eq!(t.rows[0][2], "4.096");
        let fc8 = fc_cap("8gfc", 1 << 20, Dir::Read).unwrap() / 1e6;
        assert_eq!(t.rows[2][4], fmt_num(fc8));
        assert!(
            (780.0..840.0).contains(&fc8),
            "8 Gb FC carries about 800 MB/s: {fc8}"
        );
        // One VM in the synthetic spec: per VM = total.
        assert_eq!(s[0].tables[1].rows[0][1], "8.192");
        assert!(s[0].charts[0].contains("8 Gb FC line"));
        assert!(s[0].charts[1].contains("without local") && !s[0].charts[1].contains(">local<"));
    }
}
