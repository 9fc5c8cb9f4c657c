//! Study 003's presentation: its table 2, a column per protocol: average and
//! peak throughput in Gb/s beside the host CPU's average and peak, for
//! Oracle-DSS-like parallel 1 MiB sequential reads from three hosts.

use super::figures::{Grid, fmt_rel};
use super::{Results, Section};
use crate::report::format::fmt_num;
use crate::report::relative::Comparison;
use crate::report::vocab::Metric;

const JOB: &str = "dss-seq-read";

/// Rows of figures of the one load point, each named.
fn rows(c: &Comparison, figures: &[(&str, Metric)]) -> Grid {
    Grid::figures(figures, |m| Grid::metric(c, JOB, m))
}

/// The study's sections.
pub fn render(r: &Results) -> Vec<Section> {
    let Some(c) = r.comparison(0) else {
        return vec![super::nothing_measured()];
    };
    let gbits = rows(
        &c,
        &[
            ("Avg throughput (Gb/s)", Metric::Gbits),
            ("Peak throughput (Gb/s)", Metric::PeakGbits),
        ],
    );
    if gbits.is_empty() {
        return vec![super::nothing_measured()];
    }
    let cpu = rows(
        &c,
        &[
            ("Host CPU utilization, avg (%)", Metric::HostBusy),
            ("Host CPU utilization, peak (%)", Metric::HostBusyPeak),
        ],
    );
    // Not in the study's table: what the storage server spent per MB it served.
    let server = rows(&c, &[("Server CPU per MB (µs)", Metric::ServerCpuPerMb)]);
    let mut table = Grid {
        rows: [&gbits, &cpu, &server].map(|g| g.rows.clone()).concat(),
        cells: [&gbits, &cpu, &server].map(|g| g.cells.clone()).concat(),
        marks: [&gbits, &cpu, &server].map(|g| g.marks.clone()).concat(),
        ..gbits.clone()
    }
    .table(
        "Table 2: throughput and host CPU utilization",
        "metric",
        fmt_num,
    );
    let base = c.baseline_name();
    let rel = Grid::relative(&c, JOB, Metric::Gbits);
    if let Some(row) = rel.cells.first() {
        let mut cells = vec![format!("Avg throughput relative to {base} = 100")];
        cells.extend(row.iter().map(|v| v.map_or_else(|| "–".into(), fmt_rel)));
        table.rows.push(cells);
    }
    table.note = "peak: the best 1 s interval; host CPU: the whole lab machine (client and \
                  servers), busy share of every core; server CPU: the target's server processes \
                  over the whole point"
        .into();
    vec![Section {
        title: format!("Oracle DSS-like parallel sequential reads ({JOB})"),
        note: "Three hosts of four 1 MiB sequential read streams each, as much I/O as the \
               path takes; a column per protocol, as the study's table 2."
            .into(),
        tables: vec![table],
        charts: vec![
            gbits.bars("Throughput, average and peak", "Gb/s", "Gb/s", None),
            cpu.bars("Host CPU, average and peak", "host CPU busy (%)", "%", None),
        ],
    }]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{results, run_of};
    use super::*;
    use crate::study::find;

    #[test]
    fn table_2_has_a_column_per_protocol_and_a_row_per_figure() {
        let study = find("003").unwrap();
        let run = run_of(&[(
            JOB,
            &["3 VMs"],
            &[("local", 1.0), ("nfs3", 2.0), ("iscsi", 1.5)],
        )]);
        let s = render(&results(study, vec![run]));
        let t = &s[0].tables[0];
        assert_eq!(t.head, ["metric", "local", "nfs3", "iscsi"]);
        // 1000 IOPS of 8 KiB = 0.065536 Gb/s; peak 1.2 times that.
        assert_eq!(
            t.rows[0],
            ["Avg throughput (Gb/s)", "0.066", "0.131", "0.098"]
        );
        assert_eq!(t.rows[1][1], "0.079");
        assert_eq!(
            t.rows[2],
            ["Host CPU utilization, avg (%)", "50.00", "50.00", "50.00"]
        );
        assert_eq!(t.rows[3][2], "60.00");
        // The synthetic run records no server CPU.
        assert_eq!(t.rows[4], ["Server CPU per MB (µs)", "–", "–", "–"]);
        assert_eq!(
            t.rows[5],
            [
                "Avg throughput relative to local = 100",
                "100",
                "200",
                "150"
            ]
        );
        assert_eq!(s[0].charts.len(), 2);
    }
}
