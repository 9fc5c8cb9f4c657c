//! `storlab study`: the list of the five studies, bad input refused before
//! anything runs, and the quickest study (003, Oracle DSS) end to end on its
//! own lab: the text table, the run document, the lab taken down, and the
//! HTML report drawn by headless Chromium. The end-to-end test needs root and
//! ./setup.sh's packages (the lab's servers and chromium).

mod support;

use storlab::model::RunRecord;
use support::{TempDir, storlab, text};

#[test]
fn study_list_lists_the_five_studies() {
    let o = storlab().args(["study", "list"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for (number, name) in [
        ("000", "vsphere-fc-fcoe-iscsi-nfs"),
        ("001", "fc-8gb-vmware-ramp"),
        ("002", "zfs-nfs-iscsi-vmware"),
        ("003", "oracle-dss-10gbe-fc"),
        ("004", "freenas-nfs-iscsi"),
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(number) && l.contains(name)),
            "{number} {name} missing:\n{out}"
        );
    }
    // `storlab study` alone lists them too, the same text.
    let bare = storlab().arg("study").output().unwrap();
    assert!(bare.status.success(), "{}", text(&bare));
    assert_eq!(String::from_utf8_lossy(&bare.stdout), out);
}

#[test]
fn bad_study_input_is_one_line_naming_it_and_nothing_runs() {
    let dir = TempDir::new("study", "bad");
    for (args, want) in [
        (vec!["nope"], "unknown study \"nope\""),
        (
            vec!["003", "--targets", "nfs5"],
            "invalid --targets \"nfs5\"",
        ),
        (
            vec!["003", "--baseline", "fc99"],
            "invalid --baseline \"fc99\"",
        ),
        (vec!["003", "--media", "tape"], "invalid --media \"tape\""),
        (vec!["003", "--media", "ram,ram"], "ram is named twice"),
        // The full profile's VM disks need terabytes: refused before the lab.
        (
            vec!["000", "--profile", "full"],
            "but the store is 1 GiB: give the lab a store that large with --size",
        ),
        // The quick shared-datastore test's 128 VMs x 2 x 4 MiB do not fit
        // a 64 MiB store.
        (
            vec!["000", "--size", "64m"],
            "at load point \"128 VMs\" needs 1 GiB of the lab's store",
        ),
    ] {
        let o = storlab()
            .arg("study")
            .args(&args)
            .args(["--no-db", "--out"])
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!dir.join("out").exists(), "{args:?} created the output");
    }
}

/// The figures of the text table's row `name`: its cells after the name
/// (cells are set apart by two spaces or more; a cell may hold one).
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{out}"));
    line.trim_start()[name.len()..]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_dss_study_runs_on_its_own_lab_and_its_report_renders_in_chromium() {
    support::assert_root("the study's lab needs root");
    support::chromium::binary();
    let dir = TempDir::new("study", "dss");
    let out_dir = dir.join("report");
    let mut cmd = storlab();
    cmd.args([
        "study",
        "oracle-dss-10gbe-fc",
        "--no-db",
        "-q",
        "--size",
        "1g",
        "--media",
        "ram",
    ])
    .args(support::lab::free_port_args())
    .arg("--out")
    .arg(&out_dir);
    // The lab comes down and its state goes with it.
    let o = support::lab::run_with_temporary_lab(cmd, "study0");

    // The study's table 2: a column per protocol, every figure measured.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Table 2: throughput and host CPU utilization"));
    assert_eq!(row(&stdout, "metric"), ["FC 4Gb (block)", "nfs3", "iscsi"]);
    for name in ["Avg throughput (Gb/s)", "Peak throughput (Gb/s)"] {
        let cells = row(&stdout, name);
        assert_eq!(cells.len(), 3, "{name}: {cells:?}");
        for c in cells {
            let v: f64 = c.parse().unwrap_or_else(|_| panic!("{name}: {c:?}"));
            assert!(v > 0.0, "{name}: {v}");
        }
    }
    let avg: Vec<f64> = row(&stdout, "Avg throughput (Gb/s)")
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    let peak: Vec<f64> = row(&stdout, "Peak throughput (Gb/s)")
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    for (a, p) in avg.iter().zip(&peak) {
        assert!(p >= a, "a peak interval below the average: {p} < {a}");
    }
    assert_eq!(
        row(&stdout, "Avg throughput relative to FC 4Gb (block) = 100")[0],
        "100"
    );
    let saved = std::fs::read_to_string(out_dir.join("report.txt")).unwrap();
    assert_eq!(saved, stdout, "report.txt is what was printed");

    // The run document: one complete compare run, a point per target.
    let json = std::fs::read_to_string(out_dir.join("run-10gbe.json")).unwrap();
    let run = RunRecord::from_json(&json, "run-10gbe.json").unwrap();
    assert!(run.complete && run.error.is_none());
    let points: Vec<_> = run.jobs.iter().flat_map(|j| &j.points).collect();
    assert_eq!(points.len(), 3);
    assert!(points.iter().all(|p| p.summary.total.ios > 0));
    assert_eq!(run.compare.unwrap().baseline, "FC 4Gb (block)");
    // Every point names its bound; the lab ran its link scaled 1:4.
    assert!(
        points.iter().all(|p| p.bound.is_some()),
        "a point without a bound"
    );
    let net = run.environment.network.as_ref().unwrap();
    assert_eq!(net.link.as_deref(), Some("10gbe/4"));
    assert_eq!(net.link_rate_bps, Some(2_500_000_000));

    // The findings: each of the study's four beside storlab's, with a verdict.
    assert!(
        stdout.contains("The study's findings beside storlab's ("),
        "{stdout}"
    );
    for id in ["F003-1", "F003-2", "F003-3", "F003-4"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(id))
            .unwrap_or_else(|| panic!("no {id} in:\n{stdout}"));
        assert!(
            line.contains("reproduced") || line.contains("differs"),
            "{line}"
        );
    }
    assert!(stdout.contains("scaled 1:4, shown x4"), "{stdout}");
    // findings.json holds the same checks, one verdict per finding, and a
    // difference names why (the bound or what is not emulated).
    let f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("findings.json")).unwrap())
            .unwrap();
    assert_eq!(f["study"], "003");
    let checks = f["findings"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["F003-1", "F003-2", "F003-3", "F003-4"]);
    for c in checks {
        let v = c["verdict"].as_str().unwrap();
        assert!(v == "reproduced" || v == "differs", "{c}");
        assert!(
            v == "reproduced" || !c["why"].as_str().unwrap().is_empty(),
            "a difference without its why: {c}"
        );
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(c["id"].as_str().unwrap()))
            .unwrap();
        assert!(line.contains(v), "{line} against {c}");
    }

    // The HTML report draws in Chromium, its charts and table in the DOM.
    let dom = support::chromium::render(&out_dir.join("report.html"), dir.path());
    assert!(dom.matches("<svg").count() >= 2, "charts missing");
    assert!(dom.contains("Table 2: throughput and host CPU utilization"));
    assert!(dom.contains("Study 003"));
}
