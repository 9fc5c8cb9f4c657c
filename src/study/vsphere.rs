//! Study 000's presentation: for the shared datastore (4K and 8K, 75/25
//! random, 32..128 VMs) IOPS and mean latency of every protocol relative to
//! the baseline = 100 at each load point (the study's figures 1-4), host CPU
//! per I/O the same way, and the single-VM OLTP test (8K 60/40, 128 OIO) as
//! one group of relative bars (figures 5 and 6).

use super::figures::{Grid, fmt_rel};
use super::{Results, Section};
use crate::report::format::fmt_num;
use crate::report::relative::Comparison;
use crate::report::vocab::Metric;

/// Host CPU: the initiator's (storlab's process) CPU per I/O, as the study
/// compared the vSphere hosts' CPU (the servers' is in the measured tables).
const HOST_CPU: Metric = Metric::ClientCpuPerIo;

/// The study's sections.
pub fn render(r: &Results) -> Vec<Section> {
    // The study's bars side by side: its labs' targets have distinct names
    // (the protocols carry their link), so one table holds them all.
    let Some(c) = r.combined() else {
        return vec![super::nothing_measured()];
    };
    let mut out = Vec::new();
    for (job, size, figs) in [
        ("vsphere-shared-4k", "4K", (1, 2)),
        ("vsphere-shared-8k", "8K", (3, 4)),
    ] {
        if let Some(s) = shared(&c, job, size, figs) {
            out.push(s);
        }
    }
    if let Some(s) = oltp(&c) {
        out.push(s);
    }
    out
}

/// One shared-datastore workload: relative IOPS, latency and host CPU per
/// load point, then what was measured.
fn shared(c: &Comparison, job: &str, size: &str, figs: (u32, u32)) -> Option<Section> {
    let base = c.baseline_name();
    let iops = Grid::relative(c, job, Metric::Iops);
    if iops.is_empty() {
        return None;
    }
    let lat = Grid::relative(c, job, Metric::LatMean);
    let cpu = Grid::relative(c, job, HOST_CPU);
    let rel = format!("relative to {base} = 100");
    let measured = Grid::metrics(c, job, &[Metric::Iops, Metric::LatMean, HOST_CPU]);
    Some(Section {
        title: format!("Shared datastore, {size} 75/25 random, 2 OIO per VM ({job})"),
        note: format!(
            "Each protocol's figure {rel} at each load point, as the study's figures {} and {}; \
             latency and CPU: lower is better. Host CPU is the initiator's (storlab's) CPU per I/O.",
            figs.0, figs.1
        ),
        tables: vec![
            iops.table(&format!("Figure {}: IOPS {rel}", figs.0), "load", fmt_rel),
            lat.table(
                &format!("Figure {}: mean latency {rel}", figs.1),
                "load",
                fmt_rel,
            ),
            cpu.table(&format!("Host CPU per I/O {rel}"), "load", fmt_rel),
            measured.table("Measured", "load", fmt_num),
        ],
        charts: vec![
            iops.bars(
                &format!("{size}: IOPS {rel}"),
                "IOPS (relative)",
                "",
                Some(100.0),
            ),
            lat.bars(
                &format!("{size}: mean latency {rel}"),
                "mean latency (relative)",
                "",
                Some(100.0),
            ),
            cpu.bars(
                &format!("{size}: host CPU per I/O {rel}"),
                "host CPU per I/O (relative)",
                "",
                Some(100.0),
            ),
        ],
    })
}

/// The single-VM OLTP test: a group of relative bars per figure.
fn oltp(c: &Comparison) -> Option<Section> {
    let job = "vsphere-oltp-8k";
    let base = c.baseline_name();
    let figures = [
        ("IOPS", Metric::Iops),
        ("mean latency", Metric::LatMean),
        ("host CPU per I/O", HOST_CPU),
    ];
    let rel = Grid::figures(&figures, |m| Grid::relative(c, job, m));
    if rel.is_empty() {
        return None;
    }
    let measured = Grid::metrics(c, job, &[Metric::Iops, Metric::LatMean, HOST_CPU]);
    let title = format!("relative to {base} = 100");
    Some(Section {
        title: format!("Single VM, 8K 60/40 random OLTP, 128 OIO ({job})"),
        note: format!(
            "One VM of 4 workers over 2 disks, 128 I/Os in flight: each figure {title}, \
             as the study's figures 5 and 6."
        ),
        tables: vec![
            rel.table(&format!("Figures 5 and 6: OLTP {title}"), "figure", fmt_rel),
            measured.table("Measured", "load", fmt_num),
        ],
        charts: vec![rel.bars(
            &format!("OLTP {title}"),
            "relative to the baseline",
            "",
            Some(100.0),
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{results, run_of};
    use super::*;
    use crate::study::find;

    #[test]
    fn relative_tables_put_the_baseline_at_100_for_every_load_point() {
        let study = find("000").unwrap();
        // IOPS per target: local 1000 per VM, nfs3 900 per VM.
        let run = run_of(&[
            (
                "vsphere-shared-4k",
                &["32 VMs", "64 VMs"],
                &[("local", 1.0), ("nfs3", 0.9)],
            ),
            (
                "vsphere-oltp-8k",
                &["1 VM"],
                &[("local", 1.0), ("nfs3", 0.5)],
            ),
        ]);
        let r = results(study, vec![run]);
        let sections = render(&r);
        assert_eq!(sections.len(), 2, "4k and OLTP; no 8k measured");
        let fig1 = &sections[0].tables[0];
        assert!(
            fig1.title
                .starts_with("Figure 1: IOPS relative to local = 100")
        );
        assert_eq!(fig1.head, ["load", "local", "nfs3"]);
        assert_eq!(fig1.rows[0], ["32 VMs", "100", "90"]);
        assert_eq!(fig1.rows[1], ["64 VMs", "100", "90"]);
        // Latency is the inverse of the IOPS scale in the synthetic run.
        let fig2 = &sections[0].tables[1];
        assert_eq!(fig2.rows[0], ["32 VMs", "100", "111"]);
        let oltp = &sections[1].tables[0];
        assert_eq!(oltp.rows[0], ["IOPS", "100", "50"]);
        assert_eq!(oltp.rows[1], ["mean latency", "100", "200"]);
        assert_eq!(sections[0].charts.len(), 3);
        let text = super::super::text(&r, &sections);
        assert!(text.contains("study 000"), "{text}");
        assert!(text.contains("Figure 2: mean latency relative to local = 100"));
    }
}
